import Foundation
import OfflineStore

/// The files of the change-log workloads, in a temporary directory: a store is a database and
/// its metadatabase beside it, and the two always move together. Inputs are made once and
/// copied before every run (outside the clock), so every run of every side starts from the same
/// bytes.
struct ChangeLogStores {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("ostore-bench-changelog-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func removeAll() {
        try? FileManager.default.removeItem(at: directory)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Every file of the store at `path`: a stale `-wal` beside a new copy would be replayed into it.
    private static func files(of path: String) -> [String] {
        let meta = Metadatabase.path(forDatabaseAt: path)
        return [path, path + "-wal", path + "-shm", meta, meta + "-wal", meta + "-shm"]
    }

    /// Removes the store `name` and, when `source` is given, copies that store (its database and
    /// its metadatabase, when it has one) in its place. Returns its path. The copy is flushed to
    /// disk so the timed run that follows does not pay for the kernel writing it back.
    @discardableResult
    func replace(_ name: String, with source: String?) throws -> String {
        let destination = path(name)
        for file in Self.files(of: destination) where FileManager.default.fileExists(atPath: file) {
            try FileManager.default.removeItem(atPath: file)
        }
        if let source {
            try FileManager.default.copyItem(atPath: source, toPath: destination)
            let sourceMeta = Metadatabase.path(forDatabaseAt: source)
            if FileManager.default.fileExists(atPath: sourceMeta) {
                try FileManager.default.copyItem(
                    atPath: sourceMeta, toPath: Metadatabase.path(forDatabaseAt: destination))
            }
        }
        sync()
        return destination
    }

    /// The size of one file, in bytes.
    func size(of path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.size] as? NSNumber)?.intValue ?? 0
    }

    /// Checkpoints every attached file into its main file and truncates the WALs, then closes,
    /// so each store is its files alone and their sizes are what the data takes.
    static func finish(_ db: Database) throws {
        try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        try db.close()
    }
}
