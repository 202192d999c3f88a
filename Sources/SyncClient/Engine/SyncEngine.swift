import Foundation
import OfflineStore
import SyncProtocol

/// Syncs one store with one dataset on a server: negotiate, push the change log in batches,
/// pull and apply until caught up, remember the cursor. Every step is resumable: a crash or kill
/// at any point is followed by a sync that completes with nothing lost and nothing applied twice
/// (pushes are idempotent per site and sequence, applying is idempotent, and the cursor is saved
/// only with its page, in the page's transaction, or after it).
///
/// While it pulls, a thread of its own copies the WAL into the database files (see
/// ``OfflineStoreSQLite/Database/withBackgroundCheckpoints(walBoundPages:_:)``); `sync()` joins it
/// before it returns.
///
/// An engine over one `Database` is not `Sendable`: it uses the connection on the caller's
/// thread. An engine over a ``OfflineStoreSQLite/DatabasePool`` (``init(pool:log:transport:configuration:)``)
/// takes the pool's writer for each step that writes, reads the queue on a reader, and offers an
/// `async` sync. An engine's syncs run one at a time (a sync started from a callback of another
/// waits for it forever: start it after that sync returns).
///
/// ```swift
/// let db = try Database(path: path)
/// let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
/// let engine = SyncEngine(
///     db: db, log: log, transport: try HTTPClient(),
///     configuration: .init(server: URL(string: "https://sync.example.com")!, dataset: "family", token: token))
/// let report = try engine.sync()
/// ```
///
/// See `Protocol/README.md` for the messages and rules.
public final class SyncEngine {
    public struct Configuration: Sendable {
        public var server: URL
        public var dataset: String
        /// The bearer token; sent in a header, never logged or shown in errors.
        public var token: String
        /// Gives the bearer token for each request, when set, in place of ``token``: for tokens
        /// that expire and are renewed meanwhile (JSON Web Tokens of the app's identity provider).
        /// Called before every attempt of every request, on the engine's threads; keep it fast
        /// (return a token held in memory, renewed elsewhere).
        ///
        /// ```swift
        /// configuration.tokenProvider = { session.currentAccessToken }
        /// ```
        public var tokenProvider: (@Sendable () -> String)?
        /// Changes per push, at most the server's `maxChangesPerPush` (and fewer when their body
        /// would exceed its `maxBodyBytes`). Each push is a commit on the server, with an fsync:
        /// 5,000 took a third less server CPU per change than 1,000.
        public var pushBatchSize = 5_000
        /// Batches sent and not yet answered, at most: the next batch goes out while the server
        /// stores the last, each on its own connection, and the server keeps them in order (it
        /// stores one only after the batch it follows, `after` in the push). Only with a server
        /// of protocol version 2 that announces `maxPushesInFlight` in its limits, and a transport
        /// that runs as many requests at once (``SyncTransport/maxConcurrentRequests``): the
        /// lowest of the three counts; 1 sends each batch once the one before is answered. With
        /// two in flight a batch does not wait for the round trip of the one before, which counts
        /// most on a network with a real round trip.
        ///
        /// A sync that fails with a batch in flight behind the failed one returns once the server
        /// has given up waiting for it (2 s with `ostore-server`).
        public var pushesInFlight = 2
        /// Changes per pull page, at most the server's `maxChangesPerPull`. Each page is applied in
        /// a transaction with the pages received meanwhile (see ``pullTransactionChanges``); two
        /// pages are in memory at once (the one applied and the next).
        public var pullPageSize = 5_000
        /// Pages already received while one applies join its transaction while it holds fewer
        /// than this many changes and has been open less than ``pullTransactionTimeLimit``: each
        /// commit writes every page its changes dirtied to the WAL, and random keys dirty most of an
        /// index whatever the batch's size, so fewer commits write less (`ostore-bench sync`,
        /// 100,000 pulled inserts in pages of 5,000, alternating: 1.4–1.9 s of client CPU with a
        /// transaction per page, 1.0–1.25 s joined up to 40,000). A crash loses at most that much
        /// progress: the cursor is saved with the pages it covers, and they are pulled again. 0, or
        /// an ``afterApplyingChanges`` step, applies each page in a transaction of its own.
        public var pullTransactionChanges = 40_000
        /// No page joins a pull's transaction after it has been open this long: the app's own
        /// writers wait for its commit (up to their busy timeout), so this bounds their wait to
        /// about this plus one page's apply.
        public var pullTransactionTimeLimit = Duration.milliseconds(500)
        public var retry = RetryPolicy()

        public init(server: URL, dataset: String, token: String) {
            self.server = server
            self.dataset = dataset
            self.token = token
        }
    }

    /// The store's connection, or its pool, whose writer each step takes only for that step.
    private let storage: EngineStorage
    private let logHandler: (any LogHandler)?
    let log: ChangeLog
    let transport: any SyncTransport
    let requests: SyncRequests
    public let configuration: Configuration
    let site: SiteID
    /// What this store announces; its schema is fixed for the engine's life, and the fingerprint
    /// hashes the whole schema text, so it is made once.
    let announcedSchema: SchemaDescription
    /// Runs after each pulled page is applied, on the same connection: where an app keeps what it
    /// derives from synced columns in step (a derived column, a search index), also for changes
    /// made by older releases that do not know the derived column. Its writes are recorded and
    /// pushed like any local write.
    public var afterApplyingChanges: ((Database) throws -> Void)?
    /// The version this sync's hello chose; push and pull bodies name it.
    private var protocolVersion = 1
    /// Held by each sync: an engine's syncs run one at a time.
    private let syncs = NSLock()

    /// An engine over one connection, which it uses on the thread calling ``sync(progress:)``.
    public convenience init(
        db: Database, log: ChangeLog, transport: any SyncTransport, configuration: Configuration
    ) {
        self.init(
            storage: .connection(db), logHandler: db.configuration.logHandler, log: log, transport: transport,
            configuration: configuration)
    }

    /// An engine over a pool: each step of a sync that writes takes the pool's writer for that step
    /// only (a page's apply, the cursor's save), and the queue is read on a reader, so the app
    /// writes through the same pool while the engine waits for the network; the `async`
    /// ``sync(progress:)`` runs a sync off the caller's task. `log` is the change log opened on the
    /// pool's writer.
    ///
    /// ```swift
    /// let pool = try DatabasePool(path: path)
    /// let log = try pool.writeWithoutTransaction { db in try ChangeLog.open(db, migrator: migrator) }
    /// let engine = SyncEngine(pool: pool, log: log, transport: try HTTPClient(), configuration: configuration)
    /// let report = try await engine.sync()
    /// ```
    public convenience init(
        pool: DatabasePool, log: ChangeLog, transport: any SyncTransport, configuration: Configuration
    ) {
        self.init(
            storage: .pool(pool), logHandler: pool.readerConfiguration.logHandler, log: log,
            transport: transport, configuration: configuration)
    }

    private init(
        storage: EngineStorage, logHandler: (any LogHandler)?, log: ChangeLog, transport: any SyncTransport,
        configuration: Configuration
    ) {
        self.storage = storage
        self.logHandler = logHandler
        self.log = log
        self.transport = transport
        self.configuration = configuration
        requests = SyncRequests(transport: transport, configuration: configuration)
        site = SiteID(bytes: log.identity.siteID)!
        announcedSchema = SchemaDescription(log.schema)
    }

    /// The key of this server and dataset in the store's sync state.
    public var endpoint: String {
        configuration.server.absoluteString + "#" + configuration.dataset
    }

    /// The store's sync state for this endpoint (cursor, last sync, last error).
    public func state() throws(SyncError) -> SyncState {
        try store { db in try log.syncState(db, endpoint: endpoint) }
    }

    /// One complete sync. On failure the error is also remembered in the sync state.
    @discardableResult
    public func sync(progress: ((SyncProgress) -> Void)? = nil) throws(SyncError) -> SyncReport {
        try sync(waitingForChanges: nil, progress: progress)
    }

    /// One complete sync, awaited. An engine over a pool runs it on a thread of its own: the
    /// caller's task waits without holding a thread of Swift's concurrency pool, and the app keeps
    /// writing through the pool meanwhile. An engine over one `Database` runs it on the calling
    /// task's thread, as ``sync(progress:)-swift.method`` does, since that connection is its caller's.
    ///
    /// ```swift
    /// let report = try await engine.sync()
    /// ```
    @discardableResult
    public func sync(progress: (@Sendable (SyncProgress) -> Void)? = nil) async throws(SyncError) -> SyncReport {
        guard case .pool = storage else { return try sync(waitingForChanges: nil, progress: progress) }
        // Over a pool, the engine reaches the store only through the pool, which any thread may
        // use, and its own state only inside a sync, and its syncs run one at a time (`syncs`).
        nonisolated(unsafe) let engine = self
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<SyncReport, SyncError>, Never>) in
            let work: @Sendable () -> Void = {
                continuation.resume(
                    returning: Result { () throws(SyncError) -> SyncReport in
                        try engine.sync(waitingForChanges: nil, progress: progress)
                    })
            }
            if !DetachedThread.start(named: "ostore-sync", work) { DispatchQueue.global().async(execute: work) }
        }
        return try result.get()
    }

    /// One complete sync whose pull, once this store is caught up, waits at the server until
    /// another site's change is stored, `wait`'s timeout passes or its `shouldStop` says so (a
    /// live pull, `Protocol/README.md` section 10.5); the changes that came are applied before it
    /// returns. ``SyncReport/liveWait`` says how the wait ended: a server that does not hold pulls
    /// is pulled without waiting (``LiveWaitOutcome/notOffered``), and the caller polls.
    ///
    /// ```swift
    /// let report = try engine.sync(waitingForChanges: LiveWait(timeout: .seconds(20)))
    /// print("\(report.pulled) changes arrived")
    /// ```
    @discardableResult
    public func sync(waitingForChanges wait: LiveWait?, progress: ((SyncProgress) -> Void)? = nil) throws(SyncError)
        -> SyncReport
    {
        syncs.lock()
        defer { syncs.unlock() }
        var state = try state()
        do {
            var report = SyncReport()
            let hello = try negotiate()
            report.verdict = hello.verdict
            report.protocolVersion = hello.protocolVersion
            report.datasetSchemaVersion = hello.datasetSchemaVersion
            state.protocolVersion = hello.protocolVersion
            state.datasetSchemaVersion = hello.datasetSchemaVersion?.description
            try check(hello)
            protocolVersion = hello.protocolVersion ?? 1
            try recoverLostPushes(hello, state: &state, report: &report)
            try push(limits: hello.limits, state: &state, report: &report)
            report.livePullsOffered = LiveWait.isOffered(protocolVersion: protocolVersion, limits: hello.limits)
            let live = wait.flatMap { wait in
                LiveWait.milliseconds(wait.timeout, protocolVersion: protocolVersion, limits: hello.limits).map {
                    (milliseconds: $0, wait: wait)
                }
            }
            if wait != nil && live == nil { report.liveWait = .notOffered }
            try pull(state: &state, limits: hello.limits, live: live, report: &report, progress: progress)
            report.stashed = try store { db in try log.stashedCount(db) }
            state.lastSyncAt = Date()
            state.lastError = nil
            try store { db in try log.save(state, db) }
            return report
        } catch {
            state.lastError = error.description
            try? store { db in try log.save(state, db) }
            throw error
        }
    }

    // MARK: Steps

    private func negotiate() throws(SyncError) -> HelloResponse {
        return try requests.exchange("hello", HelloRequest(site: site, schema: announcedSchema))
    }

    /// Stops the sync unless the verdict lets it go on (the state keeps what the hello said).
    private func check(_ hello: HelloResponse) throws(SyncError) {
        switch hello.verdict {
        case .compatible, .newerSchemaAvailable:
            return
        case .upgradeRequired:
            throw SyncError(
                .upgradeRequired, hello.message, requiredMajorVersion: hello.requiredMajorVersion)
        case .protocolUnsupported:
            throw SyncError(
                .protocolUnsupported,
                "the server speaks protocol versions \(hello.supportedProtocolVersions), this client "
                    + "\(ProtocolVersion.supported); update the app or the server")
        }
    }

    /// A server that acknowledged more of this site's changes than it now has (it was restored from
    /// a backup, or lost its last commits in a power cut) has lost them, and numbers the changes it
    /// stores next with serials this store's cursor has already passed: the lost changes are queued
    /// again and the cursor dropped, so this sync pushes them again and downloads the dataset again.
    private func recoverLostPushes(_ hello: HelloResponse, state: inout SyncState, report: inout SyncReport)
        throws(SyncError)
    {
        guard let stored = hello.acknowledgedThrough, stored < state.acknowledgedThrough else { return }
        let lost = state.acknowledgedThrough
        report.requeued = try store { db in try log.requeuePushes(after: stored, endpoint: endpoint, db) }
        state.acknowledgedThrough = stored
        state.cursor = nil
        state.downloadReplacesRows = true
        report.redownloaded = true
        try store { db in
            try db.transaction(.immediate) { db in
                try log.forgetDownloadedRows(db)
                try log.save(state, db)
            }
        }
        logMessage(
            .warning,
            "the server has lost changes it had acknowledged (restored from a backup?): pushing them again and "
                + "downloading the dataset again",
            ["acknowledgedThrough": "\(lost)", "serverHas": "\(stored)", "requeued": "\(report.requeued)"])
    }

    private func push(limits: Limits, state: inout SyncState, report: inout SyncReport) throws(SyncError) {
        let batchSize = max(1, min(configuration.pushBatchSize, limits.maxChangesPerPush))
        // Only a server of protocol version 2 refuses a push whose `after` it would ignore.
        let depth =
            protocolVersion >= ProtocolVersion.pushesInOrder
            ? max(1, min(configuration.pushesInFlight, limits.pushesInFlight, transport.maxConcurrentRequests)) : 1
        // Batches on their way to the server (sent and answered on other threads), oldest first,
        // while the next one is read from the log and encoded, so the store and the server work
        // at the same time.
        var inFlight: [(answer: Prefetch<PushResponse>, changes: [PendingEntry])] = []
        // Batches sent after one the server did not take whole: their answers say nothing the
        // next read of the log does not (the server stores one only after the batch it follows,
        // and then nothing twice). Ended before this returns, so nothing uses the transport after.
        var dropped: [Prefetch<PushResponse>] = []
        defer {
            for answer in dropped { answer.abandon() }
        }
        // Where the next read starts: after the batches in flight; nil, after the last acknowledged.
        var readAfter: Int64?
        do throws(SyncError) {
            while true {
                var next = try readQueue { db in
                    try log.pendingChanges(db, after: readAfter, limit: batchSize) { $0 }
                }
                // Stamped while this machine's clock ran ahead: the server would refuse it, and
                // every change written after it carries a clock as far ahead. Re-stamped and moved
                // to the end of the queue (after the batches in flight), then read again.
                let bound = log.clock.driftBound
                if next.contains(where: { $0.clock > bound }) {
                    let restamped = try store { db in try log.restampClocksAhead(db) }
                    report.restamped += restamped
                    if restamped > 0 { continue }
                }
                // Encoded before waiting for a batch in flight, so this work too is done while
                // the server stores that one. A batch of wide rows is halved until the server's
                // body limit takes it (one change still too large is kept as refused, below).
                //
                // `after`: the server stores it only after the newest batch in flight. Settling
                // that one below does not make it wrong: it then names a change the server has
                // stored. Left out for one batch at a time, which a server of any release takes.
                let after = depth > 1 ? inFlight.last?.changes.last?.sequence : nil
                var body = try encodePush(next, after: after)
                while body.count > limits.maxBodyBytes, next.count > 1 {
                    next.removeLast(next.count / 2)
                    body = try encodePush(next, after: after)
                }
                let fits = body.count <= limits.maxBodyBytes
                // A batch the server took whole, settled only once the next one is on its way.
                var taken: (changes: [PendingEntry], answer: Result<PushResponse, SyncError>)?
                if let sent = inFlight.first, inFlight.count >= depth || next.isEmpty || !fits {
                    inFlight.removeFirst()
                    let answer = Result { () throws(SyncError) -> PushResponse in try sent.answer.value() }
                    if case .success(let ack) = answer, ack.acknowledgedThrough >= (sent.changes.last?.sequence ?? 0),
                        !next.isEmpty, fits
                    {
                        // Settling (marking it pushed and saving the state, a write transaction)
                        // waits until the next batch is sent, so the server is not idle meanwhile.
                        // A crash in between pushes both again; the server stores nothing twice
                        // (it keeps each site's highest seq) and acknowledges them again.
                        taken = (sent.changes, answer)
                    } else {
                        guard try settle(sent.changes, answer: answer, state: &state, report: &report) else {
                            // Part of the batch is still queued (a change refused, a partial
                            // acknowledgement, the batch before it missing): read again from the
                            // log, as a sync without the read-ahead would.
                            for later in inFlight { later.answer.cancel() }
                            dropped += inFlight.map(\.answer)
                            inFlight.removeAll()
                            readAfter = nil
                            continue
                        }
                        // Nothing more to send, or a change that cannot be sent: every batch
                        // before it is settled first, then the log read again.
                        if !inFlight.isEmpty { continue }
                    }
                }
                if !fits {
                    // The server would answer 413 to this change whatever the batch, so sending it
                    // would block every change queued after it, sync after sync. It is kept with
                    // the reason, as a change the server refused is; what precedes it is settled.
                    try keepRefused(
                        Change(next[0], site: site), code: ErrorCode.bodyTooLarge.rawValue,
                        reason: "the change alone is \(body.count) bytes as a push, more than the server takes "
                            + "(\(limits.maxBodyBytes) bytes, its --max-body-bytes); store large values elsewhere "
                            + "or raise the server's limit, then write the row again",
                        report: &report)
                    readAfter = nil
                    continue
                }
                guard let last = next.last else { return }
                inFlight.append((send(body), next))
                readAfter = last.sequence
                if let taken {
                    _ = try settle(taken.changes, answer: taken.answer, state: &state, report: &report)
                }
            }
        } catch {
            // All told first, so none retries while an earlier one is waited for.
            for sent in inFlight { sent.answer.cancel() }
            for sent in inFlight { sent.answer.abandon() }
            throw error
        }
    }

    private func encodePush(_ changes: [PendingEntry], after: Int64? = nil) throws(SyncError) -> Data {
        try PushBody.encode(
            changes, schemaVersion: announcedSchema.version, site: site, protocolVersion: protocolVersion, after: after)
    }

    /// Sends an encoded push on another thread.
    private func send(_ body: Data) -> Prefetch<PushResponse> {
        let requests = requests
        return Prefetch { (isCancelled) throws(SyncError) -> PushResponse in
            try requests.exchange("push", body: body, isCancelled: isCancelled)
        }
    }

    /// Marks what the server acknowledged of `batch`; when it refused one change (a 400 naming
    /// it, or a 403 `out_of_scope`), pushes those before it, keeps it with the server's reason, and leaves the rest for the
    /// next read; when it stored none of it because the batch before was missing
    /// (`previous_push_missing`), leaves it all. Returns whether the whole batch is acknowledged.
    private func settle(
        _ batch: [PendingEntry], answer first: Result<PushResponse, SyncError>, state: inout SyncState,
        report: inout SyncReport
    ) throws(SyncError) -> Bool {
        var changes = batch
        var answer = first
        while true {
            switch answer {
            case .success(let ack):
                // The server's acknowledgement is kept with the queue's: a later hello that reports
                // less tells that the server lost them (see recoverLostPushes).
                state.acknowledgedThrough = max(state.acknowledgedThrough, ack.acknowledgedThrough)
                try store { db in
                    try db.transaction(.immediate) { [state] db in
                        try log.markPushed(db, upTo: ack.acknowledgedThrough)
                        try log.save(state, db)
                    }
                }
                report.pushed += changes.count
                return changes.count == batch.count && ack.acknowledgedThrough >= (batch.last?.sequence ?? 0)
            case .failure(let error):
                // The batch sent before it was not stored in time (refused, or slow): nothing of
                // this one was either; the next read of the log sends it again.
                if error.code == .previousPushMissing { return false }
                // A 413 for a push of one change names that change as a 400 does (the server's
                // limit went down since the hello announced it).
                let named = error.status == 413 && changes.count == 1 ? 0 : error.changeIndex
                // A change outside the writer's scope (403 out_of_scope) is named as a 400 names one.
                guard error.kind == .server, error.status == 400 || error.status == 413 || error.code == .outOfScope,
                    let index = named, changes.indices.contains(index)
                else { throw error }
                guard index == 0 else {
                    changes = Array(changes.prefix(index))
                    let prefix = changes
                    answer = Result { () throws(SyncError) -> PushResponse in try send(encodePush(prefix)).value() }
                    continue
                }
                try keepRefused(
                    Change(changes[0], site: site), code: error.code?.rawValue ?? "?", reason: error.message,
                    report: &report)
                // What followed it comes in the next round, read again from the log.
                return false
            }
        }
    }

    /// Keeps `refused`, the oldest change still queued, in the refused-changes table with the
    /// reason, and takes it off the queue so the changes after it can be pushed.
    private func keepRefused(
        _ refused: Change, code: String, reason: String, report: inout SyncReport
    ) throws(SyncError) {
        try store { db in
            try db.transaction(.immediate) { db in
                try log.recordRefusedOutgoing(
                    RefusedOutgoingChangeRecord(
                        refusedAt: Date(), code: code, reason: reason,
                        change: String(decoding: try ProtocolJSON.encode(refused), as: UTF8.self)),
                    db)
                try log.markPushed(db, upTo: refused.seq)
            }
        }
        report.refusedOutgoing += 1
    }

    private func pull(
        state: inout SyncState, limits: Limits, live: (milliseconds: Int, wait: LiveWait)?, report: inout SyncReport,
        progress: ((SyncProgress) -> Void)?
    ) throws(SyncError) {
        let requests = requests
        let log = log
        let pageSize = max(1, min(configuration.pullPageSize, limits.maxChangesPerPull))
        let request = PullRequest(
            protocolVersion: protocolVersion, schemaVersion: announcedSchema.version, site: site,
            cursor: state.cursor, limit: pageSize)
        // A page comes with its changes already in the store's terms (and without the wire's copy
        // of them) and prepared for the apply (ChangeLog.prepare), on the thread that read it, not
        // on the one applying the page before, which holds the write lock. Each page is logged
        // (debug) when asked for and once it is ready or has failed, on the thread that read it:
        // whether it joins the transaction of the page applying then depends on that moment.
        let handler = logHandler
        let endpoint = endpoint
        let site = site
        func fetch(after cursor: String?, limit: Int, wait: Int?, replacing: Bool) -> Prefetch<PulledPage> {
            var resumed = request
            resumed.cursor = cursor
            resumed.limit = limit
            resumed.wait = wait
            let asked = resumed
            Self.log(to: handler, endpoint: endpoint, .debug, "asking for a pull page", ["limit": "\(limit)"])
            return Prefetch(
                { (isCancelled) throws(SyncError) -> PulledPage in
                    var page = try requests.exchange(
                        "pull", asked, read: MessageReader.readPullPage, isCancelled: isCancelled,
                        givesUpTransfer: asked.wait != nil)
                    // Converted from the last, each wire change freed as soon as it is converted, so
                    // the page is not held twice at its peak.
                    var wire = page.changes
                    page.changes = []
                    var changes: [IncomingChange] = []
                    changes.reserveCapacity(wire.count)
                    while let change = wire.popLast() { changes.append(IncomingChange(change)) }
                    changes.reverse()
                    // Only a dataset with rules names the rows that leave, and only its download may
                    // replace what the store holds.
                    let replaces =
                        replacing && page.phase == .snapshot && page.removed != nil
                        ? ReplacingDownloadPage(isLast: !page.hasMore) : nil
                    return (
                        page,
                        log.prepare(
                            changes, leaving: page.removed.map { Self.leavingRows($0, log: log, site: site) },
                            replacing: replaces)
                    )
                },
                ended: { outcome in
                    switch outcome {
                    case .success(let (page, changes)):
                        Self.log(
                            to: handler, endpoint: endpoint, .debug, "pull page ready",
                            ["changes": "\(changes.count)", "hasMore": "\(page.hasMore)"])
                    case .failure(let error):
                        Self.log(
                            to: handler, endpoint: endpoint, .debug, "pull page failed", ["reason": error.message])
                    }
                })
        }
        switch storage {
        case .connection(let db):
            // The pages' checkpoints are made on a thread of their own, which ends before this returns.
            try db.withBackgroundCheckpoints { (checkpointer) throws(SyncError) in
                try applyPages(
                    from: fetch, pageSize: pageSize, live: live, state: &state, report: &report, progress: progress,
                    committed: { checkpointer?.walGrew() })
            }
        case .pool:
            // The thread's settings live on the writer for the whole pull, which the app shares:
            // the writer's own automatic checkpoints copy the WAL.
            try applyPages(
                from: fetch, pageSize: pageSize, live: live, state: &state, report: &report, progress: progress,
                committed: {})
        }
    }

    /// A pull page, and its changes in the store's terms, prepared for the apply.
    private typealias PulledPage = (page: PullResponse, changes: PreparedChanges)

    /// The rows a page names as having left the scope, in the store's terms. This store's changes
    /// of them that were never pushed are kept as refused outgoing changes (`out_of_scope`), in
    /// the page's transaction: the server would refuse them, and their row is gone.
    private static func leavingRows(_ removed: [RemovedRow], log: ChangeLog, site: SiteID) -> LeavingRows {
        LeavingRows(
            rows: removed.map { LeavingRow(table: $0.table, primaryKey: $0.key.mapValues(\.databaseValue)) },
            keepUnpushed: { entry, db in
                try log.recordRefusedOutgoing(
                    RefusedOutgoingChangeRecord(
                        refusedAt: Date(), code: ErrorCode.outOfScope.rawValue,
                        reason: "the row left your read scope before this change was pushed; "
                            + "it is kept here and was not sent",
                        change: String(decoding: try ProtocolJSON.encode(Change(entry, site: site)), as: UTF8.self)),
                    db)
            })
    }

    /// The first page a sync asks for: the store waits for it with nothing to do, and a large page
    /// takes tens of milliseconds to be read, compressed, sent and decoded. Each next page is asked
    /// for twice as large, up to the configured size, so it is ready by the time the smaller page
    /// before it is applied.
    public static let firstPullPageSize = 1_000

    /// Pulls the pages after `state.cursor` (each asked for with `fetch` while the one before it
    /// applies) and applies them, calling `committed` after each commit but the last. With `live`,
    /// the first page is asked to wait (`wait` milliseconds) while the store is caught up.
    private func applyPages(
        from fetch: (_ cursor: String?, _ limit: Int, _ wait: Int?, _ replacing: Bool) -> Prefetch<PulledPage>,
        pageSize: Int,
        live: (milliseconds: Int, wait: LiveWait)?, state: inout SyncState, report: inout SyncReport,
        progress: ((SyncProgress) -> Void)?, committed: () -> Void
    ) throws(SyncError) {
        var total: Int?
        var limit = min(Self.firstPullPageSize, pageSize)
        var next = fetch(state.cursor, limit, live?.milliseconds, state.downloadReplacesRows)
        var isWaiting = live != nil
        var joinsPages = true
        while true {
            if isWaiting, let live {
                // The server holds the pull while nothing is new; the caller may give it up meanwhile.
                while !next.wait(upTo: live.wait.checkInterval) {
                    guard live.wait.shouldStop() else { continue }
                    next.abandon()
                    report.liveWait = .stopped
                    return
                }
            }
            let page: PullResponse
            // Optional, so that the transaction's first batch alone holds them (below).
            var changes: PreparedChanges?
            switch Result(catching: { () throws(SyncError) -> PulledPage in try next.value() }) {
            case .success(let answer):
                page = answer.page
                changes = answer.changes
                if isWaiting { report.liveWait = .answered }
                isWaiting = false
            case .failure(let error) where isWaiting && error.code == .tooManyWaitingPulls:
                // Pulled without waiting; the caller polls for a while.
                report.liveWait = .refused
                isWaiting = false
                next = fetch(state.cursor, limit, nil, state.downloadReplacesRows)
                continue
            case .failure(let error):
                isWaiting = false
                // The server can no longer serve the cursor (restored from a backup, or another
                // server at this address): drop it and download the dataset again, once per sync.
                // Applying what this store already has changes nothing.
                guard error.code == .invalidCursor, state.cursor != nil, !report.redownloaded else { throw error }
                state.cursor = nil
                state.downloadReplacesRows = true
                report.redownloaded = true
                try store { db in
                    try db.transaction(.immediate) { db in
                        try log.forgetDownloadedRows(db)
                        try log.save(state, db)
                    }
                }
                logMessage(
                    .warning, "the server refused the pull cursor; downloading the dataset again",
                    ["reason": error.message])
                next = fetch(nil, limit, nil, true)
                continue
            }
            // The next page is asked for (and read) on another thread while this one is applied, so
            // the server, the network and the store work at the same time.
            if page.hasMore {
                limit = min(2 * limit, pageSize)
                next = fetch(page.cursor, limit, nil, changes?.replacing != nil)
            }
            // The pages applied together (this one, and those already received meanwhile) and the
            // state once they have committed; `state` itself moves only then, so a failure leaves
            // it at what the store holds.
            var last = page
            var applied = state
            applied.cursor = page.cursor
            // Saved with the page: a download resumed by a later sync goes on replacing.
            applied.downloadReplacesRows = changes?.replacing.map { !$0.isLast } ?? false
            var pulled = changes?.count ?? 0
            do throws(SyncError) {
                if changes?.isEmpty ?? true {
                    try store { db in try log.save(applied, db) }
                } else if let afterApplyingChanges, let changes {
                    // The app's step runs after each page, on what that page committed: one page
                    // per transaction. The cursor is saved after the step, so that a failing step
                    // leaves the page to be pulled and applied again (which changes nothing already
                    // applied) and the step to run again.
                    // The end of a replacing download commits with the rows it removed, the cursor
                    // still before the page: applied again after a failing step, the page removes
                    // nothing more.
                    var ended = state
                    ended.downloadReplacesRows = false
                    let outcome = try store { db in
                        try log.apply(changes, to: db) { db in
                            if changes.replacing?.isLast == true { try self.log.save(ended, db) }
                        }
                    }
                    if page.hasMore { committed() }
                    report.refusedIncoming += outcome.refused.count
                    report.removed += outcome.removed
                    try store { db in try db.transaction(.immediate) { db in try afterApplyingChanges(db) } }
                    try store { db in try log.save(applied, db) }
                } else {
                    // Held by the transaction's first batch alone: not kept while later pages apply.
                    var first = changes
                    changes = nil
                    let started = ContinuousClock.now
                    // Each page's cursor is saved with its changes; nil: the pages were rolled back.
                    let outcome = try store { db -> ApplyOutcome? in
                        do {
                            return try log.apply(
                                preparedBatches: { () -> PreparedChanges? in
                                    if let batch = first {
                                        first = nil
                                        return batch
                                    }
                                    // The next page joins the transaction only when it is already
                                    // here (the write lock is never held waiting for the network),
                                    // and while the transaction stays short for the app's writers.
                                    guard joinsPages, last.hasMore, pulled < configuration.pullTransactionChanges,
                                        ContinuousClock.now - started < configuration.pullTransactionTimeLimit,
                                        next.isReady,
                                        case .success(let (ready, readyChanges)) = Result(catching: {
                                            () throws(SyncError) -> PulledPage in try next.value()
                                        }),
                                        !readyChanges.isEmpty
                                    else { return nil }
                                    if ready.hasMore {
                                        limit = min(2 * limit, pageSize)
                                        next = fetch(ready.cursor, limit, nil, readyChanges.replacing != nil)
                                    }
                                    last = ready
                                    applied.cursor = ready.cursor
                                    applied.downloadReplacesRows = readyChanges.replacing.map { !$0.isLast } ?? false
                                    pulled += readyChanges.count
                                    return readyChanges
                                }, to: db, afterEach: { db in try log.save(applied, db) })
                        } catch let error as ChangeLogError {
                            guard error.kind == .batchesRolledBack else { throw error }
                            return nil
                        }
                    }
                    guard let outcome else {
                        // A page that joined could not be applied whole, and only a page applied
                        // alone is applied again change by change: nothing of these pages
                        // committed. They are pulled again from the cursor the store holds, each
                        // page in its own transaction for the rest of this sync.
                        if last.hasMore { next.abandon() }
                        joinsPages = false
                        logMessage(.debug, "pages applied together were rolled back; applying each page alone", [:])
                        next = fetch(state.cursor, limit, nil, state.downloadReplacesRows)
                        continue
                    }
                    // The last page's WAL is left to the connection's own automatic checkpoint (at
                    // the app's next commit): copying it here would hold sync() for one more round,
                    // with its fsyncs.
                    if last.hasMore { committed() }
                    report.refusedIncoming += outcome.refused.count
                    report.removed += outcome.removed
                }
            } catch {
                if last.hasMore { next.abandon() }
                // What committed may be ahead of `state` (the stash's retry after the pages'
                // commit failed): the cursor is the store's, which sync() saves with the error.
                if let stored = try? store({ db in
                    db.isInsideTransaction ? nil : try log.syncState(db, endpoint: endpoint)
                }) ?? nil {
                    state.cursor = stored.cursor
                    state.downloadReplacesRows = stored.downloadReplacesRows
                }
                throw error
            }
            report.pulled += pulled
            state = applied
            total = max(total ?? 0, report.pulled + Int(clamping: last.remaining))
            progress?(SyncProgress(applied: report.pulled, total: total ?? report.pulled))
            if !last.hasMore { return }
        }
    }

    // MARK: Store

    /// A message through the store's ``LogHandler``, when the app set one that wants its level.
    private func logMessage(_ level: LogLevel, _ message: String, _ metadata: [String: String]) {
        Self.log(to: logHandler, endpoint: endpoint, level, message, metadata)
    }

    /// A message through `handler`, from any thread (the requests' own ones included).
    private static func log(
        to handler: (any LogHandler)?, endpoint: String, _ level: LogLevel, _ message: String,
        _ metadata: [String: String]
    ) {
        guard let handler, handler.minimumLevel <= level else { return }
        handler.log(level: level, message, metadata: metadata.merging(["endpoint": endpoint]) { old, _ in old })
    }

    /// Runs `body`, a read of the change log's queue, in a read transaction of its own: over a pool
    /// on one of its readers, with the metadatabase attached read-only there if it is not yet, so
    /// that the app's writes do not wait for it. A reader's snapshot starts after the writer's last
    /// commit of this sync (the acknowledgement marked before it), so it never reads a batch the
    /// server acknowledged as still queued.
    private func readQueue<Output>(_ body: (Database) throws -> Output) throws(SyncError) -> Output {
        guard case .pool(let pool) = storage else { return try store(body) }
        return try asStoreErrors {
            try pool.withReader { db in
                try Metadatabase.attachReadOnly(to: db)
                return try db.transaction(.deferred) { db in try body(db) }
            }
        }
    }

    /// Runs `body` on the store's connection (the pool's writer, taken for this call), its
    /// errors as the store's.
    private func store<Output>(_ body: (Database) throws -> Output) throws(SyncError) -> Output {
        try asStoreErrors {
            switch storage {
            case .connection(let db): return try body(db)
            case .pool(let pool): return try pool.withWriter(body)
            }
        }
    }

    /// `body`'s errors as the store's (a `SyncError` it throws as it is).
    private func asStoreErrors<Output>(_ body: () throws -> Output) throws(SyncError) -> Output {
        do {
            return try body()
        } catch let error as SyncError {
            throw error
        } catch {
            throw SyncError(.store, "the local store failed: \(error)")
        }
    }
}

/// Where an engine reads and writes the store.
private enum EngineStorage {
    case connection(Database)
    case pool(DatabasePool)
}
