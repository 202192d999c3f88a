/// `POST /v1/datasets/{dataset}/push`: a batch of the pushing site's changes, in queue order.
///
/// The batch is idempotent: the server keeps, per site, the highest `seq` it has stored, skips
/// changes at or below it, and answers with the new high-water mark, so a replayed or
/// overlapping batch stores nothing twice and gets the same answer. The batch is validated whole
/// before anything is stored, and stored all or nothing.
///
/// ```swift
/// let push = PushRequest(protocolVersion: 1, schemaVersion: SchemaVersion(1, 1), site: site, changes: batch)
/// ```
public struct PushRequest: Codable, Sendable, Hashable {
    public var protocolVersion: Int
    public var schemaVersion: SchemaVersion
    public var site: SiteID
    /// Every change's `site` is the batch's `site`, and `seq` strictly grows along the batch.
    public var changes: [Change]
    /// The `seq` of the last change of the batch sent before this one and not yet answered: the
    /// server stores this batch only once the site's high-water mark has reached it (it waits a
    /// moment, then answers `409 previous_push_missing`). Lets a client send its next batch before
    /// the answer to the last one comes back, up to ``Limits/maxPushesInFlight`` at once. Protocol
    /// version 2 (``ProtocolVersion/pushesInOrder``): a version-1 server, which would ignore it,
    /// refuses the push for its version instead. Absent: store at once.
    public var after: Int64?

    public init(
        protocolVersion: Int, schemaVersion: SchemaVersion, site: SiteID, changes: [Change], after: Int64? = nil
    ) {
        self.protocolVersion = protocolVersion
        self.schemaVersion = schemaVersion
        self.site = site
        self.changes = changes
        self.after = after
    }
}

/// The acknowledgement: every change of `site` with `seq` up to `acknowledgedThrough` is stored.
public struct PushResponse: Codable, Sendable, Hashable {
    public var site: SiteID
    public var acknowledgedThrough: Int64

    public init(site: SiteID, acknowledgedThrough: Int64) {
        self.site = site
        self.acknowledgedThrough = acknowledgedThrough
    }
}
