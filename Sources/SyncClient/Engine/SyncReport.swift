import SyncProtocol

/// What one sync did.
public struct SyncReport: Sendable, Hashable {
    /// Local changes the server acknowledged.
    public var pushed = 0
    /// Local changes the server refused (kept in the store's rejected changes).
    public var rejected = 0
    /// Changes pulled and applied (or found already known).
    public var pulled = 0
    /// Pulled changes waiting in the stash for a schema that knows their tables or columns.
    public var stashed = 0
    public var verdict: Verdict?
    public var protocolVersion: Int?
    public var datasetSchemaVersion: SchemaVersion?

    public init() {}
}

/// Progress of a pull, for a progress line: changes applied of the total the server announced.
public struct SyncProgress: Sendable, Hashable {
    public var applied: Int
    /// At least this many in all (the server's `remaining` after the first page, plus what came).
    public var total: Int
}
