import Foundation
import TestSupport

/// One sync of a device's files in a child process (`ostore-crash-syncer`), which kills itself
/// with SIGKILL at its `killAt`th write on the store's connection unless the sync ends first.
/// Started, it runs beside whatever the test does next until ``finish()``.
final class ChildSync {
    enum Ending {
        /// Killed at the chosen write.
        case killed
        /// Ended by itself after `writes` writes, having synced or given up (`synced` false).
        case ended(writes: Int, synced: Bool)
    }

    private let database: String
    private let process = Process()
    private let output = Pipe()
    private let errors = Pipe()

    /// Starts the child on the store at `database`.
    init(
        database: String, server: URL, dataset: String, token: String, batchSize: Int, pageSize: Int, killAt: Int
    ) throws {
        self.database = database
        process.executableURL = try builtProduct("ostore-crash-syncer")
        process.arguments = [
            "--db", database, "--server", server.absoluteString, "--dataset", dataset, "--batch", "\(batchSize)",
            "--page", "\(pageSize)", "--kill-at", "\(killAt)",
        ]
        process.environment = ["OSTORE_TOKEN": token]
        process.standardOutput = output
        process.standardError = errors
        try process.run()
    }

    /// Waits for the child to end, and says how.
    func finish() throws -> Ending {
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let complaint = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        if process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL { return .killed }
        let words = printed.split(whereSeparator: { $0 == " " || $0 == ":" || $0 == "\n" })
        guard process.terminationReason == .exit, [0, 3].contains(process.terminationStatus), words.count >= 2,
            let writes = Int(words[1])
        else {
            throw ConvergenceFailure(
                "the child sync of \(database) ended with status \(process.terminationStatus): \(printed)\(complaint)")
        }
        return .ended(writes: writes, synced: process.terminationStatus == 0)
    }
}
