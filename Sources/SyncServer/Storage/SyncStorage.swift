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
    /// Makes a token for `dataset`; the secret is in the result and nowhere else.
    func createToken(dataset: String, readOnly: Bool) throws(ServerError) -> CreatedToken
    func revokeToken(id: String) throws(ServerError)
    func tokens() throws(ServerError) -> [TokenSummary]

    // MARK: Serving

    /// Throws ``ServerError`` (kind `unavailable`) when the storage cannot serve requests now.
    func checkHealth() throws(ServerError)

    /// The grant of the unrevoked token whose SHA-256 digest is `digest`, or nil.
    func grant(forTokenDigest digest: Data) throws(ServerError) -> TokenGrant?
    /// The newest schema version the dataset has seen (nil when no client has joined).
    func schemaVersion(of dataset: String) throws(ServerError) -> SchemaVersion?
    /// Records that a client with this schema joined. A version newer than the dataset's newest
    /// moves the dataset to it when `mayMoveDataset`. Throws `ErrorBody(.schemaConflict)` when the
    /// version is known with another fingerprint.
    func recordSchema(_ schema: SchemaDescription, dataset: String, mayMoveDataset: Bool) throws -> SchemaVersion?
    /// Stores the changes of `site` not stored yet (those with a `seq` above the site's high-water
    /// mark), all or nothing, after checking inside the same transaction that the dataset still
    /// accepts `clientSchema`'s major version (else `ErrorBody(.upgradeRequired)`). Returns the
    /// site's new high-water mark. `batch` holds the changes with their canonical JSON (the log's
    /// bodies and the state's keys), made before any lock is taken.
    func storeBatch(_ batch: BatchJSON, site: SiteID, clientSchema: SchemaVersion, dataset: String)
        throws -> Int64
    /// Up to `limit` log entries after `serial`, leaving out `site`'s own.
    func readLog(dataset: String, after serial: Int64, excluding site: SiteID, limit: Int) throws(ServerError)
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
    /// Waits until `site`'s high-water mark in `dataset` is at least `seq` or `deadline` passes,
    /// outside any transaction, and returns whether it is: a push naming the batch before it
    /// (``PushRequest/after``) is stored only after that batch. The default asks
    /// ``datasetState(_:site:)`` again after a pause growing from 1 to 20 ms, which sees the
    /// commits of every server sharing the storage; a storage that knows when its own commits land
    /// wakes at once.
    ///
    /// ```swift
    /// let ready = try storage.waitForHighWater(46, site: site, dataset: "family", until: .now + .seconds(3))
    /// ```
    func waitForHighWater(_ seq: Int64, site: SiteID, dataset: String, until deadline: ContinuousClock.Instant)
        throws(ServerError) -> Bool
}

extension SyncStorage {
    /// A storage that keeps no fingerprints: its cursors carry none (``DatasetState/lastChain`` and
    /// ``LogPage/nextChain`` nil), and are checked by incarnation and newest serial alone.
    public func logChain(dataset: String, serial: Int64) throws(ServerError) -> Int64? { nil }

    public func waitForHighWater(
        _ seq: Int64, site: SiteID, dataset: String, until deadline: ContinuousClock.Instant
    ) throws(ServerError) -> Bool {
        var pause = Duration.milliseconds(1)
        while try datasetState(dataset, site: site).siteHighWater < seq {
            let now = ContinuousClock.now
            guard now < deadline else { return false }
            Thread.sleep(forTimeInterval: min(pause, deadline - now).inSeconds)
            pause = min(pause * 2, .milliseconds(20))
        }
        return true
    }

    /// The protocol's `storeBatch` of a ``BatchJSON``, with the changes' canonical JSON written
    /// here.
    ///
    /// ```swift
    /// let high = try storage.storeBatch(changes, site: site, clientSchema: SchemaVersion(1, 0), dataset: "family")
    /// ```
    public func storeBatch(_ changes: [Change], site: SiteID, clientSchema: SchemaVersion, dataset: String) throws
        -> Int64
    {
        try storeBatch(try BatchJSON(changes), site: site, clientSchema: clientSchema, dataset: dataset)
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
}

/// What a token allows.
public struct TokenGrant: Sendable, Hashable {
    public var tokenID: String
    public var dataset: String
    public var readOnly: Bool
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

    /// The number of entries.
    public var count: Int { entryEnds.count }

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

        var count: Int { ends.count }

        /// Appends one entry's JSON.
        mutating func append(_ json: UnsafeRawBufferPointer) {
            if !ends.isEmpty { joined.append(UInt8(ascii: ",")) }
            joined.append(contentsOf: json)
            ends.append(joined.count)
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
            lastSerial: lastSerial, nextChain: full ? lastEntryChain : (serial > lastSerial ? nil : lastChain))
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
