import Foundation
import OfflineStoreSQLite
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
    /// Whether a request may fix the clock with ``TestClock/header`` (a conformance run).
    public let allowsTestClock: Bool
    /// How long a push waits for the batch it follows (``PushRequest/after``) before it is
    /// answered `409 previous_push_missing`. The wait holds no thread (``WaitingPushes``).
    let pushOrderWait: Duration
    /// Pushes waiting for the batch they follow: at most `max(1, pushesInFlight - 1)` of one site
    /// for a batch not stored yet, ``maximumWaitingPushesPerToken`` of one token and
    /// ``maximumWaitingPushes`` in all.
    let waitingPushes: WaitingPushes
    static let maximumWaitingPushes = 64
    static let maximumWaitingPushesPerToken = 16
    /// Live pulls waiting for a change (``PullRequest/wait``), at most ``PullWaits/total`` in all
    /// and ``PullWaits/perAddress`` of one client address.
    let waitingPulls: WaitingPulls
    /// What another process storing changes in the same database tells this one (PostgreSQL's
    /// notifications), kept while the service lives.
    private let otherServersChanges: (any ChangeObservation)?
    /// Where large bodies the strict reader must read are read, one at a time.
    private let strictReading = DispatchQueue(label: "ostore.sync-service.strict-reading")
    /// Told of every answer, deferred ones included, for the request log.
    private let answerSink: LockedState<(@Sendable (HTTPRequest, HTTPResponse, UInt64) -> Void)?> = LockedState(nil)
    /// The keys pull cursors are signed with, read from ``storage`` and kept.
    let cursorKeys: PullCursorKeys
    /// The definitions pushes are checked against, by dataset and schema version.
    let schemaRules: SchemaRulesCache
    /// Verifies the JSON Web Tokens of the datasets configured for them.
    let jsonWebTokens: JWTVerifier?
    /// The HTTP layer's open connections, for `/metrics`.
    let openConnections: LockedState<(@Sendable () -> Int)?> = LockedState(nil)
    /// Told the first time a dataset is served under a version of its scope rules, for the
    /// request log; with the version each dataset was served under last.
    private let scopeRulesSeen = LockedState<(report: (@Sendable (String, Int64) -> Void)?, versions: [String: Int64])>(
        (nil, [:]))

    /// A service over `storage`. It keeps the pull cursor keys it reads from the storage for
    /// `cursorKeysRefresh` (``PullCursorKeys``): a rotation by another process reaches it within
    /// that time, or as soon as a cursor signed with the new key does.
    ///
    /// ```swift
    /// let service = SyncService(storage: storage, cursorKeysRefresh: .seconds(30))
    /// ```
    ///
    /// With `allowsTestClock`, a request carrying ``TestClock/header`` is answered at the clock it
    /// names; without, such a request is refused (`400 invalid_message`). With `jsonWebTokens`, the
    /// datasets it configures also accept the JSON Web Tokens it verifies.
    public init(
        storage: any SyncStorage, limits: Limits = .standard, metrics: ServerMetrics = ServerMetrics(),
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) },
        pushOrderWait: Duration = .seconds(2), cursorKeysRefresh: Duration = .seconds(60),
        allowsTestClock: Bool = false, pullWaits: PullWaits = .standard, jsonWebTokens: JWTVerifier? = nil
    ) {
        self.storage = storage
        self.jsonWebTokens = jsonWebTokens
        self.limits = limits
        self.metrics = metrics
        self.now = now
        self.allowsTestClock = allowsTestClock
        self.pushOrderWait = pushOrderWait
        cursorKeys = PullCursorKeys(storage: storage, refresh: cursorKeysRefresh)
        schemaRules = SchemaRulesCache(storage: storage)
        waitingPushes = WaitingPushes(
            limits: .init(
                perSite: max(1, limits.pushesInFlight - 1), perToken: Self.maximumWaitingPushesPerToken,
                total: Self.maximumWaitingPushes)
        ) { site in
            try storage.datasetState(site.dataset, site: site.site).siteHighWater
        }
        let waitingPulls = WaitingPulls(limits: .init(total: pullWaits.total, perAddress: pullWaits.perAddress))
        self.waitingPulls = waitingPulls
        otherServersChanges = storage.observeChangesOfOtherServers { dataset in
            if let dataset {
                waitingPulls.changed(dataset: dataset)
            } else {
                waitingPulls.changedEverywhere()
            }
        }
    }

    /// How many live pulls may wait at once (``PullRequest/wait``).
    ///
    /// ```swift
    /// let service = SyncService(storage: storage, pullWaits: .init(total: 4096, perAddress: 256))
    /// ```
    public struct PullWaits: Sendable, Hashable {
        /// Pulls waiting at once, from every client.
        public var total: Int
        /// Pulls waiting at once from one client address.
        public var perAddress: Int

        public init(total: Int, perAddress: Int) {
            self.total = total
            self.perAddress = perAddress
        }

        /// Half of `ostore-server serve`'s connections, in all and per address: waiting pulls
        /// never take the places pushes need.
        public static let standard = PullWaits(total: 2048, perAddress: 128)
    }

    /// Answers every waiting live pull now (with what it would bring, usually nothing), and
    /// every live pull from now on at once: call it when the server begins to stop, before
    /// ``HTTPServer/stop(gracePeriod:)``, which waits for every deferred answer.
    ///
    /// ```swift
    /// configuration.stopping = { service.answerWaitingPulls() }
    /// ```
    public func answerWaitingPulls() {
        waitingPulls.answerAllAndStop()
    }

    /// Where every answer is reported, with the request and the nanoseconds it took: deferred
    /// answers too, when they are sent. Refusals of ``admit(_:)`` are not: the HTTP layer reports
    /// those (``HTTPServer/Configuration/requestRefused``).
    ///
    /// ```swift
    /// service.reportAnswers { request, response, nanoseconds in log(request, response, nanoseconds) }
    /// ```
    public func reportAnswers(_ sink: @escaping @Sendable (HTTPRequest, HTTPResponse, UInt64) -> Void) {
        answerSink.withLock { $0 = sink }
    }

    /// Tells `report` the first time this service serves a dataset under a version of its scope
    /// rules (``SyncStorage/setScopeRules(_:dataset:)``), with the dataset and the version.
    ///
    /// ```swift
    /// service.reportScopeRules { dataset, version in log("\(dataset) is served under rules \(version)") }
    /// ```
    public func reportScopeRules(_ report: @escaping @Sendable (_ dataset: String, _ version: Int64) -> Void) {
        scopeRulesSeen.withLock { $0.report = report }
    }

    /// The version of `dataset`'s scope rules when `storage` serves scopes and the dataset has
    /// rules, told to the request log the first time it is seen.
    private func scopeRulesVersion(of dataset: String, _ storage: any ScopedStorage) throws(ServerError) -> Int64? {
        guard let version = try storage.scopeRulesVersion(of: dataset) else { return nil }
        let report = scopeRulesSeen.withLock { seen -> (@Sendable (String, Int64) -> Void)? in
            guard seen.versions[dataset] != version else { return nil }
            seen.versions[dataset] = version
            return seen.report
        }
        report?(dataset, version)
        return version
    }

    /// Where `/metrics` reads the number of open connections from.
    public func reportOpenConnections(_ count: @escaping @Sendable () -> Int) {
        openConnections.withLock { $0 = count }
    }

    /// Decides from a request's head, before its body is read, what the protocol's order of checks
    /// (Protocol/README.md, section 4) decides from the head: the route, the token (with its grant
    /// noted for the handler), a read-only token's push, the content type. For
    /// ``HTTPServer/Configuration/admit``.
    ///
    /// ```swift
    /// configuration.admit = { service.admit($0) }
    /// ```
    public func admit(_ head: HTTPRequestHead) -> HTTPAdmission {
        let started = DispatchTime.now().uptimeNanoseconds
        let route = Route(method: head.method, path: head.path)
        let refusal: HTTPResponse
        switch route {
        case .dataset(let dataset, let endpoint):
            do {
                let grant = try checkHead(head.headers, dataset: dataset, endpoint: endpoint)
                return .admit(note: grant, budgetShare: grant.tokenID)
            } catch {
                refusal = finish(HTTPRequest(head), started: started, route: route, reported: false) { throw error }
            }
        case .health, .metrics:
            // Open to anyone, so they read no body.
            guard head.headers.contains("Transfer-Encoding") || (head.headers["Content-Length"] ?? "0") != "0" else {
                return .admit()
            }
            refusal = finish(HTTPRequest(head), started: started, route: route, reported: false) {
                throw ErrorBody(.bodyTooLarge, "GET \(head.path) takes no body")
            }
        case .notFound, .wrongMethod:
            refusal = finish(HTTPRequest(head), started: started, route: route, reported: false) {
                try answer(HTTPRequest(head), route: route)
            }
        }
        return .refuse(refusal)
    }

    /// Answers one request, waiting on the calling thread when the answer is deferred: for callers
    /// that are not an HTTP server. Never throws: every failure is an answer with a stable code.
    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        switch reply(to: request) {
        case .response(let response): response
        case .deferred(let later): later.wait()
        }
    }

    /// ``handle(_:)``, giving the answer up (nil) once `isCancelled` returns true (asked every
    /// 50 ms while the answer is deferred): for a live pull whose caller stops waiting. The
    /// service answers it later all the same, as it would a client that went away.
    ///
    /// ```swift
    /// let response = service.handle(request, cancelledWhen: { stop.load(ordering: .relaxed) })
    /// ```
    public func handle(_ request: HTTPRequest, cancelledWhen isCancelled: () -> Bool) -> HTTPResponse? {
        switch reply(to: request) {
        case .response(let response): response
        case .deferred(let later): later.wait(cancelledWhen: isCancelled)
        }
    }

    /// Answers one request, or defers the answer (a push waiting for the batch it follows) without
    /// holding the calling thread. For ``HTTPServer/init(configuration:replying:)``.
    ///
    /// ```swift
    /// let server = try HTTPServer(configuration: configuration, replying: { service.reply(to: $0) })
    /// ```
    public func reply(to request: HTTPRequest) -> HTTPReply {
        let started = DispatchTime.now().uptimeNanoseconds
        let route = Route(method: request.method, path: request.path)
        let isLarge = request.body.count > Self.largestBodyReadStrictlyInline
        guard case .dataset(let dataset, let endpoint) = route, endpoint == .push else {
            let answered: @Sendable () -> HTTPReply = { [self] in
                if case .dataset(let dataset, .pull) = route {
                    return replyToPull(request, dataset: dataset, started: started, route: route)
                }
                return .response(finish(request, started: started, route: route) { try answer(request, route: route) })
            }
            return isLarge ? readStrictlyInTurn(answered) : answered()
        }
        let grant: TokenGrant
        do {
            // The token before the body (Protocol/README.md, section 4).
            grant = try self.grant(of: request, dataset: dataset, endpoint: .push)
        } catch {
            return .response(finish(request, started: started, route: route) { throw error })
        }
        if let (push, texts) = ProtocolJSON.readCanonicalPush(from: request.body, limits: limits) {
            return replyToPush(request, push, texts: texts, grant: grant, started: started, route: route)
        }
        let strictly: @Sendable () -> HTTPReply = { [self] in
            replyStrictly(request, grant: grant, started: started, route: route)
        }
        return isLarge ? readStrictlyInTurn(strictly) : strictly()
    }

    /// Bodies up to this size that ``MessageReader`` does not vouch for are read strictly where they
    /// arrive; larger ones one at a time on ``strictReading`` (``readStrictlyInTurn(_:)``).
    static let largestBodyReadStrictlyInline = 64 * 1024

    /// `reply`'s answer, deferred and made on ``strictReading``: the strict reader builds a tree of
    /// the whole body first (tens of bytes a value), so large bodies it must read wait their turn on
    /// one thread, together take no more memory than one, and hold no polling thread.
    private func readStrictlyInTurn(_ reply: @escaping @Sendable () -> HTTPReply) -> HTTPReply {
        let later = DeferredResponse()
        strictReading.async { later.forward(reply()) }
        return .deferred(later)
    }

    /// A push whose body is read by the strict reader (``ProtocolJSON/decode(_:from:limits:)``).
    private func replyStrictly(_ request: HTTPRequest, grant: TokenGrant, started: UInt64, route: Route) -> HTTPReply {
        do {
            let push = try ProtocolJSON.decode(PushRequest.self, from: request.body, limits: limits)
            let texts = [MessageReader.CanonicalText?](repeating: nil, count: push.changes.count)
            return replyToPush(request, push, texts: texts, grant: grant, started: started, route: route)
        } catch {
            return .response(finish(request, started: started, route: route) { throw error })
        }
    }

    /// A decoded push's answer, now or deferred until the batch it follows is stored. `push` is
    /// this call's to free: on another thread, so the answer does not wait for its changes to be freed.
    private func replyToPush(
        _ request: HTTPRequest, _ push: consuming PushRequest, texts: [MessageReader.CanonicalText?],
        grant: TokenGrant, started: UInt64, route: Route
    ) -> HTTPReply {
        var owned: PushRequest? = consume push
        defer { BackgroundRelease.release(&owned) }
        do {
            let prepared = try preparePush(
                owned!, texts: texts, in: request.body, grant: grant, now: try now(for: request))
            if let later = try deferUntilPreviousPush(prepared, request: request, started: started, route: route) {
                return .deferred(later)
            }
            return .response(finish(request, started: started, route: route) { try store(prepared) })
        } catch {
            return .response(finish(request, started: started, route: route) { throw error })
        }
    }

    /// `answer`'s response, or the error it threw as the protocol's error body, recorded in the
    /// metrics and reported to the answer sink (unless `reported` is false: a refusal of
    /// ``admit(_:)``, which the HTTP layer reports).
    private func finish(
        _ request: HTTPRequest, started: UInt64, route: Route, reported: Bool = true, waited: Bool = false,
        _ answer: () throws -> HTTPResponse
    ) -> HTTPResponse {
        var response: HTTPResponse
        do {
            response = try answer()
        } catch let error as ErrorBody {
            response = Self.response(error)
        } catch let error as ServerError {
            response = Self.response(error)
        } catch {
            response = Self.response(ErrorBody(.internalError, "the server failed: \(error)"))
        }
        let elapsed = DispatchTime.now().uptimeNanoseconds - started
        metrics.recordRequest(
            route: route.metricName, status: response.status.rawValue, seconds: Double(elapsed) / 1e9,
            waited: waited)
        if reported { answerSink.current?(request, response, elapsed) }
        return response
    }

    private func answer(_ request: HTTPRequest, route: Route) throws -> HTTPResponse {
        switch route {
        case .health:
            try storage.checkHealth()
            return .json(Data((allowsTestClock ? #"{"status":"ok","testClock":true}"# : #"{"status":"ok"}"#).utf8))
        case .metrics:
            let open = openConnections.current?() ?? 0
            var response = HTTPResponse.text(
                metrics.render(openConnections: open, waitingPulls: waitingPulls.waitingCount))
            response.headers["Content-Type"] = "text/plain; version=0.0.4; charset=utf-8"
            return response
        case .notFound:
            throw ErrorBody(.notFound, "no such route: \(request.method) \(String(request.path.prefix(200)))")
        case .wrongMethod(let allowed):
            var response = Self.response(
                ErrorBody(
                    .methodNotAllowed, "\(request.path.prefix(200)) accepts \(allowed) only, not \(request.method)"))
            response.headers["Allow"] = allowed
            return response
        case .dataset(let dataset, let endpoint):
            let grant = try grant(of: request, dataset: dataset, endpoint: endpoint)
            switch endpoint {
            case .hello:
                let hello = try ProtocolJSON.decode(HelloRequest.self, from: request.body, limits: limits)
                return try Self.json(try self.hello(hello, grant: grant, now: try now(for: request)))
            case .push:
                preconditionFailure("pushes are answered by reply(to:), which may defer them")
            case .pull:
                let pull = try ProtocolJSON.decode(PullRequest.self, from: request.body, limits: limits)
                return try self.pull(pull, dataset: dataset, grant: grant).response
            }
        }
    }

    /// The grant ``admit(_:)`` noted, or for a request that did not pass it (made by hand) the
    /// head's checks made now.
    private func grant(of request: HTTPRequest, dataset: String, endpoint: Route.Endpoint) throws -> TokenGrant {
        if let grant = request.admissionNote as? TokenGrant, grant.dataset == dataset { return grant }
        return try checkHead(request.headers, dataset: dataset, endpoint: endpoint)
    }

    /// The server's clock for `request`: the one its ``TestClock/header`` fixes, else ``now``.
    private func now(for request: HTTPRequest) throws -> Int64 {
        try TestClock.milliseconds(in: request.headers, allowed: allowsTestClock) ?? now()
    }

    /// Steps 3 and 4 of the protocol's order of checks: the token, a read-only token's push, the
    /// content type; then a test clock the service does not honour (``TestClock``).
    private func checkHead(_ headers: HTTPHeaders, dataset: String, endpoint: Route.Endpoint) throws -> TokenGrant {
        let grant = try authorize(headers, dataset: dataset)
        if endpoint == .push, grant.readOnly {
            throw ErrorBody(.readOnlyToken, "this token is read-only; push with a read-write token")
        }
        guard Self.isJSON(contentType: headers["Content-Type"]) else {
            throw ErrorBody(.unsupportedMediaType, "send the body as Content-Type: application/json")
        }
        _ = try TestClock.milliseconds(in: headers, allowed: allowsTestClock)
        return grant
    }

    /// `application/json`, in any case, with no parameter but an optional `charset=utf-8`.
    static func isJSON(contentType: String?) -> Bool {
        guard let contentType else { return false }
        if contentType == "application/json" { return true }
        let parts = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard parts.first == "application/json" else { return false }
        return parts.dropFirst().allSatisfy { parameter in
            parameter.replacingOccurrences(of: "\"", with: "") == "charset=utf-8"
        }
    }

    /// 401 without a valid token; 403 for a token of another dataset, whether or not the named
    /// dataset exists, so tokens cannot probe for names.
    private func authorize(_ headers: HTTPHeaders, dataset: String) throws -> TokenGrant {
        if let jsonWebToken = JSONWebToken.bearer(fromAuthorization: headers["Authorization"]) {
            guard let jsonWebTokens else { throw ErrorBody(.unauthorized, JWTRefusal.notConfigured.description) }
            do {
                return try jsonWebTokens.grant(
                    forToken: jsonWebToken, dataset: dataset, now: Date(timeIntervalSince1970: Double(now()) / 1000))
            } catch {
                throw ErrorBody(.unauthorized, error.description)
            }
        }
        guard let secret = AccessToken.secret(fromAuthorization: headers["Authorization"]),
            let grant = try storage.grant(forTokenDigest: AccessToken.digest(of: secret))
        else {
            throw ErrorBody(
                .unauthorized, "send a valid token as Authorization: Bearer <token>; it may have been revoked")
        }
        guard grant.dataset == dataset else {
            throw ErrorBody(.forbidden, "this token is not for dataset \(dataset)")
        }
        if let expiresAt = grant.expiresAt, expiresAt.timeIntervalSince1970 * 1000 <= Double(now()) {
            throw ErrorBody(
                .unauthorized,
                "this token expired at \(expiresAt.formatted(.iso8601)); ask the server's operator for a new one")
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

    func hello(_ hello: HelloRequest, grant: TokenGrant, now: Int64? = nil) throws -> HelloResponse {
        // Part of the message (section 4, step 8), so before anything else is looked at.
        if let problem = hello.schema.definitionProblem(limits: limits) {
            throw ErrorBody(.invalidMessage, problem)
        }
        // Before anything is recorded: a hello as a site another token holds moves nothing. A
        // read-only token cannot push, so its hello neither binds the site nor is refused for it.
        let claimed =
            grant.readOnly ? nil : try storage.claimSite(hello.site, dataset: grant.dataset, token: grant.tokenID)
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
            if hello.schema.definition != nil {
                schemaRules.definitionRecorded(dataset: grant.dataset)
            }
            message =
                outcome.verdict == .compatible
                ? "ready to sync"
                : "this dataset has schema \(after?.description ?? "?"); keep what you do not know yet"
        case .upgradeRequired:
            // The fingerprint comes before the older major (section 11.1, rules 2 and 5): checked,
            // and nothing recorded.
            _ = try storage.recordSchema(hello.schema, dataset: grant.dataset, mayMoveDataset: false)
            message =
                "this dataset is at schema major version \(outcome.requiredMajorVersion ?? 0); upgrade the app, "
                + "your changes stay queued until then"
        case .protocolUnsupported:
            message = "no common protocol version; this server speaks \(ProtocolVersion.supported)"
        }
        return HelloResponse(
            protocolVersion: outcome.protocolVersion, supportedProtocolVersions: ProtocolVersion.supported,
            verdict: outcome.verdict, datasetSchemaVersion: after, requiredMajorVersion: outcome.requiredMajorVersion,
            limits: limits, serverTime: now ?? self.now(), message: message,
            acknowledgedThrough: try claimed ?? storage.datasetState(grant.dataset, site: hello.site).siteHighWater)
    }

    /// A push that passed every check of its own, ready to store once the batch it follows is.
    struct PreparedPush: Sendable {
        let site: SiteID
        let schemaVersion: SchemaVersion
        let after: Int64?
        let batch: BatchJSON
        let grant: TokenGrant
        var dataset: String { grant.dataset }
    }

    /// The checks of a push that need nothing but the push and the dataset's schema version, in the
    /// order of Protocol/README.md section 4, before any wait for the batch before: an app that
    /// must upgrade is told so at once.
    func preparePush(
        _ push: PushRequest, texts: [MessageReader.CanonicalText?], in body: Data, grant: TokenGrant, now: Int64
    ) throws -> PreparedPush {
        let dataset = grant.dataset
        try checkProtocol(push.protocolVersion)
        // `storeBatch` checks again in its transaction, where the dataset cannot move to a new major
        // meanwhile.
        try ErrorBody.requireMaySync(
            client: push.schemaVersion, dataset: try storage.schemaVersion(of: dataset), pushing: true)
        guard push.changes.count <= limits.maxChangesPerPush else {
            throw ErrorBody(
                .tooManyChanges,
                "\(push.changes.count) changes in one push; send at most \(limits.maxChangesPerPush) per batch")
        }
        var previous: Int64 = 0
        // A version without a definition is checked by the nearest of its major (section 5.2).
        let rules = try schemaRules.rules(dataset: dataset, version: push.schemaVersion)
        var lastTable: SchemaRules.Lookup?
        var spelledAsDeclared = true
        var respelled: [Int] = []
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
            if let rules,
                let problem = rules.problem(
                    in: push.changes[index], last: &lastTable, spelledAsDeclared: &spelledAsDeclared)
            {
                let nearest =
                    rules.version == push.schemaVersion
                    ? "" : " (\(push.schemaVersion) has no definition; \(rules.version)'s is the nearest)"
                throw ErrorBody(problem.code, "change \(index): \(problem.message)\(nearest)", changeIndex: index)
            }
            if !spelledAsDeclared {
                respelled.append(index)
                spelledAsDeclared = true
            }
        }
        let batch: BatchJSON
        if let rules, !respelled.isEmpty {
            // Stored (log and state alike) as the definition spells it: one row, one spelling.
            var changes = push.changes
            var texts = texts
            for index in respelled {
                changes[index] = rules.respelled(changes[index])
                texts[index] = nil
            }
            batch = try BatchJSON(changes, texts: texts, in: body)
        } else {
            batch = try BatchJSON(push.changes, texts: texts, in: body)
        }
        if let after = push.after {
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
        }
        return PreparedPush(
            site: push.site, schemaVersion: push.schemaVersion, after: push.after, batch: batch, grant: grant)
    }

    /// Stores a prepared push whose batch before is stored, wakes pushes waiting for it, and
    /// answers it.
    private func store(_ prepared: PreparedPush) throws -> HTTPResponse {
        try checkWriteScope(prepared)
        // The site's binding is checked (and made) in the transaction that stores the batch.
        let stored = try storage.storeBatch(
            prepared.batch, site: prepared.site, clientSchema: prepared.schemaVersion, dataset: prepared.dataset,
            token: prepared.grant.tokenID)
        // Replays are acknowledged again, not counted again.
        metrics.recordPushed(stored.appended)
        if stored.appended > 0 { waitingPulls.changed(dataset: prepared.dataset) }
        waitingPushes.stored(dataset: prepared.dataset, site: prepared.site)
        return try Self.json(PushResponse(site: prepared.site, acknowledgedThrough: stored.acknowledgedThrough))
    }

    /// Refuses a subject's push to a dataset with scope rules whose changes not stored yet include
    /// one outside the subject's write scope: `403 out_of_scope` naming the first (section 17.2).
    private func checkWriteScope(_ prepared: PreparedPush) throws {
        guard let subject = prepared.grant.subject, let scoped = storage as? any ScopedStorage,
            try scopeRulesVersion(of: prepared.dataset, scoped) != nil
        else { return }
        let stored = try storage.datasetState(prepared.dataset, site: prepared.site).siteHighWater
        let changes = prepared.batch.changes
        let fresh = changes.indices.filter { changes[$0].seq > stored }
        let refusals = try scoped.scopeWriteRefusals(
            fresh.map { changes[$0] }, identity: ScopeIdentity(subject: subject, claims: prepared.grant.claims),
            dataset: prepared.dataset)
        if let first = refusals.keys.min(), let reason = refusals[first] {
            let index = fresh[first]
            throw ErrorBody(.outOfScope, "change \(index): \(reason); nothing was stored", changeIndex: index)
        }
    }

    /// For a push whose batch before is not stored yet: its answer, deferred until that batch is
    /// stored (then this one is stored, on a handler thread) or ``pushOrderWait`` has passed (then
    /// `409 previous_push_missing`). `nil` when the push need not wait. Refused at once when as many
    /// pushes wait as ``WaitingPushes`` allows this site, this token or all.
    private func deferUntilPreviousPush(
        _ prepared: PreparedPush, request: HTTPRequest, started: UInt64, route: Route
    ) throws -> DeferredResponse? {
        guard let after = prepared.after else { return nil }
        // Most pushes find the batch before stored already: they take no place among the waiting.
        // Read with the site's binding: a push as a site another token holds takes none either, so
        // it cannot crowd out the real device's pushes that wait.
        let highWater = try storage.claimSite(prepared.site, dataset: prepared.dataset, token: prepared.grant.tokenID)
        if highWater >= after { return nil }
        let later = DeferredResponse()
        do {
            try waitingPushes.wait(
                .init(dataset: prepared.dataset, site: prepared.site), token: prepared.grant.tokenID, after: after,
                highWater: highWater, until: .now + pushOrderWait
            ) { [self] stored in
                guard stored else {
                    later.send(
                        finish(request, started: started, route: route) {
                            throw Self.previousPushMissing(after, notStoredReason)
                        })
                    return
                }
                later.send(computing: { [self] in
                    finish(request, started: started, route: route) { try store(prepared) }
                })
            }
        } catch {
            let limit =
                switch error {
                case .siteLimit: "as many pushes of this site as the server holds are already waiting"
                case .tokenLimit:
                    "\(Self.maximumWaitingPushesPerToken) pushes of this token are already waiting"
                case .totalLimit: "\(Self.maximumWaitingPushes) pushes are already waiting"
                }
            throw Self.previousPushMissing(after, "\(limit) for the batches they follow")
        }
        return later
    }

    private var notStoredReason: String {
        "the server has not stored that change (the batch holding it was refused or did not arrive within "
            + "\(pushOrderWait))"
    }

    private static func previousPushMissing(_ after: Int64, _ reason: String) -> ErrorBody {
        ErrorBody(
            .previousPushMissing,
            "this push follows the change with seq \(after); \(reason); nothing of this push was stored: push again "
                + "from the oldest unacknowledged change")
    }

    /// A pull's answer, waiting when it asks to and brings nothing yet (section 10.5): deferred
    /// until another site's change is stored in the dataset, its wait passes, or the server stops.
    private func replyToPull(_ request: HTTPRequest, dataset: String, started: UInt64, route: Route) -> HTTPReply {
        let pull: PullRequest
        let grant: TokenGrant
        let answer: PullAnswer
        let seen: WaitingPulls.Generation
        do {
            grant = try self.grant(of: request, dataset: dataset, endpoint: .pull)
            pull = try ProtocolJSON.decode(PullRequest.self, from: request.body, limits: limits)
            // Before the page is read: a change stored after this wakes the pull once it waits.
            seen = waitingPulls.generation(of: dataset)
            answer = try self.pull(pull, dataset: dataset, grant: grant)
        } catch {
            return .response(finish(request, started: started, route: route) { throw error })
        }
        let wait = min(Duration.milliseconds(pull.wait ?? 0), limits.pullWait)
        guard answer.isCaughtUp, wait > .zero else {
            waitingPulls.answerEarlier(dataset: dataset, site: pull.site)
            return .response(finish(request, started: started, route: route) { answer.response })
        }
        let later = DeferredResponse()
        let waiting = WaitingPulls.Pull(
            dataset: dataset, site: pull.site, address: request.remoteAddress, deadline: .now + wait,
            answer: { [self] final, pages in
                do {
                    let now = try self.pull(pull, dataset: dataset, grant: grant, sharing: pages)
                    if now.isCaughtUp && !final { return nil }
                    return finish(request, started: started, route: route, waited: true) { now.response }
                } catch {
                    return finish(request, started: started, route: route, waited: true) { throw error }
                }
            },
            send: { later.send($0) })
        do {
            guard try waitingPulls.wait(waiting, seen: seen) else {
                return .response(finish(request, started: started, route: route) { answer.response })
            }
        } catch {
            let limit =
                switch error {
                case .totalLimit: "\(waitingPulls.limits.total) pulls wait already, the most this server holds"
                case .addressLimit:
                    "\(waitingPulls.limits.perAddress) pulls from your address wait already, the most this server "
                        + "holds for one address"
                }
            return .response(
                finish(request, started: started, route: route) {
                    throw ErrorBody(
                        .tooManyWaitingPulls,
                        "\(limit); pull without wait until the Retry-After seconds have passed")
                })
        }
        return .deferred(later)
    }

    /// A pull's answer, and whether it is a caught-up site's empty log page (a page a live pull
    /// waits instead of sending).
    struct PullAnswer {
        let response: HTTPResponse
        let isCaughtUp: Bool
    }

    /// `pull`'s answer for `grant` (nil: the operator's, outside every scope); with `pages`, a log
    /// page read for pulls answered together is its answer when it carries no change of the
    /// pull's site. A subject's pull of a dataset with scope rules reads its scope
    /// (``scopedPull(_:dataset:subject:grant:storage:limit:)``).
    func pull(_ pull: PullRequest, dataset: String, grant: TokenGrant? = nil, sharing pages: SharedLogPages? = nil)
        throws -> PullAnswer
    {
        try checkProtocol(pull.protocolVersion)
        let datasetVersion = try storage.schemaVersion(of: dataset)
        try ErrorBody.requireMaySync(client: pull.schemaVersion, dataset: datasetVersion, pushing: false)
        if let problem = pull.problem { throw ErrorBody(.invalidMessage, problem) }
        let limit = min(pull.limit ?? 1_000, limits.maxChangesPerPull)
        if let grant, let subject = grant.subject, let scoped = storage as? any ScopedStorage,
            try scopeRulesVersion(of: dataset, scoped) != nil
        {
            return try scopedPull(pull, dataset: dataset, subject: subject, grant: grant, storage: scoped, limit: limit)
        }
        if let pages, let text = pull.cursor {
            let shared = try pages.page(for: .init(dataset: dataset, cursor: text, limit: limit)) {
                () throws -> SharedLogPages.Page? in
                // The state's high-water mark of the site that happens to read is no part of a page.
                let (cursor, state) = try openCursor(text, dataset: dataset, site: pull.site)
                return try cursor.serial.map { serial in
                    try logPage(after: serial, state: state, dataset: dataset, limit: limit, excluding: nil)
                }
            }
            if let shared, !shared.log.carriesChanges(of: pull.site) {
                metrics.recordPulled(shared.log.count)
                return shared.answer
            }
        }
        let state: DatasetState
        let cursor: PullCursor?
        if let text = pull.cursor {
            (cursor, state) = try openCursor(text, dataset: dataset, site: pull.site)
        } else {
            (cursor, state) = (nil, try storage.datasetState(dataset, site: pull.site))
        }
        if let serial = cursor?.serial {
            let page = try logPage(after: serial, state: state, dataset: dataset, limit: limit, excluding: pull.site)
            metrics.recordPulled(page.log.count)
            return page.answer
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
                changes: page.changes, cursor: try cursorKeys.seal(next), hasMore: true, phase: .snapshot,
                remaining: max(page.position.rowsTotal - page.position.rowsDone, 0)))
        return PullAnswer(response: .json(writer.data), isCaughtUp: false)
    }

    /// A pull of `subject`, of a dataset with scope rules: the move of its read scope since its
    /// cursor (section 17.3), the rows that left it in `removed`. A cursor of another subject, of
    /// other claims, or issued before the rules is refused as `invalid_cursor`.
    private func scopedPull(
        _ pull: PullRequest, dataset: String, subject: String, grant: TokenGrant, storage: any ScopedStorage,
        limit: Int
    ) throws -> PullAnswer {
        let claims = ScopedIdentityDigest.of(grant.claims)
        var scope: ScopedCursor?
        let state: DatasetState
        if let text = pull.cursor {
            let cursor: PullCursor
            (cursor, state) = try openCursor(text, dataset: dataset, site: pull.site)
            guard let read = cursor.scope, cursor.subject == subject, cursor.claims == claims else {
                throw ErrorBody(
                    .invalidCursor,
                    cursor.scope == nil
                        ? "the dataset has scope rules since this cursor was issued; pull again without a cursor"
                        : "the cursor was issued to another user, or to a token with other claims; pull again "
                            + "without a cursor")
            }
            scope = read
        } else {
            state = try storage.datasetState(dataset, site: pull.site)
        }
        let page = try storage.readScopedChanges(
            dataset: dataset, identity: ScopeIdentity(subject: subject, claims: grant.claims), after: scope,
            limit: limit, excluding: pull.site)
        metrics.recordPulled(page.changes.count)
        let next = PullCursor.scoped(
            page.cursor, dataset: dataset, incarnation: state.incarnation, subject: subject, claims: claims)
        let removed = try page.removed.map { row in
            RemovedRow(table: row.table, key: try ProtocolJSON.decodeValues(Data(row.key.utf8)))
        }
        var writer = CanonicalJSONWriter(capacity: 256 * page.changes.count + 64 * removed.count + 256)
        try writer.write(
            PullResponse(
                changes: page.changes, cursor: try cursorKeys.seal(next), hasMore: page.hasMore,
                phase: scope?.from == nil ? .snapshot : .log, remaining: 0, removed: removed))
        return PullAnswer(
            response: .json(writer.data), isCaughtUp: !page.hasMore && page.changes.isEmpty && removed.isEmpty)
    }

    /// The cursor `text`, opened and checked against the dataset's state, read with it.
    private func openCursor(_ text: String, dataset: String, site: SiteID) throws -> (PullCursor, DatasetState) {
        let cursor = try cursorKeys.open(text, dataset: dataset)
        let state = try storage.datasetState(dataset, site: site)
        try cursor.check(against: state)
        if cursor.mark != nil {
            try cursor.check(logChain: try chain(dataset: dataset, at: cursor.logSerial, state: state))
        }
        return (cursor, state)
    }

    /// The log page after `serial` without the changes of `site` (of no site: nil), as the answer
    /// it makes.
    private func logPage(after serial: Int64, state: DatasetState, dataset: String, limit: Int, excluding site: SiteID?)
        throws -> SharedLogPages.Page
    {
        let page = try storage.readLog(dataset: dataset, after: serial, excluding: site, limit: limit)
        // The log keeps each change's canonical JSON, so the page is spliced, not re-encoded.
        let next = PullCursor.log(
            page.nextSerial, dataset: dataset, incarnation: state.incarnation, chain: page.nextChain)
        let tail =
            #"],"cursor":"\#(try cursorKeys.seal(next))","hasMore":\#(page.hasMore),"phase":"log","#
            + #""remaining":\#(max(page.lastSerial - page.nextSerial, 0))}"#
        var body = Data(capacity: 16 + page.joinedEntries.count + tail.utf8.count)
        body.append(contentsOf: #"{"changes":["#.utf8)
        body.append(contentsOf: page.joinedEntries)
        body.append(contentsOf: tail.utf8)
        return SharedLogPages.Page(
            answer: PullAnswer(response: .json(body), isCaughtUp: page.count == 0 && !page.hasMore), log: page)
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
