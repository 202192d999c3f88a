/// `POST /v1/datasets/{dataset}/pull`: the next page of other sites' changes after `cursor`.
///
/// Without a cursor the server starts with a snapshot of the dataset's current rows (size
/// proportional to live data, not history), then continues with its log; the cursor of each
/// answer resumes exactly after it, so pages never skip or repeat a change.
///
/// ```swift
/// var cursor: String? = savedCursor
/// repeat {
///     let page = try client.pull(PullRequest(protocolVersion: 1, schemaVersion: version, site: site, cursor: cursor))
///     try apply(page.changes)
///     cursor = page.cursor
/// } while page.hasMore
/// ```
public struct PullRequest: Codable, Sendable, Hashable {
    public var protocolVersion: Int
    public var schemaVersion: SchemaVersion
    /// The pulling site; its own changes are left out of log pages.
    public var site: SiteID
    /// Opaque; nil to start from the beginning.
    public var cursor: String?
    /// At most this many changes (capped by ``Limits/maxChangesPerPull``).
    public var limit: Int?
    /// Milliseconds the server may hold the answer while the site is caught up, until another
    /// site's change is stored (a live pull, protocol version 3; `Protocol/README.md`, section
    /// 10.5). Capped by ``Limits/maxPullWaitMilliseconds``; nil or 0 answers at once.
    public var wait: Int?

    public init(
        protocolVersion: Int, schemaVersion: SchemaVersion, site: SiteID, cursor: String?, limit: Int? = nil,
        wait: Int? = nil
    ) {
        self.protocolVersion = protocolVersion
        self.schemaVersion = schemaVersion
        self.site = site
        self.cursor = cursor
        self.limit = limit
        self.wait = wait
    }
}

/// A page of changes and where to resume.
public struct PullResponse: Codable, Sendable, Hashable {
    public enum Phase: String, Codable, Sendable, Hashable {
        /// The dataset's current rows, as inserts (then the later column changes, then deletes).
        case snapshot
        /// Changes pushed after the snapshot, in the order the server stored them.
        case log
    }

    public var changes: [Change]
    /// Pass it to the next pull; store it once the page is applied.
    public var cursor: String
    public var hasMore: Bool
    public var phase: Phase
    /// At most this many changes remain after this page (for progress; exact for snapshots).
    public var remaining: Int64
    /// The rows that left the pulling subject's read scope (section 17.3), which the device
    /// removes without recording a delete; absent in a pull of a dataset without scope rules,
    /// or by a token outside every scope.
    public var removed: [RemovedRow]?

    public init(
        changes: [Change], cursor: String, hasMore: Bool, phase: Phase, remaining: Int64, removed: [RemovedRow]? = nil
    ) {
        self.changes = changes
        self.cursor = cursor
        self.hasMore = hasMore
        self.phase = phase
        self.remaining = remaining
        self.removed = removed
    }
}

/// A row by its table and key, as a pull page names the rows that left its subject's scope.
///
/// ```swift
/// let gone = RemovedRow(table: "lists", key: ["id": .text("groceries")])
/// ```
public struct RemovedRow: Codable, Sendable, Hashable {
    public var table: String
    public var key: [String: WireValue]

    public init(table: String, key: [String: WireValue]) {
        self.table = table
        self.key = key
    }
}
