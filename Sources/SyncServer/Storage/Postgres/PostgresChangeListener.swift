import Foundation
import Synchronization

/// Listens, on a connection of its own, for the pushes other servers sharing the database store
/// (`LISTEN` on ``channel``; each push sends `NOTIFY` when it commits), and tells `changed` the
/// dataset of each. When the connection is lost it connects again, backing off up to 5 s, and then
/// tells `changed` nil: notifications sent meanwhile are gone, so every dataset may have changed.
/// Stops when released (within half a second).
///
/// ```swift
/// let listener = PostgresChangeListener(url: url, instance: instance) { dataset in wake(dataset) }
/// ```
///
/// See <https://www.postgresql.org/docs/15/sql-notify.html> and
/// <https://www.postgresql.org/docs/15/libpq-notify.html>.
final class PostgresChangeListener: ChangeObservation {
    /// The channel every server's pushes notify.
    static let channel = "ostore_changes"

    /// A notification's payload: the sending process, then the dataset (dataset names hold no
    /// space).
    static func payload(instance: String, dataset: String) -> String { "\(instance) \(dataset)" }

    /// What the listening thread holds: not the listener, whose release stops it.
    private final class Run: Sendable {
        let url: String
        let instance: String
        let changed: @Sendable (String?) -> Void
        let isStopped = Atomic<Bool>(false)

        init(url: String, instance: String, changed: @escaping @Sendable (String?) -> Void) {
            self.url = url
            self.instance = instance
            self.changed = changed
        }
    }

    private let run: Run

    init(url: String, instance: String, changed: @escaping @Sendable (String?) -> Void) {
        let run = Run(url: url, instance: instance, changed: changed)
        self.run = run
        let thread = Thread { Self.listen(run) }
        thread.name = "ostore-pg-listen"
        thread.start()
    }

    deinit {
        run.isStopped.store(true, ordering: .relaxed)
    }

    private static func listen(_ run: Run) {
        var backoff = Duration.milliseconds(250)
        let ownPrefix = run.instance + " "
        while !run.isStopped.load(ordering: .relaxed) {
            do {
                let connection = try PostgresConnection(url: run.url)
                try connection.executeScript("LISTEN \(channel)", name: "listen")
                // Whatever was stored while nobody listened.
                run.changed(nil)
                backoff = .milliseconds(250)
                while !run.isStopped.load(ordering: .relaxed) {
                    for notification in try connection.notifications(waitingUpTo: .milliseconds(500)) {
                        guard notification.channel == channel, !notification.payload.hasPrefix(ownPrefix),
                            let space = notification.payload.lastIndex(of: " ")
                        else { continue }
                        run.changed(String(notification.payload[notification.payload.index(after: space)...]))
                    }
                }
            } catch {
                let until = ContinuousClock.now + backoff
                while !run.isStopped.load(ordering: .relaxed), ContinuousClock.now < until {
                    Thread.sleep(forTimeInterval: 0.1)
                }
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }
}
