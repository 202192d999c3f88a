import Foundation
import SyncProtocol

/// Where a server keeps datasets, tokens, the append-only change log and the merged current
/// state. The HTTP layer and the request handlers know only this protocol, so a backend
/// (embedded SQLite now, PostgreSQL next) is chosen at start-up without touching them.
///
/// Every method may be called from any thread at any time; implementations serialise what
/// must be serialised.
///
/// ```swift
/// let storage = try SQLiteSyncStorage(directory: dataDirectory)
/// try storage.createDataset(named: "family")
/// let token = try storage.createToken(dataset: "family", readOnly: false)
/// ```
public protocol SyncStorage: Sendable {
    // MARK: Administration

    func createDataset(named name: String) throws(ServerError)
    func datasets() throws(ServerError) -> [DatasetSummary]
    /// What `dataset`'s log and state hold (``DatasetStats``); `notFound` for a dataset that is not there.
    func datasetStats(_ dataset: String) throws(ServerError) -> DatasetStats
    /// Lets `dataset`'s schema move up to major version `major` (0 to 999,999,999): a hello
    /// announcing a higher major is refused with `409 major_not_allowed` and moves nothing. Without
    /// an allowance a dataset takes its first hello's major and then stays at it; one at or below
    /// the dataset's current major allows no move. Throws ``ServerError`` (kind `conflict`) for a
    /// major below the dataset's, which it has left for good.
    ///
    /// ```swift
    /// try storage.allowMajor(2, dataset: "family")  // release 2.0 of the app may move it
    /// ```
    func allowMajor(_ major: Int, dataset: String) throws(ServerError)
    /// Makes a token for `dataset` standing for `identity` (checked with
    /// ``TokenIdentity/check()``); the secret is in the result and nowhere else.
    ///
    /// ```swift
    /// let bob = try storage.createToken(
    ///     dataset: "family", readOnly: false, identity: .init(subject: "bob", expiresAt: .now + 86_400))
    /// ```
    func createToken(dataset: String, readOnly: Bool, identity: TokenIdentity) throws(ServerError) -> CreatedToken
    func revokeToken(id: String) throws(ServerError)
    func tokens() throws(ServerError) -> [TokenSummary]
    /// Adds a pull cursor key newer than every other (``CursorKey``) and drops every key older than
    /// the one before it, in one transaction: servers sign with the new key once they read it, and
    /// refuse cursors signed with a dropped one.
    ///
    /// ```swift
    /// let rotation = try storage.rotateCursorKeys()  // added 3, previous 2, dropped [1]
    /// ```
    func rotateCursorKeys() throws(ServerError) -> CursorKeyRotation

    // MARK: Serving

    /// Throws ``ServerError`` (kind `unavailable`) when the storage cannot serve requests now.
    func checkHealth() throws(ServerError)

    /// The keys that authenticate pull cursors, newest first: the one servers sign with and the one
    /// before it, whose cursors they still accept (older keys are dropped by
    /// ``rotateCursorKeys()``). Makes the first key when there is none yet, once for every server
    /// sharing the storage. Servers cache what it returns (``PullCursorKeys``).
    ///
    /// ```swift
    /// let signing = try storage.cursorKeys()[0]
    /// ```
    func cursorKeys() throws(ServerError) -> [CursorKey]
    /// The grant of the unrevoked token whose SHA-256 digest is `digest`, or nil. An expired
    /// token's grant is returned too, with its ``TokenGrant/expiresAt``: the service refuses it,
    /// saying so.
    func grant(forTokenDigest digest: Data) throws(ServerError) -> TokenGrant?
    /// The newest schema version the dataset has seen (nil when no client has joined).
    func schemaVersion(of dataset: String) throws(ServerError) -> SchemaVersion?
    /// The definitions `dataset`'s schema versions were first announced with by read-write hellos
    /// (``SchemaDescription/definition``), by version; a version no hello brought one for is not
    /// among them. Pushes are checked against them (``SchemaRules/governing(_:among:)``).
    func schemaDefinitions(of dataset: String) throws(ServerError) -> [SchemaVersion: SchemaDefinition]
    /// Records that a client with this schema joined. A version newer than the dataset's newest
    /// moves the dataset to it when `mayMoveDataset`, which also records the version's fingerprint,
    /// or its definition, the first time it is announced (``RecordedSchema``); without it nothing is
    /// recorded and the schema is only checked. Throws `ErrorBody(.schemaConflict)` when the
    /// version is known with another fingerprint of the same kind, and `ErrorBody(.majorNotAllowed)`, with or without
    /// `mayMoveDataset`, when its major is above the highest the operator allows
    /// (``allowMajor(_:dataset:)``).
    func recordSchema(_ schema: SchemaDescription, dataset: String, mayMoveDataset: Bool) throws -> SchemaVersion?
    /// Binds `site` of `dataset` to `token` unless it is bound to it already (``SiteBinding``), and
    /// returns the site's high-water mark. Throws `ErrorBody(.siteForbidden)` when another token,
    /// not revoked, holds the site. A hello with a read-write token claims its site, and so does a
    /// push that waits for the batch it follows, before it waits; a push that does not wait checks
    /// inside ``storeBatch(_:site:clientSchema:dataset:token:)``'s transaction. Most calls find the
    /// site bound to their token and only read.
    ///
    /// ```swift
    /// let acknowledged = try storage.claimSite(site, dataset: "family", token: grant.tokenID)
    /// ```
    func claimSite(_ site: SiteID, dataset: String, token: String) throws -> Int64
    /// Stores the changes of `site` not stored yet (those with a `seq` above the site's high-water
    /// mark), all or nothing, after checking inside the same transaction that the dataset still
    /// accepts `clientSchema`'s major version (else `ErrorBody(.upgradeRequired)`) and that the site
    /// is `token`'s to push as (else `ErrorBody(.siteForbidden)`; a site not bound yet, or bound to
    /// a revoked token, is bound to `token`), read with the site's high-water mark. Returns the
    /// site's new high-water mark and how many of the changes were new (``StoredBatch``). `batch` holds the changes with their canonical JSON (the log's
    /// bodies and the state's keys), made before any lock is taken. A nil `token` (the operator's
    /// own calls, tests, benchmarks) neither checks nor makes a binding.
    func storeBatch(_ batch: BatchJSON, site: SiteID, clientSchema: SchemaVersion, dataset: String, token: String?)
        throws -> StoredBatch
    /// Up to `limit` log entries after `serial`, leaving out `site`'s own.
    func readLog(dataset: String, after serial: Int64, excluding site: SiteID?, limit: Int) throws(ServerError)
        -> LogPage
    /// The next snapshot page after `position` (nil to start).
    func readSnapshot(dataset: String, after position: SnapshotPosition?, limit: Int) throws(ServerError)
        -> SnapshotPage
    /// What a hello and a pull check against, read in one transaction: the dataset's incarnation,
    /// its newest serial, and `site`'s high-water mark (0 when the site never pushed). Throws
    /// ``ServerError`` (kind `notFound`) when there is no such dataset.
    func datasetState(_ dataset: String, site: SiteID) throws(ServerError) -> DatasetState
    /// The fingerprint of the dataset's log up to and including the entry at `serial`
    /// (``LogChain``), which pull cursors carry; nil when there is no such entry, or it was stored
    /// before fingerprints were kept. A pull reads it only for a cursor behind the log's end (the
    /// end's is ``DatasetState/lastChain``).
    ///
    /// ```swift
    /// let stillTheSameLog = try storage.logChain(dataset: "family", serial: 42) == chainSeenBefore
    /// ```
    func logChain(dataset: String, serial: Int64) throws(ServerError) -> Int64?
    /// Starts telling `changed` of the changes other processes store in this storage (servers
    /// sharing a PostgreSQL database): the dataset's name for each, nil when some may have gone
    /// untold (the channel was lost and is back). It is called on a thread of the storage's while
    /// the returned observation is kept; nil when no other process writes here (a data directory
    /// belongs to one server), so this process's own pushes are all there is to know.
    ///
    /// ```swift
    /// let observation = storage.observeChangesOfOtherServers { dataset in wake(dataset) }
    /// ```
    func observeChangesOfOtherServers(_ changed: @escaping @Sendable (String?) -> Void) -> (any ChangeObservation)?

    // MARK: Scopes

    /// Makes the rules file `text` (``ScopeRules``) `dataset`'s scope rules, checked against the
    /// newest schema definition its devices announced; every device's next pull and push are
    /// served under them. Throws ``ServerError`` (kind `invalidArgument`) listing every problem of
    /// the file.
    ///
    /// ```swift
    /// try storage.setScopeRules(try String(contentsOfFile: "rules.json", encoding: .utf8), dataset: "family")
    /// ```
    func setScopeRules(_ text: String, dataset: String) throws(ServerError)
    /// `dataset`'s scope rules; nil when it has none.
    func scopeRules(of dataset: String) throws(ServerError) -> ScopeRulesSummary?
}

/// A storage that serves datasets under scope rules (``ScopeRules``): the embedded SQLite
/// storage, whose fold keeps the scope index (``StateScopeIndex``), and the PostgreSQL storage,
/// whose pushes keep it in their transaction (``PostgresScopeIndex``).
protocol ScopedStorage: SyncStorage {
    /// The version of `dataset`'s rules; nil when it has none.
    func scopeRulesVersion(of dataset: String) throws(ServerError) -> Int64?
    /// Makes `rulesText` (a rules file, ``ScopeRules``) the scope rules of `dataset`, checked
    /// against `definition`: from the index's next position, before any change after.
    func setScopeRules(_ rulesText: String, definition: SchemaDefinition, dataset: String) throws
    /// Returns once every change stored so far is in the scope index.
    func waitUntilFolded()
    func readScopedChanges(
        dataset: String, identity: ScopeIdentity, after cursor: ScopedCursor?, limit: Int, excluding site: SiteID?
    ) throws -> ScopedChanges
    func scopeWriteRefusals(_ changes: [Change], identity: ScopeIdentity, dataset: String) throws -> [Int: String]
}

extension ScopedStorage {
    /// ``SyncStorage/setScopeRules(_:dataset:)`` of a storage that serves rules: checked against
    /// the newest schema definition `dataset`'s devices announced.
    func setScopeRulesCheckedAgainstNewestDefinition(_ text: String, dataset: String) throws(ServerError) {
        guard let (version, definition) = try schemaDefinitions(of: dataset).max(by: { $0.key < $1.key }) else {
            throw ServerError(
                .invalidArgument,
                "no device of dataset \(dataset) has announced its schema's definition yet, so the rules cannot be "
                    + "checked", fix: "sync a device of the app first, then set the rules")
        }
        do {
            try setScopeRules(text, definition: definition, dataset: dataset)
        } catch let problem as ScopeRuleProblem {
            throw ServerError(.invalidArgument, "the rules file: \(problem)", fix: "see docs/scoped-sync.md")
        } catch let refused as ScopeRulesRefused {
            throw ServerError(
                .invalidArgument,
                "the rules do not fit schema \(version) of dataset \(dataset):\n"
                    + refused.problems.map { "  \($0)" }.joined(separator: "\n"),
                fix: "check the file with `ostore-server rules check --dataset \(dataset) FILE`")
        } catch let error as ServerError {
            throw error
        } catch {
            throw ServerError(.storage, "setting the scope rules of dataset \(dataset) failed: \(error)")
        }
    }
}

/// A dataset's scope rules as an operator sees them (``SyncStorage/scopeRules(of:)``).
public struct ScopeRulesSummary: Sendable, Hashable {
    /// Grows by one with every ``SyncStorage/setScopeRules(_:dataset:)``.
    public var version: Int64
    /// The rules file as it was given.
    public var text: String
    public var setAt: Date
}

/// Changes of other servers being observed (``SyncStorage/observeChangesOfOtherServers(_:)``),
/// until this is released.
public protocol ChangeObservation: AnyObject, Sendable {}

extension SyncStorage {
    /// A token for `dataset` that stands for whoever holds it and never expires.
    public func createToken(dataset: String, readOnly: Bool) throws(ServerError) -> CreatedToken {
        try createToken(dataset: dataset, readOnly: readOnly, identity: TokenIdentity())
    }
}

extension SyncStorage {
    /// A storage only this process writes: nothing to observe.
    public func observeChangesOfOtherServers(_ changed: @escaping @Sendable (String?) -> Void)
        -> (any ChangeObservation)?
    {
        nil
    }

    /// A storage that keeps no fingerprints: its cursors carry none (``DatasetState/lastChain`` and
    /// ``LogPage/nextChain`` nil), and are checked by incarnation and newest serial alone.
    public func logChain(dataset: String, serial: Int64) throws(ServerError) -> Int64? { nil }

    /// The protocol's `storeBatch` of a ``BatchJSON``, with the changes' canonical JSON written
    /// here.
    ///
    /// ```swift
    /// let high = try storage.storeBatch(changes, site: site, clientSchema: SchemaVersion(1, 0), dataset: "family")
    /// ```
    public func storeBatch(
        _ changes: [Change], site: SiteID, clientSchema: SchemaVersion, dataset: String, token: String? = nil
    ) throws -> Int64 {
        try storeBatch(try BatchJSON(changes), site: site, clientSchema: clientSchema, dataset: dataset, token: token)
            .acknowledgedThrough
    }

    /// ``storeBatch(_:site:clientSchema:dataset:token:)`` as the operator: no token, so the site's
    /// binding is neither checked nor made.
    ///
    /// ```swift
    /// let high = try storage.storeBatch(try BatchJSON(changes), site: site, clientSchema: version, dataset: "family")
    /// ```
    public func storeBatch(_ batch: BatchJSON, site: SiteID, clientSchema: SchemaVersion, dataset: String) throws
        -> Int64
    {
        try storeBatch(batch, site: site, clientSchema: clientSchema, dataset: dataset, token: nil).acknowledgedThrough
    }
}

/// What ``SyncStorage/storeBatch(_:site:clientSchema:dataset:token:)`` did with a batch.
public struct StoredBatch: Sendable, Hashable {
    /// The site's high-water mark after the batch: what the push is answered.
    public var acknowledgedThrough: Int64
    /// How many of the batch's changes were stored now; the rest were stored before (a replay).
    public var appended: Int

    public init(acknowledgedThrough: Int64, appended: Int) {
        self.acknowledgedThrough = acknowledgedThrough
        self.appended = appended
    }
}

/// A dataset as a hello and a pull see it (``SyncStorage/datasetState(_:site:)``).
public struct DatasetState: Sendable, Hashable {
    /// Made with the dataset and made again when its storage is restored from a backup (nil for a
    /// dataset made before incarnations existed and not restored since). Pull cursors carry it.
    public var incarnation: String?
    /// The serial of the newest change in the log (0 for an empty log). Never below a serial this
    /// storage has handed out in a ``LogPage/nextSerial`` or ``SnapshotPosition/startSerial``: a
    /// cursor past it is refused as one issued before the storage was restored.
    public var lastSerial: Int64
    /// The highest `seq` of the site stored (0 when none is).
    public var siteHighWater: Int64
    /// The fingerprint of the log up to `lastSerial` (``LogChain``; nil for an empty log, or one
    /// whose newest entry was stored before fingerprints were kept).
    public var lastChain: Int64?

    public init(incarnation: String?, lastSerial: Int64, siteHighWater: Int64, lastChain: Int64? = nil) {
        self.incarnation = incarnation
        self.lastSerial = lastSerial
        self.siteHighWater = siteHighWater
        self.lastChain = lastChain
    }
}

extension DatasetState {
    /// A new dataset's incarnation, and a restored one's: 16 random bytes in hexadecimal, the same
    /// for every backend.
    static func newIncarnation() throws(ServerError) -> String {
        try Crypto.randomBytes(16).map { String(format: "%02x", $0) }.joined()
    }
}

public struct DatasetSummary: Sendable, Hashable, Codable {
    public var name: String
    public var schemaVersion: SchemaVersion?
    public var changes: Int64
    /// The highest major the operator lets the dataset move to (``SyncStorage/allowMajor(_:dataset:)``);
    /// nil when none was given.
    public var allowedMajorVersion: Int?
}

public struct CreatedToken: Sendable, Hashable {
    public var id: String
    public var secret: String
    public var dataset: String
    public var readOnly: Bool
}

public struct TokenSummary: Sendable, Hashable, Codable {
    public var id: String
    public var dataset: String
    public var readOnly: Bool
    public var revoked: Bool
    public var subject: String?
    public var expiresAt: Date?
}

/// What a token allows, and whose it is.
public struct TokenGrant: Sendable, Hashable {
    /// The token's id; for a JSON Web Token, its subject's (``subjectTokenID(_:)``): a site binds
    /// to it (``SiteBinding``), so a subject's devices keep their sites across the tokens the
    /// identity provider issues them.
    public var tokenID: String
    public var dataset: String
    public var readOnly: Bool
    /// The user the token stands for, when it names one.
    public var subject: String?
    /// The token's other claims that are strings, numbers or booleans, as text.
    public var claims: [String: String]

    /// Longest subject a token may name.
    public static let maximumSubjectLength = 256
    private static let subjectPrefix = "sub:"

    public init(
        tokenID: String, dataset: String, readOnly: Bool, subject: String? = nil, claims: [String: String] = [:],
        expiresAt: Date? = nil
    ) {
        self.tokenID = tokenID
        self.dataset = dataset
        self.readOnly = readOnly
        self.subject = subject
        self.claims = claims
        self.expiresAt = expiresAt
    }

    /// When the token stops being accepted; nil for one that never expires.
    public var expiresAt: Date?

    /// The token id of every JSON Web Token of `subject`.
    static func subjectTokenID(_ subject: String) -> String { subjectPrefix + subject }

    /// Whether `tokenID` is a subject's (``subjectTokenID(_:)``): never revoked, as no stored
    /// token stands behind it.
    static func isSubjectTokenID(_ tokenID: String) -> Bool { tokenID.hasPrefix(subjectPrefix) }
}

/// Log entries in storage order, each the canonical JSON of its ``Change``, kept as the bytes a
/// pull page splices into its `changes` array: read from storage into one buffer, not decoded into
/// a string each and joined again (more than half of what a log pull did besides SQLite's reads
/// and gzip).
public struct LogPage: Sendable, Hashable {
    /// The entries' JSON, separated by commas.
    public private(set) var joinedEntries: [UInt8]
    /// Where each entry ends in ``joinedEntries``.
    public private(set) var entryEnds: [Int]
    /// Where the next page starts: the last entry's serial, or the log's end when the page was
    /// not full (everything up to it has been seen, including the excluded site's entries).
    public var nextSerial: Int64
    public var hasMore: Bool
    /// The dataset's newest serial when the page was read.
    public var lastSerial: Int64
    /// The fingerprint of the log up to ``nextSerial`` (``LogChain``), which the next cursor
    /// carries; nil for serial 0 or an entry stored before fingerprints were kept.
    public var nextChain: Int64?
    /// The sites whose changes the page carries, a site once per run of its consecutive entries.
    public private(set) var sites: [SiteID]

    /// The number of entries.
    public var count: Int { entryEnds.count }

    /// Whether the page carries a change of `site`: a page read excluding no site is the page
    /// any site it does not carry would read.
    public func carriesChanges(of site: SiteID) -> Bool { sites.contains(site) }

    /// Each entry's JSON as text.
    public var entries: [String] {
        entryEnds.indices.map { index in
            let start = index == 0 ? 0 : entryEnds[index - 1] + 1
            return String(decoding: joinedEntries[start..<entryEnds[index]], as: UTF8.self)
        }
    }
}

extension LogPage {
    /// The entries of a page as storage reads them.
    struct Entries {
        var joined: [UInt8] = []
        var ends: [Int] = []
        var sites: [SiteID] = []

        var count: Int { ends.count }

        /// Appends one entry's JSON, a change of the site whose 16 bytes are `site` (nil for
        /// entries read for their changes alone, not for a page).
        mutating func append(_ json: UnsafeRawBufferPointer, site: UnsafeRawBufferPointer? = nil) {
            if !ends.isEmpty { joined.append(UInt8(ascii: ",")) }
            joined.append(contentsOf: json)
            ends.append(joined.count)
            // Compared in place: a change's site is most often the one of the change before it.
            if let site, sites.last.map({ !$0.bytes.elementsEqual(site) }) ?? true, let id = SiteID(bytes: Data(site)) {
                sites.append(id)
            }
        }
    }

    /// The page of `entries` read after `serial`, at most `limit` of them, the last at
    /// `lastEntrySerial` (`serial` when there is none) with fingerprint `lastEntryChain`, while the
    /// dataset's newest serial was `lastSerial` with fingerprint `lastChain`: a full page resumes
    /// after its last entry, any other after everything (a cursor is never past `lastSerial`).
    init(
        entries: Entries, lastEntrySerial: Int64, lastEntryChain: Int64?, after serial: Int64, limit: Int,
        lastSerial: Int64, lastChain: Int64?
    ) {
        let full = entries.count == limit
        let next = full ? lastEntrySerial : max(lastSerial, serial)
        self.init(
            joinedEntries: entries.joined, entryEnds: entries.ends, nextSerial: next,
            hasMore: full && next < lastSerial,
            lastSerial: lastSerial, nextChain: full ? lastEntryChain : (serial > lastSerial ? nil : lastChain),
            sites: entries.sites)
    }
}

/// Where a snapshot read stands: the log serial it started at (the log phase resumes from it)
/// and the last row emitted, in (table, key) order.
public struct SnapshotPosition: Sendable, Hashable, Codable {
    public var startSerial: Int64
    public var table: String?
    public var key: String?
    public var rowsDone: Int64
    public var rowsTotal: Int64
}

public struct SnapshotPage: Sendable, Hashable {
    public var changes: [Change]
    public var position: SnapshotPosition
    public var isLast: Bool
}
