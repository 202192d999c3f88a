import Foundation
import OfflineStoreSQLite

/// A change from another site that this store refused to apply, kept with the reason.
public struct RefusedChangeRecord: Sendable, Hashable {
    public var refusedAt: Date
    public var reason: String
    /// The change as it arrived.
    public var change: RemoteChange

    public init(refusedAt: Date, reason: String, change: RemoteChange) {
        self.refusedAt = refusedAt
        self.reason = reason
        self.change = change
    }
}

extension ChangeLog {
    /// Keeps the changes ``apply(_:to:)`` refused, in its transaction, and logs each: a pulled change
    /// is never dropped silently.
    func recordRefused(_ refused: [RejectedChange], _ db: Database) throws {
        guard !refused.isEmpty else { return }
        let encoder = JSONEncoder()
        let now = Date()
        for rejected in refused {
            let json = String(decoding: try encoder.encode(rejected.change), as: UTF8.self)
            try db.execute(
                """
                INSERT INTO ostore_meta.ostore_refused (refusedAt, tableName, reason, change)
                VALUES (\(now), \(rejected.change.table), \(rejected.reason), \(json))
                """)
            db.configuration.logHandler.log(
                .warning, "refused a change from another site; it is kept in the metadatabase (ostore_refused)",
                metadata: [
                    "path": db.path, "table": rejected.change.table, "operation": rejected.change.operation.rawValue,
                    "reason": rejected.reason,
                ])
        }
    }

    /// Every change from another site this store refused to apply, oldest first.
    ///
    /// ```swift
    /// for refused in try log.refusedChanges(db) { print(refused.change.table, refused.reason) }
    /// ```
    public func refusedChanges(_ db: Database) throws -> [RefusedChangeRecord] {
        try db.fetchAll("SELECT refusedAt, reason, change FROM ostore_meta.ostore_refused ORDER BY id").map { row in
            let json: String = try row.decode(at: 2)
            return RefusedChangeRecord(
                refusedAt: try row.decode(at: 0), reason: try row.decode(at: 1),
                change: try JSONDecoder().decode(RemoteChange.self, from: Data(json.utf8)))
        }
    }

    /// How many changes from other sites this store refused (``refusedChanges(_:)``).
    public func refusedCount(_ db: Database) throws -> Int {
        try db.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_refused") ?? 0
    }

    /// How many changes from other sites wait in the stash for a schema that knows their tables or
    /// columns, or for a parent row.
    public func stashedCount(_ db: Database) throws -> Int {
        try db.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_stash") ?? 0
    }
}
