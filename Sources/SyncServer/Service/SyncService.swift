import Foundation
import OfflineStore
import SyncProtocol

/// The protocol's request handlers behind any HTTP layer: routing, authentication, decoding,
/// validation and the answers `Protocol/README.md` specifies. It knows storage only through
/// ``SyncStorage``.
///
/// ```swift
/// let service = SyncService(storage: try SQLiteSyncStorage(directory: data))
/// let server = try HTTPServer(configuration: configuration) { request in service.handle(request) }
/// ```
public final class SyncService: Sendable {
    public let storage: any SyncStorage
    public let limits: Limits
    public let metrics: ServerMetrics
    /// The server's clock in milliseconds since 1970 (a test may pin it).
    let now: @Sendable () -> Int64
    /// How long a push waits for the batch it follows (``PushRequest/after``) before it is
    /// answered `409 previous_push_missing`. The wait holds the request's worker thread.
    let pushOrderWait: Duration
    /// Pushes waiting for the batch they follow (the `after` each waits for), per dataset and site,
    /// and how many in all. Each holds a thread for up to ``pushOrderWait``, so they are bounded: a
    /// client has at most `max(1, maxPushesInFlight - 1)` waiting for a batch not stored yet (one
    /// whose batch is stored leaves as soon as its thread wakes), and a server at most
    /// ``maximumWaitingPushes`` in all.
    private let waitingPushes = LockedState<(bySite: [WaitingSite: [Int64]], total: Int)>(([:], 0))
    static let maximumWaitingPushes = 64

    private struct WaitingSite: Hashable {
        let dataset: String
        let site: SiteID
    }
    /// The HTTP layer's open connections, for `/metrics`.
    let openConnections: LockedState<(@Sendable () -> Int)?> = LockedState(nil)

    public init(
        storage: any SyncStorage, limits: Limits = .standard, metrics: ServerMetrics = ServerMetrics(),
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) },
        pushOrderWait: Duration = .seconds(2)
    ) {
        self.storage = storage
        self.limits = limits
        self.metrics = metrics
        self.now = now
        self.pushOrderWait = pushOrderWait
    }

    /// Where `/metrics` reads the number of open connections from.
    public func reportOpenConnections(_ count: @escaping @Sendable () -> Int) {
        openConnections.withLock { $0 = count }
    }

    /// Whether answering `request` may wait for another request: a push naming the batch it follows
    /// (``PushRequest/after``), which its client sends on another connection. An HTTP server runs
    /// those apart from the thread that reads connections
    /// (``HTTPServer/Configuration/runsOffPollingThread``); the rest run faster on it (pushes of 16
    /// clients at once: about a seventh more per second than run apart).
    ///
    /// Told from the body's first bytes, `{"after":`, where canonical JSON (members sorted, as
    /// OfflineStore's engine writes a push) puts it: a push that names it further on is answered on
    /// the polling thread, and its wait (at most ``pushOrderWait``) holds up that thread's other
    /// connections.
    ///
    /// ```swift
    /// configuration.runsOffPollingThread = { service.mayWaitForAnotherRequest($0) }
    /// ```
    public func mayWaitForAnotherRequest(_ request: HTTPRequest) -> Bool {
        guard case .dataset(_, .push) = Route(method: request.method, path: request.path) else { return false }
        return request.body.starts(with: Self.afterFirst)
    }

    private static let afterFirst = Data(#"{"after":"#.utf8)

    /// Answers one request; never throws: every failure is an answer with a stable error code.
    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        let started = DispatchTime.now().uptimeNanoseconds
        let route = Route(method: request.method, path: request.path)
        var response: HTTPResponse
        do {
            response = try answer(request, route: route)
        } catch let error as ErrorBody {
            response = Self.response(error)
        } catch let error as ServerError {
            response = Self.response(error)
        } catch {
            response = Self.response(ErrorBody(.internalError, "the server failed: \(error)"))
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        metrics.recordRequest(route: route.metricName, status: response.status.rawValue, seconds: seconds)
        return response
    }

    private func answer(_ request: HTTPRequest, route: Route) throws -> HTTPResponse {
        switch route {
        case .health:
            try storage.checkHealth()
            return .json(Data(#"{"status":"ok"}"#.utf8))
        case .metrics:
            let open = openConnections.withLock { $0 }?() ?? 0
            var response = HTTPResponse.text(metrics.render(openConnections: open))
            response.headers["Content-Type"] = "text/plain; version=0.0.4; charset=utf-8"
            return response
        case .notFound:
            throw ErrorBody(.notFound, "no such route: \(request.method) \(String(request.path.prefix(200)))")
        case .wrongMethod(let allowed):
            var response = Self.response(
                ErrorBody(.methodNotAllowed, "\(request.path) accepts \(allowed) only, not \(request.method)"))
            response.headers["Allow"] = allowed
            return response
        case .dataset(let dataset, let endpoint):
            let grant = try authorize(request, dataset: dataset)
            guard Self.isJSON(contentType: request.headers["Content-Type"]) else {
                throw ErrorBody(.unsupportedMediaType, "send the body as Content-Type: application/json")
            }
            switch endpoint {
            case .hello:
                let hello = try ProtocolJSON.decode(HelloRequest.self, from: request.body, limits: limits)
                return try Self.json(try self.hello(hello, grant: grant))
            case .push:
                guard !grant.readOnly else {
                    throw ErrorBody(.readOnlyToken, "this token is read-only; push with a read-write token")
                }
                var (push, texts): (PushRequest?, _) = try ProtocolJSON.decodePushKeepingText(
                    from: request.body, limits: limits)
                let response = try Self.json(try self.push(push!, texts: texts, in: request.body, dataset: dataset))
                // Freed on another thread: the answer does not wait for its changes to be freed.
                BackgroundRelease.release(&push)
                return response
            case .pull:
                let pull = try ProtocolJSON.decode(PullRequest.self, from: request.body, limits: limits)
                return try self.pull(pull, dataset: dataset)
            }
        }
    }

    /// `application/json`, in any case, with no parameter but an optional `charset=utf-8`.
    static func isJSON(contentType: String?) -> Bool {
        guard let contentType else { return false }
        let parts = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard parts.first == "application/json" else { return false }
        return parts.dropFirst().allSatisfy { parameter in
            parameter.replacingOccurrences(of: "\"", with: "") == "charset=utf-8"
        }
    }

    /// 401 without a valid token; 403 for a token of another dataset, whether or not the named
    /// dataset exists, so tokens cannot probe for names.
    private func authorize(_ request: HTTPRequest, dataset: String) throws -> TokenGrant {
        guard let secret = AccessToken.secret(fromAuthorization: request.headers["Authorization"]),
            let grant = try storage.grant(forTokenDigest: AccessToken.digest(of: secret))
        else {
            throw ErrorBody(
                .unauthorized, "send a valid token as Authorization: Bearer <token>; it may have been revoked")
        }
        guard grant.dataset == dataset else {
            throw ErrorBody(.forbidden, "this token is not for dataset \(dataset)")
        }
        return grant
    }

    private func checkProtocol(_ version: Int) throws {
        guard ProtocolVersion.supported.contains(version) else {
            throw ErrorBody(
                .protocolUnsupported,
                "protocol version \(version) is not spoken here; this server speaks \(ProtocolVersion.supported)")
        }
    }

    func hello(_ hello: HelloRequest, grant: TokenGrant) throws -> HelloResponse {
        let datasetVersion = try storage.schemaVersion(of: grant.dataset)
        let outcome = Compatibility.negotiate(
            .init(
                clientProtocols: hello.protocolVersions, serverProtocols: ProtocolVersion.supported,
                client: hello.schema.version, dataset: datasetVersion))
        var after = datasetVersion
        let message: String
        switch outcome.verdict {
        case .compatible, .newerSchemaAvailable:
            after = try storage.recordSchema(hello.schema, dataset: grant.dataset, mayMoveDataset: !grant.readOnly)
            message =
                outcome.verdict == .compatible
                ? "ready to sync"
                : "this dataset has schema \(after?.description ?? "?"); keep what you do not know yet"
        case .upgradeRequired:
            message =
                "this dataset is at schema major version \(outcome.requiredMajorVersion ?? 0); upgrade the app, "
                + "your changes stay queued until then"
        case .protocolUnsupported:
            message = "no common protocol version; this server speaks \(ProtocolVersion.supported)"
        }
        return HelloResponse(
            protocolVersion: outcome.protocolVersion, supportedProtocolVersions: ProtocolVersion.supported,
            verdict: outcome.verdict, datasetSchemaVersion: after, requiredMajorVersion: outcome.requiredMajorVersion,
            limits: limits, serverTime: now(), message: message,
            acknowledgedThrough: try storage.datasetState(grant.dataset, site: hello.site).siteHighWater)
    }

    /// Validates and stores `push`; `texts` (with the `body` it was read from) say which changes'
    /// canonical JSON the body holds (``ProtocolJSON/decodePushKeepingText(from:limits:)``).
    func push(_ push: PushRequest, texts: [MessageReader.CanonicalText?], in body: Data, dataset: String) throws
        -> PushResponse
    {
        try checkProtocol(push.protocolVersion)
        // Before the batch's checks, in the order of Protocol/README.md section 4, and before any
        // wait for the batch before: an app that must upgrade is told so at once. `storeBatch`
        // checks again in its transaction, where the dataset cannot move to a new major meanwhile.
        try ErrorBody.requireMaySync(
            client: push.schemaVersion, dataset: try storage.schemaVersion(of: dataset), pushing: true)
        guard push.changes.count <= limits.maxChangesPerPush else {
            throw ErrorBody(
                .tooManyChanges,
                "\(push.changes.count) changes in one push; send at most \(limits.maxChangesPerPush) per batch")
        }
        let now = now()
        var previous: Int64 = 0
        // By index: a copy of each change (its dictionaries retained and released) cost more than its checks.
        for index in push.changes.indices {
            if let problem = ChangeValidation.problem(
                in: push.changes[index], batchSite: push.site, limits: limits, now: now)
            {
                throw ErrorBody(problem.code, "change \(index): \(problem.message)", changeIndex: index)
            }
            let seq = push.changes[index].seq
            guard seq > previous else {
                throw ErrorBody(
                    .invalidChange, "change \(index): seq \(seq) does not grow along the batch", changeIndex: index)
            }
            previous = seq
        }
        let batch = try BatchJSON(push.changes, texts: texts, in: body)
        if let after = push.after {
            try waitForPreviousPush(after, of: push, dataset: dataset)
        }
        let acknowledged = try storage.storeBatch(
            batch, site: push.site, clientSchema: push.schemaVersion, dataset: dataset)
        metrics.recordPushed(push.changes.count)
        return PushResponse(site: push.site, acknowledgedThrough: acknowledged)
    }

    /// Returns once `push.site`'s high-water mark has reached `after` (the batch sent before this
    /// one is stored), so that batch's changes are never skipped as already stored; the push was
    /// read and checked meanwhile, while that batch was being written.
    private func waitForPreviousPush(_ after: Int64, of push: PushRequest, dataset: String) throws {
        guard push.protocolVersion >= ProtocolVersion.pushesInOrder else {
            throw ErrorBody(
                .invalidMessage,
                "after needs protocol version \(ProtocolVersion.pushesInOrder) or later; this push names version "
                    + "\(push.protocolVersion)")
        }
        guard after >= 0, after < (push.changes.first?.seq ?? .max) else {
            throw ErrorBody(
                .invalidMessage,
                "after is \(after); it names the last change of the batch sent before this one, so it must be "
                    + "0 or more and below the first change's seq")
        }
        // Most pushes find the batch before stored already: they take no place among the waiting.
        let highWater = try storage.datasetState(dataset, site: push.site).siteHighWater
        if highWater >= after { return }
        let waiting = WaitingSite(dataset: dataset, site: push.site)
        let admitted = waitingPushes.withLock { state in
            // A push whose batch before is stored no longer waits, though its thread may not have
            // woken yet: its client, answered the batch before, may send the next one meanwhile.
            let stillWaiting = state.bySite[waiting, default: []].count { $0 > highWater }
            guard state.total < Self.maximumWaitingPushes, stillWaiting < max(1, limits.pushesInFlight - 1)
            else { return false }
            state.total += 1
            state.bySite[waiting, default: []].append(after)
            return true
        }
        guard admitted else {
            throw Self.previousPushMissing(
                after,
                "as many pushes of this site as the server holds (or of all sites) are already waiting for the "
                    + "batches they follow")
        }
        defer {
            waitingPushes.withLock { state in
                state.total -= 1
                if let index = state.bySite[waiting]?.firstIndex(of: after) {
                    state.bySite[waiting]?.remove(at: index)
                }
                if state.bySite[waiting]?.isEmpty == true { state.bySite[waiting] = nil }
            }
        }
        // Lends this handler's place to another request meanwhile: the batch waited for may be
        // queued behind it.
        let deadline = ContinuousClock.now + pushOrderWait
        guard
            try HandlerThreads.stepAside({
                try storage.waitForHighWater(after, site: push.site, dataset: dataset, until: deadline)
            })
        else {
            throw Self.previousPushMissing(
                after,
                "the server has not stored that change (the batch holding it was refused or did not arrive within "
                    + "\(pushOrderWait))")
        }
    }

    private static func previousPushMissing(_ after: Int64, _ reason: String) -> ErrorBody {
        ErrorBody(
            .previousPushMissing,
            "this push follows the change with seq \(after); \(reason); nothing of this push was stored: push again "
                + "from the oldest unacknowledged change")
    }

    func pull(_ pull: PullRequest, dataset: String) throws -> HTTPResponse {
        try checkProtocol(pull.protocolVersion)
        let datasetVersion = try storage.schemaVersion(of: dataset)
        try ErrorBody.requireMaySync(client: pull.schemaVersion, dataset: datasetVersion, pushing: false)
        if let asked = pull.limit, asked < 1 {
            throw ErrorBody(.invalidMessage, "limit is \(asked); ask for at least 1 change (or leave it out)")
        }
        let limit = min(pull.limit ?? 1_000, limits.maxChangesPerPull)
        let cursor = try pull.cursor.map { text throws(ErrorBody) in try PullCursor(decoding: text, dataset: dataset) }
        let state = try storage.datasetState(dataset, site: pull.site)
        if let cursor {
            try cursor.check(against: state)
            if cursor.mark != nil {
                try cursor.check(logChain: try chain(dataset: dataset, at: cursor.logSerial, state: state))
            }
        }
        if let serial = cursor?.serial {
            let page = try storage.readLog(dataset: dataset, after: serial, excluding: pull.site, limit: limit)
            metrics.recordPulled(page.count)
            // The log keeps each change's canonical JSON, so the page is spliced, not re-encoded.
            let next = PullCursor.log(
                page.nextSerial, dataset: dataset, incarnation: state.incarnation, chain: page.nextChain)
            let tail =
                #"],"cursor":"\#(next.encoded)","hasMore":\#(page.hasMore),"phase":"log","#
                + #""remaining":\#(max(page.lastSerial - page.nextSerial, 0))}"#
            var body = Data(capacity: 16 + page.joinedEntries.count + tail.utf8.count)
            body.append(contentsOf: #"{"changes":["#.utf8)
            body.append(contentsOf: page.joinedEntries)
            body.append(contentsOf: tail.utf8)
            return .json(body)
        }
        let page = try storage.readSnapshot(dataset: dataset, after: cursor?.snapshot, limit: limit)
        metrics.recordPulled(page.changes.count)
        // Every page of one snapshot starts at the same serial: the next cursor keeps the mark its
        // cursor had (checked above), and only a snapshot's first page reads one.
        let mark =
            cursor?.logSerial == page.position.startSerial
            ? cursor?.mark
            : try chain(dataset: dataset, at: page.position.startSerial, state: state)
        let next =
            page.isLast
            ? PullCursor.log(page.position.startSerial, dataset: dataset, incarnation: state.incarnation, chain: mark)
            : PullCursor.snapshot(page.position, dataset: dataset, incarnation: state.incarnation, chain: mark)
        // After the last snapshot page the log phase follows, so there is always more to ask.
        var writer = CanonicalJSONWriter(capacity: 256 * page.changes.count + 256)
        try writer.write(
            PullResponse(
                changes: page.changes, cursor: next.encoded, hasMore: true, phase: .snapshot,
                remaining: max(page.position.rowsTotal - page.position.rowsDone, 0)))
        return .json(writer.data)
    }

    /// The fingerprint of the log up to `serial`: at the log's end (a device caught up, the
    /// commonest pull) the one `state` read with it, before it one more read.
    private func chain(dataset: String, at serial: Int64, state: DatasetState) throws(ServerError) -> Int64? {
        if serial == state.lastSerial { return state.lastChain }
        return serial > 0 ? try storage.logChain(dataset: dataset, serial: serial) : nil
    }

    static func json(_ message: some Encodable) throws -> HTTPResponse {
        .json(try ProtocolJSON.encode(message))
    }

    static func response(_ error: ErrorBody) -> HTTPResponse {
        var response = HTTPResponse.error(error)
        if error.error.code == .unauthorized { response.headers["WWW-Authenticate"] = "Bearer" }
        return response
    }

    static func response(_ error: ServerError) -> HTTPResponse {
        switch error.kind {
        case .unavailable: response(ErrorBody(.unavailable, error.description))
        case .notFound: response(ErrorBody(.notFound, error.description))
        default: response(ErrorBody(.internalError, "the server failed: \(error.description)"))
        }
    }
}
