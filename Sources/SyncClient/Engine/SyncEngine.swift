import Foundation
import OfflineStore
import SyncProtocol

/// Syncs one store with one dataset on a server: negotiate, push the change log in batches,
/// pull and apply until caught up, remember the cursor. Every step is resumable: a crash or kill
/// at any point is followed by a sync that completes with nothing lost and nothing applied twice
/// (pushes are idempotent per site and sequence, applying is idempotent, and the cursor is saved
/// only after its page is applied).
///
/// Not `Sendable`: it uses the store's `Database`, on the caller's thread.
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
        public var pushBatchSize = 1_000
        public var pullPageSize = 1_000
        public var retry = RetryPolicy()

        public init(server: URL, dataset: String, token: String) {
            self.server = server
            self.dataset = dataset
            self.token = token
        }
    }

    let db: Database
    let log: ChangeLog
    let transport: any SyncTransport
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

    public init(db: Database, log: ChangeLog, transport: any SyncTransport, configuration: Configuration) {
        self.db = db
        self.log = log
        self.transport = transport
        self.configuration = configuration
        site = SiteID(bytes: log.identity.siteID)!
        announcedSchema = SchemaDescription(log.schema)
    }

    /// The key of this server and dataset in the store's sync state.
    public var endpoint: String {
        configuration.server.absoluteString + "#" + configuration.dataset
    }

    /// The store's sync state for this endpoint (cursor, last sync, last error).
    public func state() throws(SyncError) -> SyncState {
        try store { try log.syncState(db, endpoint: endpoint) }
    }

    /// One complete sync. On failure the error is also remembered in the sync state.
    @discardableResult
    public func sync(progress: ((SyncProgress) -> Void)? = nil) throws(SyncError) -> SyncReport {
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
            try recoverLostPushes(hello, state: &state, report: &report)
            try push(limits: hello.limits, state: &state, report: &report)
            try pull(state: &state, limits: hello.limits, report: &report, progress: progress)
            report.stashed = try store { try log.stashedCount(db) }
            state.lastSyncAt = Date()
            state.lastError = nil
            try store { try log.save(state, db) }
            return report
        } catch {
            state.lastError = error.description
            try? log.save(state, db)
            throw error
        }
    }

    // MARK: Steps

    private func negotiate() throws(SyncError) -> HelloResponse {
        return try exchange("hello", HelloRequest(site: site, schema: announcedSchema))
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
        report.requeued = try store { try log.requeuePushes(after: stored, endpoint: endpoint, db) }
        state.acknowledgedThrough = stored
        state.cursor = nil
        report.redownloaded = true
        try store { try log.save(state, db) }
        warn(
            "the server has lost changes it had acknowledged (restored from a backup?): pushing them again and "
                + "downloading the dataset again",
            ["acknowledgedThrough": "\(lost)", "serverHas": "\(stored)", "requeued": "\(report.requeued)"])
    }

    private func push(limits: Limits, state: inout SyncState, report: inout SyncReport) throws(SyncError) {
        let schemaVersion = announcedSchema.version
        let batchSize = max(1, min(configuration.pushBatchSize, limits.maxChangesPerPush))
        while true {
            let pending = try store { try log.pendingChanges(db, limit: batchSize) }
            guard !pending.isEmpty else { return }
            var changes = pending.map { Change($0, site: site) }
            while !changes.isEmpty {
                let batch = changes
                let answer = Result { () throws(SyncError) -> PushResponse in
                    try exchange(
                        "push",
                        PushRequest(
                            protocolVersion: ProtocolVersion.current, schemaVersion: schemaVersion, site: site,
                            changes: batch))
                }
                switch answer {
                case .success(let ack):
                    state.acknowledgedThrough = max(state.acknowledgedThrough, ack.acknowledgedThrough)
                    try store {
                        try db.transaction(.immediate) { [state] db in
                            try log.markPushed(db, upTo: ack.acknowledgedThrough)
                            try log.save(state, db)
                        }
                    }
                    report.pushed += changes.count
                    changes = []
                case .failure(let error):
                    // One change refused (a 400 naming it): push those before it, keep it with the
                    // server's reason, go on with the rest.
                    guard error.kind == .server, error.status == 400, let index = error.changeIndex,
                        changes.indices.contains(index)
                    else { throw error }
                    if index > 0 {
                        changes = Array(changes.prefix(index))
                        continue
                    }
                    let refused = changes[0]
                    try store {
                        try db.transaction(.immediate) { db in
                            try log.recordRejected(
                                RejectedChangeRecord(
                                    rejectedAt: Date(), code: error.code?.rawValue ?? "?", reason: error.message,
                                    change: String(decoding: try ProtocolJSON.encode(refused), as: UTF8.self)),
                                db)
                            try log.markPushed(db, upTo: refused.seq)
                        }
                    }
                    report.rejected += 1
                    // What followed it comes in the next round, read again from the log.
                    changes = []
                }
            }
        }
    }

    private func pull(
        state: inout SyncState, limits: Limits, report: inout SyncReport, progress: ((SyncProgress) -> Void)?
    ) throws(SyncError) {
        var total: Int?
        while true {
            let answer = Result { () throws(SyncError) -> PullResponse in
                try exchange(
                    "pull",
                    PullRequest(
                        protocolVersion: ProtocolVersion.current, schemaVersion: announcedSchema.version,
                        site: site, cursor: state.cursor,
                        limit: max(1, min(configuration.pullPageSize, limits.maxChangesPerPull))))
            }
            let page: PullResponse
            switch answer {
            case .success(let answer):
                page = answer
            case .failure(let error):
                // The server can no longer serve the cursor (restored from a backup, or another
                // server at this address): drop it and download the dataset again, once per sync.
                // Applying what this store already has changes nothing.
                guard error.code == .invalidCursor, state.cursor != nil, !report.redownloaded else { throw error }
                state.cursor = nil
                report.redownloaded = true
                try store { try log.save(state, db) }
                warn("the server refused the pull cursor; downloading the dataset again", ["reason": error.message])
                continue
            }
            if !page.changes.isEmpty {
                let outcome = try store { try log.apply(page.changes.map(RemoteChange.init), to: db) }
                report.refused += outcome.rejected.count
                if let afterApplyingChanges {
                    try store { try db.transaction(.immediate) { db in try afterApplyingChanges(db) } }
                }
            }
            report.pulled += page.changes.count
            // Saved only once the page is applied: a crash in between pulls the page again, and
            // applying it again changes nothing.
            state.cursor = page.cursor
            try store { try log.save(state, db) }
            total = max(total ?? 0, report.pulled + Int(clamping: page.remaining))
            progress?(SyncProgress(applied: report.pulled, total: total ?? report.pulled))
            if !page.hasMore { return }
        }
    }

    // MARK: Requests

    /// Posts `message` to the dataset's `endpoint` and decodes the answer, retrying by the policy.
    private func exchange<Answer: Decodable>(_ name: String, _ message: some Encodable) throws(SyncError) -> Answer {
        let url = configuration.server.appendingPathComponent("v1/datasets/\(configuration.dataset)/\(name)")
        let body: Data
        do {
            body = try ProtocolJSON.encode(message)
        } catch {
            throw SyncError(.store, "cannot encode the \(name) request: \(error)")
        }
        let headers = [("Authorization", "Bearer \(configuration.token)"), ("Content-Type", "application/json")]
        var attempt = 1
        while true {
            let outcome = Result { () throws(SyncError) -> Answer in
                let reply = try transport.post(url, headers: headers, body: body)
                guard reply.status == 200 else { throw SyncError.answer(reply, url: url) }
                do {
                    return try JSONDecoder().decode(Answer.self, from: reply.body)
                } catch {
                    throw SyncError(.invalidAnswer, "the server's \(name) answer is not a \(Answer.self): \(error)")
                }
            }
            switch outcome {
            case .success(let answer):
                return answer
            case .failure(let error):
                guard error.isRetryable else { throw error }
                if let maximum = configuration.retry.maximumAttempts, attempt >= maximum { throw error }
                configuration.retry.sleep(
                    configuration.retry.delay(afterAttempt: attempt, retryAfter: error.retryAfterSeconds))
                attempt += 1
            }
        }
    }

    /// A warning through the store's ``LogHandler``, when the app set one.
    private func warn(_ message: String, _ metadata: [String: String]) {
        guard let handler = db.configuration.logHandler, handler.minimumLevel <= .warning else { return }
        handler.log(level: .warning, message, metadata: metadata.merging(["endpoint": endpoint]) { old, _ in old })
    }

    private func store<Output>(_ body: () throws -> Output) throws(SyncError) -> Output {
        do {
            return try body()
        } catch let error as SyncError {
            throw error
        } catch {
            throw SyncError(.store, "the local store failed: \(error)")
        }
    }
}
