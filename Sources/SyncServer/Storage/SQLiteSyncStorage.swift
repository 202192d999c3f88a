import Foundation
import OfflineStoreSQLite
import SyncProtocol

/// The default storage: SQLite files in the data directory, in WAL mode, through OfflineStore's
/// SQLite layer (one writer, concurrent readers): `server.sqlite` holds the datasets, tokens and
/// every dataset's log, `state.sqlite` (``ServerStateFile``) the current rows folded from the log,
/// which first downloads read. The state is derived: a backup needs only `server.sqlite`. Only
/// that layer is used; none of the client's change tracking or sync code.
///
/// `synchronous = FULL`: a push is acknowledged only after the WAL holding it has been fsynced,
/// so an acknowledged change survives a power loss or an OS crash, not only a crash of the
/// server process (`NORMAL` in WAL mode may lose the last commits on power loss, and a client
/// never pushes a change again once it is acknowledged). Concurrent pushes share commits
/// (``GroupCommit``), so they share the fsync.
///
/// ```swift
/// let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: "/var/lib/ostore"))
/// ```
///
/// See <https://www.sqlite.org/wal.html>.
public final class SQLiteSyncStorage: SyncStorage {
    public static let fileName = "server.sqlite"

    let pool: DatabasePool
    /// Where pushes are written: see ``GroupCommit``.
    let commits: GroupCommit
    /// The current rows, folded from the log: see ``ServerStateFile``.
    let state: ServerStateFile
    /// Merges what pushes appended into the state: see ``StateFolder``.
    let folder: StateFolder
    /// The scope moves of pulls in progress, reused by their next pages.
    let transitions = ScopeTransitionCache()
    public let path: String

    /// Tells `report` when merging pushed changes into the current rows fails, and when it works
    /// again: pushes are stored and acknowledged either way, but first downloads trail the log
    /// until it does. `ostore-server serve` writes them to its log.
    ///
    /// ```swift
    /// storage.reportFoldProblems { problem in print(problem ?? "folding again") }
    /// ```
    public func reportFoldProblems(_ report: @escaping @Sendable (_ problem: String?) -> Void) {
        folder.report { event in
            switch event {
            case .failed(let message): report(message)
            case .recovered: report(nil)
            }
        }
    }

    public convenience init(directory: URL) throws(ServerError) {
        try self.init(directory: directory, folds: true)
    }

    /// Opens the storage in `directory`; with `folds` false it merges nothing into the current
    /// rows (``StateFolder``): pushes stored through it stay unfolded, as after a crash right after
    /// their acknowledgement, until a storage that folds opens the directory. The administration
    /// commands open it so: they never fold beside a running server, nor wait at exit for a round
    /// of folding to end. The check of `state.sqlite` against the log runs either way.
    ///
    /// ```swift
    /// let storage = try SQLiteSyncStorage(directory: data, folds: false)
    /// try storage.createDataset(named: "family")
    /// ```
    public init(directory: URL, folds: Bool) throws(ServerError) {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw ServerError(
                .storage, "cannot create the data directory \(directory.path): \(error.localizedDescription)",
                fix: "choose a --data directory the server's user may write")
        }
        path = directory.appendingPathComponent(Self.fileName).path
        do {
            var configuration = Configuration()
            configuration.synchronous = .full
            pool = try DatabasePool.migrated(
                path: path, plan: ServerMigrationPlan.self, configuration: configuration,
                writerSettings: [
                    // Each push runs in a savepoint of its group's transaction, and SQLite keeps the
                    // original of every page a savepoint changes in a sub-journal that spills to a
                    // temporary file past 64 KiB: a good share of the bytes a push would write.
                    "PRAGMA temp_store = MEMORY",
                    // The log's and the sites' pages a push writes stay in memory between pushes.
                    "PRAGMA cache_size = -32768",
                    "PRAGMA wal_autocheckpoint = \(BackgroundCheckpointer.writerAutoCheckpointPages)",
                ])
            let checkpointer = BackgroundCheckpointer.start(path: path, configuration: configuration)
            commits = GroupCommit(pool: pool, afterCommit: { checkpointer.walGrew() })
        } catch {
            throw ServerError(
                .storage, "cannot open the server database \(path): \(error)",
                fix: "check the file's permissions; if another release of ostore-server wrote it, use that release")
        }
        let statePath = directory.appendingPathComponent(ServerStateFile.fileName).path
        do {
            state = try ServerStateFile(directory: directory)
            folder = StateFolder(
                log: pool, state: state.pool, foldedSerials: try state.reconcile(with: pool), running: folds)
        } catch {
            throw ServerError(
                .storage, "cannot open the server's state file \(statePath): \(error)",
                fix:
                    "it holds only what the log in \(Self.fileName) holds, merged: stop the server, remove "
                    + "\(ServerStateFile.fileName) and its -wal and -shm files, and start the server again to rebuild it"
            )
        }
    }

    /// Runs storage work, turning SQLite's errors into ``ServerError``s (busy → unavailable);
    /// protocol refusals (``ErrorBody``) raised inside pass through unchanged.
    func storageWork<Output>(_ what: String, _ body: () throws -> Output) throws -> Output {
        do {
            return try body()
        } catch let error as ServerError {
            throw error
        } catch let error as ErrorBody {
            throw error
        } catch let error as DatabaseError where error.resultCode.primary == .busy {
            throw ServerError(.unavailable, "the server database is busy (\(what))", fix: "retry shortly")
        } catch {
            throw ServerError(.storage, "\(what) failed: \(error)")
        }
    }

    /// ``storageWork(_:_:)`` for work that raises no protocol refusals.
    func serverWork<Output>(_ what: String, _ body: () throws -> Output) throws(ServerError) -> Output {
        try ServerError.narrowing(what) { try storageWork(what, body) }
    }

    // MARK: Administration

    public func createDataset(named name: String) throws(ServerError) {
        try DatasetName.check(name)
        try serverWork("creating dataset \(name)") {
            try pool.write { db in
                if try db.fetchOne("SELECT 1 FROM server_datasets WHERE name = \(name)") != nil {
                    throw ServerError(.conflict, "dataset \(name) already exists")
                }
                try db.execute(
                    """
                    INSERT INTO server_datasets (name, createdAt, incarnation)
                    VALUES (\(name), \(Date()), \(try DatasetState.newIncarnation()))
                    """)
            }
        }
    }

    public func datasets() throws(ServerError) -> [DatasetSummary] {
        try serverWork("listing datasets") {
            try pool.read { db in
                try db.fetchAll(
                    "SELECT name, schemaVersion, lastSerial, allowedMajor FROM server_datasets ORDER BY name"
                ).map { row in
                    DatasetSummary(
                        name: try row.decode(at: 0),
                        schemaVersion: (try row.decode(String?.self, at: 1)).flatMap(SchemaVersion.init),
                        changes: try row.decode(at: 2), allowedMajorVersion: try row.decode(Int?.self, at: 3))
                }
            }
        }
    }

    public func allowMajor(_ major: Int, dataset: String) throws(ServerError) {
        try serverWork("allowing dataset \(dataset) to move to major version \(major)") {
            try pool.write { db in
                let datasetID = try self.datasetID(dataset, db)
                let current = try db.fetchValue(
                    String.self, "SELECT schemaVersion FROM server_datasets WHERE id = \(datasetID)"
                ).flatMap(SchemaVersion.init)
                try MajorAllowance.check(major, dataset: dataset, current: current)
                try db.execute("UPDATE server_datasets SET allowedMajor = \(major) WHERE id = \(datasetID)")
            }
        }
    }

    public func createToken(dataset: String, readOnly: Bool, identity: TokenIdentity) throws(ServerError)
        -> CreatedToken
    {
        try identity.check()
        let token = try AccessToken.generate()
        let id = try AccessToken.generateID()
        return try serverWork("creating a token") {
            try pool.write { db in
                guard
                    let datasetID = try db.fetchValue(
                        Int64.self, "SELECT id FROM server_datasets WHERE name = \(dataset)")
                else {
                    throw ServerError(
                        .notFound, "there is no dataset \(dataset)",
                        fix: "create it first with `ostore-server dataset create \(dataset)`")
                }
                try db.execute(
                    """
                    INSERT INTO server_tokens (id, datasetID, digest, readOnly, createdAt, subject, claims, expiresAt)
                    VALUES (
                        \(id), \(datasetID), \(token.digest), \(readOnly), \(Date()), \(identity.subject),
                        \(identity.claimsJSON), \(identity.expiresAt))
                    """)
                return CreatedToken(id: id, secret: token.secret, dataset: dataset, readOnly: readOnly)
            }
        }
    }

    public func revokeToken(id: String) throws(ServerError) {
        try serverWork("revoking token \(id)") {
            try pool.write { db in
                try db.execute(
                    "UPDATE server_tokens SET revokedAt = \(Date()) WHERE id = \(id) AND revokedAt IS NULL")
                guard db.changesCount == 1 else {
                    let known = try db.fetchOne("SELECT 1 FROM server_tokens WHERE id = \(id)") != nil
                    throw known
                        ? ServerError(.conflict, "token \(id) is already revoked")
                        : ServerError(
                            .notFound, "there is no token \(id)", fix: "list tokens with `ostore-server token list`")
                }
            }
        }
    }

    public func tokens() throws(ServerError) -> [TokenSummary] {
        try serverWork("listing tokens") {
            try pool.read { db in
                try db.fetchAll(
                    """
                    SELECT t.id, d.name, t.readOnly, t.revokedAt IS NOT NULL, t.subject, t.expiresAt
                    FROM server_tokens AS t JOIN server_datasets AS d ON d.id = t.datasetID ORDER BY d.name, t.createdAt
                    """
                ).map { row in
                    TokenSummary(
                        id: try row.decode(at: 0), dataset: try row.decode(at: 1), readOnly: try row.decode(at: 2),
                        revoked: try row.decode(at: 3), subject: try row.decode(at: 4), expiresAt: try row.decode(at: 5)
                    )
                }
            }
        }
    }

    /// Waits until the state (`state_rows`) holds every change of the log: for
    /// what reads the state as a whole rather than through a snapshot's serial (tests), and for a
    /// benchmark that counts the fold's work.
    package func waitUntilFolded() {
        folder.waitUntilFolded()
    }

    // MARK: Serving

    public func checkHealth() throws(ServerError) {
        do {
            _ = try pool.read { db in try db.fetchValue(Int.self, "SELECT count(*) FROM server_datasets") }
            _ = try state.pool.read { db in try db.fetchValue(Int.self, "SELECT count(*) FROM state_datasets") }
        } catch {
            throw ServerError(.unavailable, "the server's databases cannot be read: \(error)")
        }
    }

    public func grant(forTokenDigest digest: Data) throws(ServerError) -> TokenGrant? {
        try serverWork("checking a token") {
            try pool.read { db in
                guard
                    let row = try db.fetchOne(
                        """
                        SELECT t.id, d.name, t.readOnly, t.digest, t.subject, t.claims, t.expiresAt
                        FROM server_tokens AS t JOIN server_datasets AS d ON d.id = t.datasetID
                        WHERE t.digest = \(digest) AND t.revokedAt IS NULL
                        """)
                else { return nil }
                // The index lookup found it; the comparison that decides is constant-time.
                guard Crypto.constantTimeEqual(try row.decode(Data.self, at: 3), digest) else { return nil }
                return TokenGrant(
                    tokenID: try row.decode(at: 0), dataset: try row.decode(at: 1), readOnly: try row.decode(at: 2),
                    subject: try row.decode(at: 4), claims: TokenIdentity.claims(fromJSON: try row.decode(at: 5)),
                    expiresAt: try row.decode(at: 6))
            }
        }
    }

    public func schemaVersion(of dataset: String) throws(ServerError) -> SchemaVersion? {
        try serverWork("reading dataset \(dataset)") {
            try pool.read { db in
                try db.fetchValue(String.self, "SELECT schemaVersion FROM server_datasets WHERE name = \(dataset)")
                    .flatMap(SchemaVersion.init)
            }
        }
    }

    public func schemaDefinitions(of dataset: String) throws(ServerError) -> [SchemaVersion: SchemaDefinition] {
        try serverWork("reading the schema definitions of dataset \(dataset)") {
            try pool.read { db in
                try Self.definitions(
                    """
                    SELECT s.version, s.definition FROM server_schema_definitions AS s
                    JOIN server_datasets AS d ON d.id = s.datasetID WHERE d.name = \(dataset)
                    """, db)
            }
        }
    }

    /// The definitions `query` selects, as (version, definition) rows.
    private static func definitions(_ query: SQL, _ db: Database) throws -> [SchemaVersion: SchemaDefinition] {
        var definitions: [SchemaVersion: SchemaDefinition] = [:]
        for row in try db.fetchAll(query) {
            let version = try RecordedSchema.version(fromStored: try row.decode(at: 0))
            definitions[version] = try RecordedSchema.definition(fromStored: try row.decode(at: 1))
        }
        return definitions
    }

    public func recordSchema(_ schema: SchemaDescription, dataset: String, mayMoveDataset: Bool) throws
        -> SchemaVersion?
    {
        try storageWork("recording the schema of dataset \(dataset)") {
            try pool.write { db in
                let datasetID = try self.datasetID(dataset, db)
                let row = try db.fetchOne(
                    "SELECT schemaVersion, allowedMajor FROM server_datasets WHERE id = \(datasetID)")
                let current = try row.flatMap { try $0.decode(String?.self, at: 0) }.flatMap(SchemaVersion.init)
                try MajorAllowance.requireAllowed(
                    schema.version, dataset: dataset, current: current,
                    allowed: try row.flatMap { try $0.decode(Int?.self, at: 1) })
                let version = schema.version.description
                let recorded = RecordedSchema(
                    fingerprint: try db.fetchValue(
                        String.self,
                        "SELECT fingerprint FROM server_schemas WHERE datasetID = \(datasetID) AND version = \(version)"
                    ),
                    definitionFingerprint: try db.fetchValue(
                        String.self,
                        """
                        SELECT fingerprint FROM server_schema_definitions
                        WHERE datasetID = \(datasetID) AND version = \(version)
                        """))
                switch try recorded.check(schema) {
                case .fingerprint? where mayMoveDataset:
                    try db.execute(
                        """
                        INSERT INTO server_schemas (datasetID, version, fingerprint)
                        VALUES (\(datasetID), \(version), \(schema.fingerprint))
                        """)
                case .definition? where mayMoveDataset:
                    try RecordedSchema.checkMinorSteps(
                        schema,
                        among: try Self.definitions(
                            "SELECT version, definition FROM server_schema_definitions WHERE datasetID = \(datasetID)",
                            db))
                    let definition = try RecordedSchema.storedText(schema.definition!)
                    try db.execute(
                        """
                        INSERT INTO server_schema_definitions (datasetID, version, fingerprint, definition)
                        VALUES (\(datasetID), \(version), \(schema.fingerprint), \(definition))
                        """)
                default: break
                }
                if mayMoveDataset, current.map({ schema.version > $0 }) ?? true {
                    try db.execute("UPDATE server_datasets SET schemaVersion = \(version) WHERE id = \(datasetID)")
                    return schema.version
                }
                return current
            }
        }
    }

    public func datasetState(_ dataset: String, site: SiteID) throws(ServerError) -> DatasetState {
        try serverWork("reading dataset \(dataset)") {
            try pool.read { db in
                guard
                    let row = try db.fetchOne(
                        "SELECT id, incarnation, lastSerial, lastChain FROM server_datasets WHERE name = \(dataset)")
                else { throw ServerError(.notFound, "there is no dataset \(dataset)") }
                let datasetID: Int64 = try row.decode(at: 0)
                let high = try db.fetchValue(
                    Int64.self,
                    "SELECT highSeq FROM server_sites WHERE datasetID = \(datasetID) AND site = \(site.bytes)")
                return DatasetState(
                    incarnation: try row.decode(at: 1), lastSerial: try row.decode(at: 2), siteHighWater: high ?? 0,
                    lastChain: try row.decode(at: 3))
            }
        }
    }

    public func claimSite(_ site: SiteID, dataset: String, token: String) throws -> Int64 {
        try storageWork("claiming site \(site) of dataset \(dataset)") {
            // Most claims find the site theirs already: one read, and no wait for the writer.
            let seen = try pool.read { db in try siteClaim(site, dataset: dataset, db) }
            guard try seen.binding.claim(by: token) else { return seen.high }
            // Read again in the write: a push or another claim may have bound the site meanwhile.
            return try commits.write { db in
                let now = try self.siteClaim(site, dataset: dataset, db)
                if try now.binding.claim(by: token) {
                    try db.execute(
                        Self.upsertSite(datasetID: now.datasetID, site: site.bytes, high: now.high, token: token))
                }
                return now.high
            }
        }
    }

    /// The site's binding and high-water mark, as ``claimSite(_:dataset:token:)`` decides on them.
    private func siteClaim(_ site: SiteID, dataset: String, _ db: Database) throws
        -> (datasetID: Int64, high: Int64, binding: SiteBinding)
    {
        let datasetID = try self.datasetID(dataset, db)
        let row = try db.fetchOne(Self.siteOfPush(datasetID: datasetID, site: site.bytes))
        return (
            datasetID, try row.map { try $0.decode(Int64.self, at: 0) } ?? 0,
            try Self.binding(of: site, dataset: dataset, row)
        )
    }

    /// Gives every dataset (or those named) a new incarnation, so every pull cursor issued before is
    /// refused and its device downloads the dataset again: what `ostore-server restore` does once a
    /// backup is in place. Returns how many datasets were renewed.
    @discardableResult
    public func renewIncarnations(of names: Set<String>? = nil) throws(ServerError) -> Int {
        try serverWork("renewing the datasets' incarnations") {
            try pool.write { db in
                var ids: [Int64] = []
                for row in try db.fetchAll("SELECT id, name FROM server_datasets ORDER BY id") {
                    let name: String = try row.decode(at: 1)
                    if names?.contains(name) ?? true { ids.append(try row.decode(at: 0)) }
                }
                for id in ids {
                    try db.execute(
                        "UPDATE server_datasets SET incarnation = \(try DatasetState.newIncarnation()) WHERE id = \(id)"
                    )
                }
                return ids.count
            }
        }
    }

    func datasetID(_ name: String, _ db: Database) throws -> Int64 {
        guard let id = try db.fetchValue(Int64.self, "SELECT id FROM server_datasets WHERE name = \(name)") else {
            throw ServerError(.notFound, "there is no dataset \(name)")
        }
        return id
    }
}
