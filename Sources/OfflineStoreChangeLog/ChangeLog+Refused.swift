import Foundation
import OfflineStoreSQLite

/// An incoming change (from another site) that this store refused to apply, as the metadatabase
/// keeps it (`ostore_refused`), with the reason.
///
/// ```swift
/// for refused in try log.refusedIncomingChanges(db) { print(refused.refusedAt, refused.reason) }
/// ```
public struct RefusedIncomingChangeRecord: Sendable, Hashable {
    public var refusedAt: Date
    public var reason: String
    /// The change as it arrived.
    public var change: IncomingChange

    init(refusedAt: Date, reason: String, change: IncomingChange) {
        self.refusedAt = refusedAt
        self.reason = reason
        self.change = change
    }
}

extension ChangeLog {
    /// Keeps the changes ``apply(_:to:)`` refused, in its transaction, and logs each: a pulled change
    /// is never dropped silently.
    func recordRefusedIncoming(_ refused: [RefusedIncomingChange], _ db: Database) throws {
        guard !refused.isEmpty else { return }
        let encoder = JSONEncoder()
        let now = Date()
        for refusal in refused {
            let json = String(decoding: try encoder.encode(refusal.change), as: UTF8.self)
            try db.execute(
                """
                INSERT INTO ostore_meta.ostore_refused (refusedAt, tableName, reason, change)
                VALUES (\(now), \(refusal.change.table), \(refusal.reason), \(json))
                """)
            db.configuration.logHandler.log(
                .warning, "refused a change from another site; it is kept in the metadatabase (ostore_refused)",
                metadata: [
                    "path": db.path, "table": refusal.change.table, "operation": refusal.change.operation.rawValue,
                    "reason": refusal.reason,
                ])
        }
    }

    /// Every change from another site this store refused to apply, oldest first.
    ///
    /// ```swift
    /// for refused in try log.refusedIncomingChanges(db) { print(refused.change.table, refused.reason) }
    /// ```
    public func refusedIncomingChanges(_ db: Database) throws -> [RefusedIncomingChangeRecord] {
        try db.fetchAll("SELECT refusedAt, reason, change FROM ostore_meta.ostore_refused ORDER BY id").map { row in
            let json: String = try row.decode(at: 2)
            return RefusedIncomingChangeRecord(
                refusedAt: try row.decode(at: 0), reason: try row.decode(at: 1),
                change: try JSONDecoder().decode(IncomingChange.self, from: Data(json.utf8)))
        }
    }

    /// How many changes from other sites this store refused (``refusedIncomingChanges(_:)``).
    package func refusedIncomingCount(_ db: Database) throws -> Int {
        try db.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_refused") ?? 0
    }

    /// How many changes from other sites wait in the stash for a schema that knows their tables or
    /// columns, or for a parent row.
    public func stashedCount(_ db: Database) throws -> Int {
        try db.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_stash") ?? 0
    }
}

extension ChangeLog {
    /// The name the syncing guide used for ``refusedIncomingChanges(_:)``.
    @available(*, deprecated, renamed: "refusedIncomingChanges(_:)")
    public func refusedChanges(_ db: Database) throws -> [RefusedIncomingChangeRecord] {
        try refusedIncomingChanges(db)
    }
}
