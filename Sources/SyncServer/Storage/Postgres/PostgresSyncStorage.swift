import Foundation
import SyncProtocol

/// The storage for running several `ostore-server` processes over one PostgreSQL database, with
/// the same semantics as ``SQLiteSyncStorage``: idempotent pushes per (site, seq), the merged
/// current state for snapshots, token digests only. Pushes to one dataset are ordered by a lock
/// on the dataset's row, so log serials commit in order and pull cursors never skip a change
/// (docs/POSTGRES.md). Losing the database answers ``ServerError`` kind `unavailable` (HTTP 503);
/// the pool reconnects when it is back.
///
/// ```swift
/// let storage = try PostgresSyncStorage(url: "postgresql://ostore@db.internal/ostore", connections: 8)
/// try storage.createDataset(named: "family")
/// ```
///
/// See <https://www.postgresql.org/docs/15/libpq.html>.
public final class PostgresSyncStorage: SyncStorage {
    let pool: PostgresPool
    /// Names this process in the notifications its pushes send, so that its own listener skips
    /// them (its own waiting pulls were woken by the push itself).
    let instance = UUID().uuidString
    /// The scope moves of the latest scoped pulls, each read once for all its pages.
    let transitions = ScopeTransitionCache()
    /// Each dataset's rules as last read, made ready to decide scopes, by dataset id.
    let scopeRules = LockedState<[Int64: StoredScopeRules]>([:])

    /// Connects to `url` (a libpq URI or connection string) and brings the server's tables to
    /// this release's migration; at most `connections` connections are open at once.
    public init(url: String, connections: Int = 8) throws(ServerError) {
        pool = PostgresPool(url: url, capacity: connections)
        do {
            try pool.withConnection { connection in try PostgresMigration.migrate(connection) }
        } catch let error as ServerError {
            throw error
        } catch {
            throw ServerError(
                .storage, "cannot prepare the PostgreSQL database: \(error)",
                fix: "check that the server is running, the URL (--postgres or OSTORE_POSTGRES_URL) and the role's "
                    + "rights to create tables")
        }
    }

    /// Runs storage work on a pooled connection, turning libpq's errors into ``ServerError``s
    /// (connection lost, server shutting down → unavailable); protocol refusals (``ErrorBody``)
    /// raised inside pass through unchanged.
    func storageWork<Output>(_ what: String, _ body: (PostgresConnection) throws -> Output) throws -> Output {
        do {
            return try pool.withConnection(body)
        } catch let error as ServerError {
            throw error
        } catch let error as ErrorBody {
            throw error
        } catch let error as PostgresError {
            if error.isRetryable {
                throw ServerError(
                    .unavailable, "the PostgreSQL database is unavailable (\(what)): \(error)",
                    fix: "retry shortly")
            }
            throw ServerError(.storage, "\(what) failed: \(error)")
        } catch {
            throw ServerError(.storage, "\(what) failed: \(error)")
        }
    }

    /// ``storageWork(_:_:)`` for work that raises no protocol refusals.
    func serverWork<Output>(_ what: String, _ body: (PostgresConnection) throws -> Output) throws(ServerError)
        -> Output
    {
        try ServerError.narrowing(what) { try storageWork(what, body) }
    }

    /// A connection of its own listens for the other servers' pushes (``PostgresChangeListener``).
    public func observeChangesOfOtherServers(_ changed: @escaping @Sendable (String?) -> Void)
        -> (any ChangeObservation)?
    {
        PostgresChangeListener(url: pool.url, instance: instance, changed: changed)
    }

    // MARK: Administration

    public func createDataset(named name: String) throws(ServerError) {
        try DatasetName.check(name)
        try serverWork("creating dataset \(name)") { connection in
            let incarnation = try DatasetState.newIncarnation()
            guard try connection.execute(Statements.createDataset, [.text(name), .text(incarnation)]).rowCount == 1
            else {
                throw ServerError(.conflict, "dataset \(name) already exists")
            }
        }
    }

    public func datasets() throws(ServerError) -> [DatasetSummary] {
        try serverWork("listing datasets") { connection in
            let result = try connection.execute(Statements.datasets)
            return try (0..<result.rowCount).map { row in
                DatasetSummary(
                    name: try result.string(row: row, column: 0),
                    schemaVersion: try result.optionalString(row: row, column: 1).flatMap(SchemaVersion.init),
                    changes: try result.int64(row: row, column: 2),
                    allowedMajorVersion: try result.optionalInt64(row: row, column: 3).map { Int($0) })
            }
        }
    }

    public func allowMajor(_ major: Int, dataset: String) throws(ServerError) {
        try serverWork("allowing dataset \(dataset) to move to major version \(major)") { connection in
            try connection.transaction {
                // The lock a hello recording a schema takes: the dataset cannot move meanwhile.
                let state = try lockDataset(dataset, connection)
                let current = try state.optionalString(row: 0, column: 1).flatMap(SchemaVersion.init)
                try MajorAllowance.check(major, dataset: dataset, current: current)
                try connection.execute(
                    Statements.setAllowedMajor, [.int8(try state.int64(row: 0, column: 0)), .int8(Int64(major))])
            }
        }
    }

    public func createToken(dataset: String, readOnly: Bool, identity: TokenIdentity) throws(ServerError)
        -> CreatedToken
    {
        try identity.check()
        let token = try AccessToken.generate()
        let id = try AccessToken.generateID()
        return try serverWork("creating a token") { connection in
            let datasetID = try self.datasetID(dataset, connection)
            try connection.execute(
                Statements.insertToken,
                [
                    .text(id), .int8(datasetID), .bytea(token.digest), .bool(readOnly),
                    identity.subject.map { .text($0) } ?? .null, identity.claimsJSON.map { .text($0) } ?? .null,
                    identity.expiresAt.map { .float8($0.timeIntervalSince1970) } ?? .null,
                ])
            return CreatedToken(id: id, secret: token.secret, dataset: dataset, readOnly: readOnly)
        }
    }

    public func revokeToken(id: String) throws(ServerError) {
        try serverWork("revoking token \(id)") { connection in
            guard try connection.execute(Statements.revokeToken, [.text(id)]).affectedRows == 1 else {
                let known = try connection.execute(Statements.tokenExists, [.text(id)]).rowCount == 1
                throw known
                    ? ServerError(.conflict, "token \(id) is already revoked")
                    : ServerError(
                        .notFound, "there is no token \(id)", fix: "list tokens with `ostore-server token list`")
            }
        }
    }

    public func tokens() throws(ServerError) -> [TokenSummary] {
        try serverWork("listing tokens") { connection in
            let result = try connection.execute(Statements.tokens)
            return try (0..<result.rowCount).map { row in
                TokenSummary(
                    id: try result.string(row: row, column: 0), dataset: try result.string(row: row, column: 1),
                    readOnly: try result.bool(row: row, column: 2), revoked: try result.bool(row: row, column: 3),
                    subject: try result.optionalString(row: row, column: 4),
                    expiresAt: try Self.date(result, row: row, column: 5))
            }
        }
    }

    // MARK: Serving

    public func checkHealth() throws(ServerError) {
        do {
            try pool.withConnection { connection in _ = try connection.execute(Statements.health) }
        } catch {
            throw ServerError(.unavailable, "the PostgreSQL database cannot be read: \(error)")
        }
    }

    public func grant(forTokenDigest digest: Data) throws(ServerError) -> TokenGrant? {
        try serverWork("checking a token") { connection in
            let result = try connection.execute(Statements.grant, [.bytea(digest)])
            guard result.rowCount == 1 else { return nil }
            // The index lookup found it; the comparison that decides is constant-time.
            guard Crypto.constantTimeEqual(try result.data(row: 0, column: 3), digest) else { return nil }
            return TokenGrant(
                tokenID: try result.string(row: 0, column: 0), dataset: try result.string(row: 0, column: 1),
                readOnly: try result.bool(row: 0, column: 2), subject: try result.optionalString(row: 0, column: 4),
                claims: TokenIdentity.claims(fromJSON: try result.optionalString(row: 0, column: 5)),
                expiresAt: try Self.date(result, row: 0, column: 6))
        }
    }

    /// A time the statement read as `extract(epoch FROM …)`: seconds, or NULL.
    private static func date(_ result: PostgresResult, row: Int, column: Int) throws(PostgresError) -> Date? {
        try result.optionalDouble(row: row, column: column).map { Date(timeIntervalSince1970: $0) }
    }

    public func datasetState(_ dataset: String, site: SiteID) throws(ServerError) -> DatasetState {
        try serverWork("reading dataset \(dataset)") { connection in
            let result = try connection.execute(Statements.datasetState, [.text(dataset), .bytea(site.bytes)])
            guard result.rowCount == 1 else { throw ServerError(.notFound, "there is no dataset \(dataset)") }
            return DatasetState(
                incarnation: try result.optionalString(row: 0, column: 0),
                lastSerial: try result.int64(row: 0, column: 1),
                siteHighWater: try result.int64(row: 0, column: 2),
                lastChain: try result.optionalInt64(row: 0, column: 3))
        }
    }

    public func logChain(dataset: String, serial: Int64) throws(ServerError) -> Int64? {
        try serverWork("reading the log of dataset \(dataset)") { connection in
            let result = try connection.execute(Statements.logChain, [.text(dataset), .int8(serial)])
            return result.rowCount == 1 ? try result.optionalInt64(row: 0, column: 0) : nil
        }
    }

    public func schemaVersion(of dataset: String) throws(ServerError) -> SchemaVersion? {
        try serverWork("reading dataset \(dataset)") { connection in
            let result = try connection.execute(Statements.schemaVersion, [.text(dataset)])
            guard result.rowCount == 1 else { return nil }
            return try result.optionalString(row: 0, column: 0).flatMap(SchemaVersion.init)
        }
    }

    public func schemaDefinitions(of dataset: String) throws(ServerError) -> [SchemaVersion: SchemaDefinition] {
        try serverWork("reading the schema definitions of dataset \(dataset)") { connection in
            try Self.definitions(try connection.execute(Statements.schemaDefinitions, [.text(dataset)]))
        }
    }

    /// The definitions of `result`'s (version, definition) rows.
    private static func definitions(_ result: PostgresResult) throws -> [SchemaVersion: SchemaDefinition] {
        var definitions: [SchemaVersion: SchemaDefinition] = [:]
        for row in 0..<result.rowCount {
            let version = try RecordedSchema.version(fromStored: try result.string(row: row, column: 0))
            definitions[version] = try RecordedSchema.definition(fromStored: try result.string(row: row, column: 1))
        }
        return definitions
    }

    public func recordSchema(_ schema: SchemaDescription, dataset: String, mayMoveDataset: Bool) throws
        -> SchemaVersion?
    {
        try storageWork("recording the schema of dataset \(dataset)") { connection in
            try connection.transaction {
                // The dataset's lock: two servers recording the same new version cannot both insert it.
                let state = try connection.execute(Statements.lockDataset, [.text(dataset)])
                guard state.rowCount == 1 else { throw ServerError(.notFound, "there is no dataset \(dataset)") }
                let datasetID = try state.int64(row: 0, column: 0)
                let current = try state.optionalString(row: 0, column: 1).flatMap(SchemaVersion.init)
                try MajorAllowance.requireAllowed(
                    schema.version, dataset: dataset, current: current,
                    allowed: try state.optionalInt64(row: 0, column: 4).map { Int($0) })
                let version = schema.version.description
                let fingerprint = try connection.execute(
                    Statements.schemaFingerprint, [.int8(datasetID), .text(version)])
                let definitionFingerprint = try connection.execute(
                    Statements.schemaDefinitionFingerprint, [.int8(datasetID), .text(version)])
                let recorded = RecordedSchema(
                    fingerprint: fingerprint.rowCount == 1 ? try fingerprint.string(row: 0, column: 0) : nil,
                    definitionFingerprint: definitionFingerprint.rowCount == 1
                        ? try definitionFingerprint.string(row: 0, column: 0) : nil)
                switch try recorded.check(schema) {
                case .fingerprint? where mayMoveDataset:
                    try connection.execute(
                        Statements.insertSchema, [.int8(datasetID), .text(version), .text(schema.fingerprint)])
                case .definition? where mayMoveDataset:
                    try RecordedSchema.checkMinorSteps(
                        schema,
                        among: try Self.definitions(
                            try connection.execute(Statements.schemaDefinitionsByID, [.int8(datasetID)])))
                    try connection.execute(
                        Statements.insertSchemaDefinition,
                        [
                            .int8(datasetID), .text(version), .text(schema.fingerprint),
                            .text(try RecordedSchema.storedText(schema.definition!)),
                        ])
                default: break
                }
                if mayMoveDataset, current.map({ schema.version > $0 }) ?? true {
                    try connection.execute(Statements.setSchemaVersion, [.int8(datasetID), .text(version)])
                    return schema.version
                }
                return current
            }
        }
    }

    public func claimSite(_ site: SiteID, dataset: String, token: String) throws -> Int64 {
        try storageWork("claiming site \(site) of dataset \(dataset)") { connection in
            // Most claims find the site theirs already: one round trip, and no lock.
            let seen = try siteClaim(site, dataset: dataset, connection)
            guard try seen.binding.claim(by: token) else { return seen.high }
            return try connection.transaction {
                // The dataset's lock, which pushes take first: no push or other claim binds the
                // site between this read and the write.
                _ = try connection.execute(Statements.lockDataset, [.text(dataset)])
                let now = try siteClaim(site, dataset: dataset, connection)
                if try now.binding.claim(by: token) {
                    try connection.execute(
                        Statements.upsertSite,
                        [.int8(now.datasetID), .bytea(site.bytes), .int8(now.high), .text(token)])
                }
                return now.high
            }
        }
    }

    /// The site's binding and high-water mark, as ``claimSite(_:dataset:token:)`` decides on them.
    private func siteClaim(_ site: SiteID, dataset: String, _ connection: PostgresConnection) throws
        -> (datasetID: Int64, high: Int64, binding: SiteBinding)
    {
        let result = try connection.execute(Statements.siteClaim, [.text(dataset), .bytea(site.bytes)])
        guard result.rowCount == 1 else { throw ServerError(.notFound, "there is no dataset \(dataset)") }
        return (
            try result.int64(row: 0, column: 0), try result.int64(row: 0, column: 1),
            SiteBinding(
                site: site, dataset: dataset, token: try result.optionalString(row: 0, column: 2),
                tokenIsLive: try result.bool(row: 0, column: 3))
        )
    }

    /// Locks `dataset`'s row for the rest of the transaction (``Statements/lockDataset``) and
    /// returns it; throws ``ServerError`` (kind `notFound`) when there is no such dataset.
    func lockDataset(_ dataset: String, _ connection: PostgresConnection) throws -> PostgresResult {
        let state = try connection.execute(Statements.lockDataset, [.text(dataset)])
        guard state.rowCount == 1 else {
            throw ServerError(
                .notFound, "there is no dataset \(dataset)",
                fix: "create it first with `ostore-server dataset create \(dataset)`")
        }
        return state
    }

    func datasetID(_ name: String, _ connection: PostgresConnection) throws -> Int64 {
        let result = try connection.execute(Statements.datasetID, [.text(name)])
        guard result.rowCount == 1 else {
            throw ServerError(
                .notFound, "there is no dataset \(name)",
                fix: "create it first with `ostore-server dataset create \(name)`")
        }
        return try result.int64(row: 0, column: 0)
    }
}
