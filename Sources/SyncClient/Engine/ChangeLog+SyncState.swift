import Foundation
import OfflineStore

/// What a sync engine remembers about one server and dataset between runs.
public struct SyncState: Sendable, Hashable {
    /// The server URL and dataset, as the engine names them.
    public var endpoint: String
    /// The pull cursor to resume from; nil before the first complete page.
    public var cursor: String?
    public var lastSyncAt: Date?
    /// The last sync's error, nil when it succeeded.
    public var lastError: String?
    public var protocolVersion: Int?
    public var datasetSchemaVersion: String?
    /// The highest `seq` this server acknowledged (0 before the first acknowledged push). A hello
    /// that reports less means the server lost pushes (``ChangeLog/requeuePushes(after:endpoint:_:)``).
    public var acknowledgedThrough: Int64 = 0
    /// Whether the download under way replaces what the store holds: it began after the server
    /// refused the pull cursor. Under scope rules (Protocol/README.md §17) its end removes the rows
    /// none of its pages gave, which the store may hold from before and which its user no longer
    /// reads; the rows of a dataset without rules are kept as they are.
    public var downloadReplacesRows = false

    public init(endpoint: String) { self.endpoint = endpoint }
}

/// An outgoing change (one of this device's, pushed) that the server refused, kept in the
/// metadatabase's `ostore_rejected` with the server's code and reason instead of being dropped.
///
/// ```swift
/// for refused in try log.refusedOutgoingChanges(db) { print(refused.code, refused.reason) }
/// ```
public struct RefusedOutgoingChangeRecord: Sendable, Hashable {
    public var refusedAt: Date
    /// The server's stable error code (`invalid_change`, …).
    public var code: String
    public var reason: String
    /// The change as it was pushed (the protocol's JSON).
    public var change: String

    public init(refusedAt: Date, code: String, reason: String, change: String) {
        self.refusedAt = refusedAt
        self.code = code
        self.reason = reason
        self.change = change
    }
}

extension ChangeLog {
    /// The sync state for `endpoint`, empty when it never synced.
    ///
    /// ```swift
    /// var state = try log.syncState(db, endpoint: "https://sync.example.com/family")
    /// state.cursor = page.cursor
    /// try log.save(state, db)
    /// ```
    public func syncState(_ db: Database, endpoint: String) throws -> SyncState {
        var state = SyncState(endpoint: endpoint)
        if let row = try db.fetchOne(
            """
            SELECT cursor, lastSyncAt, lastError, protocolVersion, datasetSchemaVersion, acknowledgedThrough,
                replacingDownload
            FROM ostore_meta.ostore_sync WHERE endpoint = \(endpoint)
            """)
        {
            state.cursor = try row.decode(at: 0)
            state.lastSyncAt = try row.decode(at: 1)
            state.lastError = try row.decode(at: 2)
            state.protocolVersion = try row.decode(at: 3)
            state.datasetSchemaVersion = try row.decode(at: 4)
            state.acknowledgedThrough = try row.decode(Int64?.self, at: 5) ?? 0
            state.downloadReplacesRows = try row.decode(Int64?.self, at: 6) == 1
        }
        return state
    }

    /// Saves `state`. `acknowledgedThrough` only grows here (another process syncing the same store
    /// may have saved a higher one); ``requeuePushes(after:endpoint:_:)`` is what lowers it.
    public func save(_ state: SyncState, _ db: Database) throws {
        try db.execute(
            """
            INSERT INTO ostore_meta.ostore_sync (endpoint, cursor, lastSyncAt, lastError, protocolVersion, datasetSchemaVersion,
                acknowledgedThrough, replacingDownload)
            VALUES (\(state.endpoint), \(state.cursor), \(state.lastSyncAt), \(state.lastError), \(state.protocolVersion),
                \(state.datasetSchemaVersion), \(state.acknowledgedThrough), \(state.downloadReplacesRows ? 1 : nil))
            ON CONFLICT (endpoint) DO UPDATE SET cursor = excluded.cursor, lastSyncAt = excluded.lastSyncAt,
                lastError = excluded.lastError, protocolVersion = excluded.protocolVersion,
                datasetSchemaVersion = excluded.datasetSchemaVersion, replacingDownload = excluded.replacingDownload,
                acknowledgedThrough = max(ifnull(acknowledgedThrough, 0), excluded.acknowledgedThrough)
            """)
    }

    /// After a server lost pushes it had acknowledged (restored from a backup): every local change
    /// after `sequence`, the highest `seq` the server still has, is queued again, and the endpoint's
    /// acknowledged mark comes down to it. The log still holds each such change unless a newer
    /// version from another site replaced it, or a delete from another site dropped the row's
    /// column entries; that version or delete wins over it anyway. Returns how many
    /// log entries are queued again.
    @discardableResult
    public func requeuePushes(after sequence: Int64, endpoint: String, _ db: Database) throws -> Int {
        try db.transaction(.immediate) { db in
            // The count reads the keyed log.
            try foldJournal(db)
            let pushed = try pushedSequence(db)
            try db.execute(
                """
                UPDATE ostore_meta.ostore_store SET pushedSeq = min(pushedSeq, \(max(sequence, 0))) WHERE id = 1
                """)
            try db.execute(
                """
                UPDATE ostore_meta.ostore_sync SET acknowledgedThrough = \(max(sequence, 0)) WHERE endpoint = \(endpoint)
                """)
            return try db.fetchValue(
                Int.self,
                """
                SELECT count(*) FROM ostore_meta.ostore_changes
                WHERE site = 0 AND seq > \(max(sequence, 0)) AND seq <= \(pushed)
                """) ?? 0
        }
    }

    /// Keeps an outgoing change the server refused, with its code and reason.
    ///
    /// ```swift
    /// try log.recordRefusedOutgoing(RefusedOutgoingChangeRecord(refusedAt: Date(), code: code, reason: reason, change: json), db)
    /// ```
    public func recordRefusedOutgoing(_ record: RefusedOutgoingChangeRecord, _ db: Database) throws {
        try db.execute(
            """
            INSERT INTO ostore_meta.ostore_rejected (rejectedAt, code, reason, change)
            VALUES (\(record.refusedAt), \(record.code), \(record.reason), \(record.change))
            """)
    }

    /// Every outgoing change the server refused, oldest first.
    ///
    /// ```swift
    /// for refused in try log.refusedOutgoingChanges(db) { print(refused.code, refused.reason) }
    /// ```
    public func refusedOutgoingChanges(_ db: Database) throws -> [RefusedOutgoingChangeRecord] {
        try db.fetchAll("SELECT rejectedAt, code, reason, change FROM ostore_meta.ostore_rejected ORDER BY id").map {
            row in
            RefusedOutgoingChangeRecord(
                refusedAt: try row.decode(at: 0), code: try row.decode(at: 1), reason: try row.decode(at: 2),
                change: try row.decode(at: 3))
        }
    }

    /// Forgets every pull cursor, so the next sync downloads the dataset again (after the user's
    /// database was purged; queued changes stay queued).
    public func resetPullCursors(_ db: Database) throws {
        try db.execute("UPDATE ostore_meta.ostore_sync SET cursor = NULL")
    }
}

/// The name the syncing guide used for ``RefusedOutgoingChangeRecord``.
@available(*, deprecated, renamed: "RefusedOutgoingChangeRecord")
public typealias RejectedChangeRecord = RefusedOutgoingChangeRecord

extension ChangeLog {
    /// The name the syncing guide used for ``refusedOutgoingChanges(_:)``.
    @available(*, deprecated, renamed: "refusedOutgoingChanges(_:)")
    public func rejectedChanges(_ db: Database) throws -> [RefusedOutgoingChangeRecord] {
        try refusedOutgoingChanges(db)
    }
}
