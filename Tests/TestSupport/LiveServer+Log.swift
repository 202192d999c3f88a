import Foundation
import OfflineStore
import SyncProtocol
import SyncServer

extension LiveServer {
    /// Every change the server's log holds for `dataset`, as the pushing site and its sequence
    /// number, in log order: a change stored twice shows as the same pair twice. Read from the
    /// server's file, which WAL lets another connection read while the server runs.
    public func loggedChanges(dataset: String) throws -> [(site: String, seq: Int64)] {
        try storedChanges(dataset: dataset).map { change in ("\(change.site)", change.seq) }
    }

    /// Every change the server's log holds for `dataset`, whole, in log order (read as
    /// ``loggedChanges(dataset:)`` reads them).
    public func storedChanges(dataset: String) throws -> [Change] {
        let db = try Database(path: dataDirectory.appendingPathComponent(SQLiteSyncStorage.fileName).path)
        defer { try? db.close() }
        let bodies = try db.fetchAll(
            String.self,
            """
            SELECT body FROM server_log
            WHERE datasetID = (SELECT id FROM server_datasets WHERE name = \(dataset)) ORDER BY serial
            """)
        return try bodies.map { body in try JSONDecoder().decode(Change.self, from: Data(body.utf8)) }
    }

    /// The (site, seq) pairs the log holds more than once.
    public func changesStoredTwice(dataset: String) throws -> [String] {
        var seen = Set<String>()
        return try loggedChanges(dataset: dataset).compactMap { change in
            let identity = "\(change.site)#\(change.seq)"
            return seen.insert(identity).inserted ? nil : identity
        }
    }
}
