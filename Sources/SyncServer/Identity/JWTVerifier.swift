import Foundation

/// Checks the JSON Web Tokens devices send against their dataset's ``JWTConfiguration``: the
/// signature with the dataset's keys (only with keys of the kind the algorithm needs; `alg: none`
/// never), then `exp` (required) and `nbf` within the leeway, `iss`, `aud` and `sub` (required).
/// A token that passes grants the dataset to its subject.
///
/// The key files are read when the verifier is made, and again when one of them changed (looked
/// once a second at most, when a token is checked): a file that no longer reads keeps the keys
/// read before, and `report` says why. Tokens already verified are remembered by their text (a
/// device sends the same one until it expires), so each is verified once per key change, its time
/// claims checked on every request.
///
/// ```swift
/// let verifier = try JWTVerifier(configuration: configuration) { problem in log(problem) }
/// let grant = try verifier.grant(forToken: token, dataset: "family", now: Date())  // throws JWTRefusal
/// grant.subject  // "bob"
/// ```
public final class JWTVerifier: Sendable {
    private struct Loaded: Sendable {
        let keys: JWTKeys
        let files: [URL: FileStamp]
        let checkedAt: ContinuousClock.Instant
        /// Counted up at each reload: tokens verified before are verified again.
        let generation: Int
    }

    /// What a file held when read, by its digest: key files are small, and a digest sees every
    /// change, whatever the file system's clock resolution or the editor's way of writing.
    private struct FileStamp: Sendable, Equatable {
        let digest: Data?

        init(_ url: URL) {
            digest = (try? Data(contentsOf: url)).map(Crypto.sha256)
        }
    }

    private struct Verified: Sendable {
        let dataset: String
        let generation: Int
        let grant: TokenGrant
        let expires: Double
        let notBefore: Double?
    }

    public let configuration: JWTConfiguration
    private let report: @Sendable (String) -> Void
    private let loaded: [String: LockedState<Loaded>]
    private let verified = LockedState<[String: Verified]>([:])
    /// Most tokens remembered; the memory is emptied when full.
    static let mostRemembered = 4_096

    /// Reads every dataset's keys now; throws, naming the dataset and the file, when one does not
    /// read.
    public init(configuration: JWTConfiguration, report: @escaping @Sendable (String) -> Void) throws(ServerError) {
        self.configuration = configuration
        self.report = report
        var loaded: [String: LockedState<Loaded>] = [:]
        for (name, dataset) in configuration.datasets {
            do {
                loaded[name] = LockedState(try Self.load(dataset, generation: 0))
            } catch {
                throw ServerError(
                    .invalidArgument, "the JSON Web Token keys of dataset \(name): \(error.message)",
                    fix: error.fix)
            }
        }
        self.loaded = loaded
    }

    private static func load(_ dataset: JWTConfiguration.Dataset, generation: Int) throws(ServerError) -> Loaded {
        let files = [dataset.keysFile, dataset.secretFile].compactMap { $0 }
        // Stamped before reading: a write during the read shows as a change at the next look.
        let stamps = Dictionary(uniqueKeysWithValues: files.map { ($0, FileStamp($0)) })
        return Loaded(keys: try JWTKeys.read(for: dataset), files: stamps, checkedAt: .now, generation: generation)
    }

    /// The grant of `token` for `dataset`, or the refusal that names the check it failed.
    func grant(forToken token: String, dataset: String, now: Date) throws(JWTRefusal) -> TokenGrant {
        guard let configuration = configuration.datasets[dataset], let state = loaded[dataset] else {
            throw .notConfigured
        }
        let current = keys(of: dataset, configuration, state)
        let seconds = now.timeIntervalSince1970
        let leeway = Double(self.configuration.leewaySeconds)
        if let known = verified.withLock({ $0[token] }), known.dataset == dataset,
            known.generation == current.generation
        {
            try Self.checkTimes(expires: known.expires, notBefore: known.notBefore, now: seconds, leeway: leeway)
            return known.grant
        }
        let parsed = try JSONWebToken(token)
        try Self.checkSignature(parsed, keys: current.keys)
        guard case .number(let expires) = parsed.claims["exp"] else {
            throw .claim("it has no expiry (exp): tokens that never expire are refused")
        }
        var notBefore: Double?
        if let claim = parsed.claims["nbf"] {
            guard case .number(let value) = claim else { throw .claim("its nbf is not a number") }
            notBefore = value
        }
        try Self.checkTimes(expires: expires, notBefore: notBefore, now: seconds, leeway: leeway)
        guard parsed.claims["iss"] == .string(configuration.issuer) else {
            throw .claim("its issuer (iss) is not the one this dataset accepts")
        }
        switch parsed.claims["aud"] {
        case .string(let audience) where audience == configuration.audience: break
        case .strings(let audiences) where audiences.contains(configuration.audience): break
        default: throw .claim("its audience (aud) does not include this dataset's")
        }
        guard case .string(let subject) = parsed.claims["sub"], !subject.isEmpty,
            subject.utf8.count <= TokenGrant.maximumSubjectLength
        else {
            throw .claim("it names no subject (sub) of 1 to \(TokenGrant.maximumSubjectLength) bytes")
        }
        var claims: [String: String] = [:]
        for (name, value) in parsed.claims where !["exp", "nbf", "iat"].contains(name) {
            if let text = value.text { claims[name] = text }
        }
        let grant = TokenGrant(
            tokenID: TokenGrant.subjectTokenID(subject), dataset: dataset, readOnly: false, subject: subject,
            claims: claims)
        verified.withLock { memory in
            if memory.count >= Self.mostRemembered { memory.removeAll(keepingCapacity: true) }
            memory[token] = Verified(
                dataset: dataset, generation: current.generation, grant: grant, expires: expires, notBefore: notBefore)
        }
        return grant
    }

    /// The dataset's keys, read again when a file changed since they were.
    private func keys(
        of name: String, _ dataset: JWTConfiguration.Dataset, _ state: LockedState<Loaded>
    ) -> Loaded {
        let current = state.current
        guard ContinuousClock.now - current.checkedAt >= .seconds(1) else { return current }
        let changed = current.files.contains { url, stamp in FileStamp(url) != stamp }
        guard changed else {
            let checked = Loaded(
                keys: current.keys, files: current.files, checkedAt: .now, generation: current.generation)
            state.withLock { $0 = checked }
            return checked
        }
        do {
            let reloaded = try Self.load(dataset, generation: current.generation + 1)
            state.withLock { $0 = reloaded }
            report(
                "read the JSON Web Token keys of dataset \(name) again: \(reloaded.keys.algorithms.joined(separator: ", "))"
            )
            return reloaded
        } catch {
            // Looked at again in a second; the keys read before stay in use meanwhile.
            let kept = Loaded(keys: current.keys, files: current.files, checkedAt: .now, generation: current.generation)
            state.withLock { $0 = kept }
            report(
                "the JSON Web Token keys of dataset \(name) changed but do not read (\(error)); the keys read before stay in use"
            )
            return kept
        }
    }

    private static func checkSignature(_ token: JSONWebToken, keys: JWTKeys) throws(JWTRefusal) {
        let accepted = keys.algorithms
        guard token.algorithm.lowercased() != "none" else {
            throw .algorithm("unsigned tokens (alg none) are refused")
        }
        guard accepted.contains(token.algorithm) else {
            let named = token.algorithm.utf8.count <= 16 && token.algorithm.allSatisfy { $0.isLetter || $0.isNumber }
            throw .algorithm(
                "\(named ? "alg \(token.algorithm)" : "its alg") is not accepted here; this dataset accepts "
                    + accepted.joined(separator: ", "))
        }
        if token.algorithm == "HS256" {
            guard let secret = keys.secret,
                let expected = try? Crypto.hmacSHA256(key: secret, message: token.signingInput),
                Crypto.constantTimeEqual(expected, token.signature)
            else { throw .signature }
            return
        }
        let kind: AsymmetricKey.Kind = token.algorithm == "RS256" ? .rsa : .p256
        let candidates = keys.publicKeys.filter { $0.key.kind == kind && $0.id == token.keyID }
        guard !candidates.isEmpty else {
            throw .key(
                token.keyID == nil
                    ? "it names no key (kid), and every \(token.algorithm) key of this dataset has an id"
                    : "no \(token.algorithm) key of this dataset has its kid")
        }
        guard candidates.contains(where: { $0.key.verify(token.signature, of: token.signingInput) }) else {
            throw .signature
        }
    }

    private static func checkTimes(expires: Double, notBefore: Double?, now: Double, leeway: Double)
        throws(JWTRefusal)
    {
        guard now <= expires + leeway else {
            throw .claim(
                "it expired at \(Self.format(expires)) (exp), more than the leeway of \(Int(leeway)) s ago; "
                    + "get a new one from the identity provider")
        }
        if let notBefore, now < notBefore - leeway {
            throw .claim("it is not valid before \(Self.format(notBefore)) (nbf)")
        }
    }

    private static func format(_ seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 1e11 else { return "\(seconds)" }
        return Date(timeIntervalSince1970: seconds).formatted(.iso8601)
    }
}
