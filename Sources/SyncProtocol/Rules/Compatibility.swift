/// The negotiation rules as pure functions, so the server, clients and tests agree on them.
///
/// Rules, in order:
/// 1. No protocol version in common: `protocolUnsupported`.
/// 2. A dataset no client has joined takes the client's schema version: `compatible`.
/// 3. The client's major is below the dataset's: `upgradeRequired` (to the dataset's major).
/// 4. The client's major is above the dataset's: `compatible`, and the dataset moves to the
///    client's version (only a client allowed to push moves it); from then on, clients of the old
///    major get `upgradeRequired` and keep their queued changes until they upgrade.
/// 5. Same major, the client older than the dataset's newest: `newerSchemaAvailable`.
/// 6. Same major, the client as new or newer: `compatible` (a newer one becomes the dataset's
///    newest).
///
/// ```swift
/// let outcome = Compatibility.negotiate(.init(
///     clientProtocols: [1], serverProtocols: [1], client: SchemaVersion(1, 0), dataset: SchemaVersion(1, 1)))
/// #expect(outcome.verdict == .newerSchemaAvailable)
/// ```
public enum Compatibility {
    public struct Input: Sendable, Hashable {
        public var clientProtocols: [Int]
        public var serverProtocols: [Int]
        public var client: SchemaVersion
        /// The newest schema version the dataset has seen; nil for a new dataset.
        public var dataset: SchemaVersion?

        public init(clientProtocols: [Int], serverProtocols: [Int], client: SchemaVersion, dataset: SchemaVersion?) {
            self.clientProtocols = clientProtocols
            self.serverProtocols = serverProtocols
            self.client = client
            self.dataset = dataset
        }
    }

    public struct Outcome: Sendable, Hashable {
        public var verdict: Verdict
        public var protocolVersion: Int?
        /// For `upgradeRequired`, the major version the dataset accepts.
        public var requiredMajorVersion: Int?
        /// The dataset's newest schema version once this client has joined (unchanged unless
        /// the client is newer); nil when nothing is known.
        public var datasetVersionAfter: SchemaVersion?
    }

    public static func negotiate(_ input: Input) -> Outcome {
        guard let chosen = ProtocolVersion.highestCommon(client: input.clientProtocols, server: input.serverProtocols)
        else {
            return Outcome(
                verdict: .protocolUnsupported, protocolVersion: nil, requiredMajorVersion: nil,
                datasetVersionAfter: input.dataset)
        }
        guard let dataset = input.dataset else {
            return Outcome(
                verdict: .compatible, protocolVersion: chosen, requiredMajorVersion: nil,
                datasetVersionAfter: input.client)
        }
        if input.client.major < dataset.major {
            return Outcome(
                verdict: .upgradeRequired, protocolVersion: chosen, requiredMajorVersion: dataset.major,
                datasetVersionAfter: dataset)
        }
        if input.client < dataset {
            return Outcome(
                verdict: .newerSchemaAvailable, protocolVersion: chosen, requiredMajorVersion: nil,
                datasetVersionAfter: dataset)
        }
        return Outcome(
            verdict: .compatible, protocolVersion: chosen, requiredMajorVersion: nil, datasetVersionAfter: input.client)
    }

    /// Whether a client at `client` may push to and pull from a dataset at `dataset` (the check
    /// every push and pull repeats, since the dataset may have moved on since the hello).
    public static func maySync(client: SchemaVersion, dataset: SchemaVersion?) -> Bool {
        guard let dataset else { return true }
        return client.major >= dataset.major
    }

    /// Whether a push at `client` names a major above the dataset's: only a hello moves a dataset
    /// to a new major (it checks the major its operator allows, section 11.3), so such a push is
    /// refused with `409 major_not_allowed`, storing nothing, until the client has said hello.
    ///
    /// ```swift
    /// #expect(Compatibility.pushNeedsHello(client: SchemaVersion(2, 0), dataset: SchemaVersion(1, 1)))
    /// ```
    public static func pushNeedsHello(client: SchemaVersion, dataset: SchemaVersion?) -> Bool {
        guard let dataset else { return false }
        return client.major > dataset.major
    }
}
