import Foundation

/// A unique directory under the system temporary directory for the verifier's databases, removed
/// with everything in it when released.
final class ScratchDirectory {
    let url: URL
    private var counter = 0

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("OfflineStoreTesting-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    /// A path no other database in the directory uses.
    func newDatabasePath(_ label: String) -> String {
        counter += 1
        let safe = String(label.map { $0.isLetter || $0.isNumber ? $0 : "-" }.prefix(40))
        return url.appendingPathComponent("\(counter)-\(safe).sqlite").path
    }

    /// Copies a closed database file (no `-wal` or `-shm` left beside it) to a new path.
    func copyDatabase(at source: String, label: String) throws -> String {
        let destination = newDatabasePath(label)
        try FileManager.default.copyItem(atPath: source, toPath: destination)
        return destination
    }

    /// Deletes a database file and its WAL companions.
    static func deleteDatabase(at path: String) throws {
        for suffix in ["", "-wal", "-shm", "-journal"] where FileManager.default.fileExists(atPath: path + suffix) {
            try FileManager.default.removeItem(atPath: path + suffix)
        }
    }
}
