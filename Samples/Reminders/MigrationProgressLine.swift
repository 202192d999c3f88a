import Foundation
import OfflineStore
import Synchronization

/// A `migrating 1.1.0 → 2.0.0 (custom): rebuild reminders 50000/100000 (3s)` line on stderr,
/// rewritten in place with `\r`, for a stage that has run more than a second: quick upgrades
/// stay silent, slow ones show they are alive. Only for a terminal (see ``StandardError``).
///
/// A ticker thread redraws it too, because a long single statement (the copy of a table
/// rebuild) reports nothing until it ends.
final class MigrationProgressLine: Sendable {
    private struct State {
        var stage: String?
        var stageStarted = ContinuousClock.now
        /// The latest row progress of the stage: `rebuild reminders 50000/100000`.
        var rows: String?
        /// What the terminal shows now, so the ticker only writes when the text changes.
        var shownText: String?
        var isFinished = false
    }

    private static let quietPeriod = Duration.seconds(1)
    private static let tick = 0.25
    /// Carriage return, then "erase to end of line", so a shorter line leaves no tail behind.
    private static let eraseLine = "\r\u{1B}[K"

    private let state = Mutex(State())

    init() {
        Thread.detachNewThread { [self] in
            while !state.withLock({ state in
                if !state.isFinished { Self.drawIfDue(&state) }
                return state.isFinished
            }) {
                Thread.sleep(forTimeInterval: Self.tick)
            }
        }
    }

    /// The migrator's observer (``Migrator/Options/progress``).
    func report(_ progress: MigrationProgress) {
        state.withLock { state in
            switch progress {
            case .stageStarted(let stage):
                state.stage = stage
                state.stageStarted = .now
                state.rows = nil
            case .rows(let stage, let operation, let done, let total):
                state.stage = stage
                state.rows = "\(operation) \(done)/\(total)"
            case .stageFinished:
                state.stage = nil
                Self.clear(&state)
            }
            Self.drawIfDue(&state)
        }
    }

    /// Clears the line and stops the ticker; the terminal is left as it was.
    func finish() {
        state.withLock { state in
            state.isFinished = true
            Self.clear(&state)
        }
    }

    private static func drawIfDue(_ state: inout State) {
        guard let stage = state.stage else { return }
        let elapsed = state.stageStarted.duration(to: .now)
        guard elapsed > quietPeriod else { return }
        let rows = state.rows.map { ": \($0)" } ?? ""
        let text = "migrating \(stage)\(rows) (\(elapsed.components.seconds)s)"
        guard text != state.shownText else { return }
        StandardError.write(eraseLine + text)
        state.shownText = text
    }

    private static func clear(_ state: inout State) {
        guard state.shownText != nil else { return }
        StandardError.write(eraseLine)
        state.shownText = nil
    }
}
