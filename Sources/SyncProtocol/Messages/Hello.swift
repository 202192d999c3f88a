/// `POST /v1/datasets/{dataset}/hello`: the negotiation a client opens every sync with.
///
/// ```swift
/// let hello = HelloRequest(protocolVersions: [1], site: site, schema: schema)
/// ```
public struct HelloRequest: Codable, Sendable, Hashable {
    public var protocolVersions: [Int]
    public var site: SiteID
    public var schema: SchemaDescription

    public init(protocolVersions: [Int] = ProtocolVersion.supported, site: SiteID, schema: SchemaDescription) {
        self.protocolVersions = protocolVersions
        self.site = site
        self.schema = schema
    }
}

/// The server's answer: the protocol version chosen, the verdict on the client's schema, and the
/// limits the server enforces.
public struct HelloResponse: Codable, Sendable, Hashable {
    /// nil when the verdict is `protocolUnsupported`.
    public var protocolVersion: Int?
    public var supportedProtocolVersions: [Int]
    public var verdict: Verdict
    /// The newest schema version the dataset has seen (nil for a dataset no client has joined).
    public var datasetSchemaVersion: SchemaVersion?
    /// For `upgradeRequired`: the major version the dataset accepts.
    public var requiredMajorVersion: Int?
    public var limits: Limits
    /// The server's wall clock in milliseconds since 1970, so a client can see its own skew.
    public var serverTime: Int64
    /// A sentence for people: what the verdict means for this client.
    public var message: String
    /// The highest `seq` of the hello's site the dataset has stored (its high-water mark, 0 before
    /// the site's first push); nil from a server that does not say. A client that was acknowledged
    /// more than this pushed changes the server has lost (it was restored from a backup) and pushes
    /// them again (Protocol/README.md, section 9.1).
    public var acknowledgedThrough: Int64?

    public init(
        protocolVersion: Int?, supportedProtocolVersions: [Int], verdict: Verdict,
        datasetSchemaVersion: SchemaVersion?, requiredMajorVersion: Int?, limits: Limits, serverTime: Int64,
        message: String, acknowledgedThrough: Int64? = nil
    ) {
        self.protocolVersion = protocolVersion
        self.supportedProtocolVersions = supportedProtocolVersions
        self.verdict = verdict
        self.datasetSchemaVersion = datasetSchemaVersion
        self.requiredMajorVersion = requiredMajorVersion
        self.limits = limits
        self.serverTime = serverTime
        self.message = message
        self.acknowledgedThrough = acknowledgedThrough
    }
}

/// The server's verdict on a client's schema (see ``Compatibility/negotiate(_:)``).
public enum Verdict: String, Codable, Sendable, Hashable, CaseIterable {
    /// Sync as usual.
    case compatible
    /// Sync as usual, but a newer minor version exists in the dataset: this client will receive
    /// tables and columns it does not know yet and must keep them (OfflineStore stashes them).
    case newerSchemaAvailable
    /// The dataset is at another major version; pushes and pulls are refused until the app is
    /// upgraded to `requiredMajorVersion`. The client keeps its queue.
    case upgradeRequired
    /// The client and server share no protocol version.
    case protocolUnsupported
}
