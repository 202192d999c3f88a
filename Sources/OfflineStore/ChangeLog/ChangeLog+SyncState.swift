import Foundation

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

    public init(endpoint: String) { self.endpoint = endpoint }
}

/// A local change a server refused, kept instead of dropped.
public struct RejectedChangeRecord: Sendable, Hashable {
    public var rejectedAt: Date
    /// The server's stable error code (`invalid_change`, …).
    public var code: String
    public var reason: String
    /// The change as it was pushed (the protocol's JSON).
    public var change: String

    public init(rejectedAt: Date, code: String, reason: String, change: String) {
        self.rejectedAt = rejectedAt
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
            SELECT cursor, lastSyncAt, lastError, protocolVersion, datasetSchemaVersion
            FROM ostore_meta.ostore_sync WHERE endpoint = \(endpoint)
            """)
        {
            state.cursor = try row.decode(at: 0)
            state.lastSyncAt = try row.decode(at: 1)
            state.lastError = try row.decode(at: 2)
            state.protocolVersion = try row.decode(at: 3)
            state.datasetSchemaVersion = try row.decode(at: 4)
        }
        return state
    }

    public func save(_ state: SyncState, _ db: Database) throws {
        try db.execute(
            """
            INSERT INTO ostore_meta.ostore_sync (endpoint, cursor, lastSyncAt, lastError, protocolVersion, datasetSchemaVersion)
            VALUES (\(state.endpoint), \(state.cursor), \(state.lastSyncAt), \(state.lastError), \(state.protocolVersion),
                \(state.datasetSchemaVersion))
            ON CONFLICT (endpoint) DO UPDATE SET cursor = excluded.cursor, lastSyncAt = excluded.lastSyncAt,
                lastError = excluded.lastError, protocolVersion = excluded.protocolVersion,
                datasetSchemaVersion = excluded.datasetSchemaVersion
            """)
    }

    /// Keeps a change the server refused, with its reason.
    public func recordRejected(_ record: RejectedChangeRecord, _ db: Database) throws {
        try db.execute(
            """
            INSERT INTO ostore_meta.ostore_rejected (rejectedAt, code, reason, change)
            VALUES (\(record.rejectedAt), \(record.code), \(record.reason), \(record.change))
            """)
    }

    /// Every refused change, oldest first.
    public func rejectedChanges(_ db: Database) throws -> [RejectedChangeRecord] {
        try db.fetchAll("SELECT rejectedAt, code, reason, change FROM ostore_meta.ostore_rejected ORDER BY id").map {
            row in
            RejectedChangeRecord(
                rejectedAt: try row.decode(at: 0), code: try row.decode(at: 1), reason: try row.decode(at: 2),
                change: try row.decode(at: 3))
        }
    }

    /// Forgets every pull cursor, so the next sync downloads the dataset again (after the user's
    /// database was purged; queued changes stay queued).
    public func resetPullCursors(_ db: Database) throws {
        try db.execute("UPDATE ostore_meta.ostore_sync SET cursor = NULL")
    }
}
