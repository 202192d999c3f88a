/// One change of one row, as pushed by the site that made it and as pulled by every other site.
///
/// ```json
/// {"table":"reminders","key":{"id":{"text":"4f…"}},"op":"update",
///  "columns":{"title":{"text":"Oat milk"}},"clock":"1764000000000-3",
///  "site":"9a0c…","seq":42}
/// ```
///
/// `seq` is the change's place in its site's queue: it grows with every change the site makes
/// (with gaps), which makes pushes idempotent (see ``PushRequest``).
public struct Change: Codable, Sendable, Hashable {
    public enum Operation: String, Codable, Sendable, Hashable, CaseIterable {
        /// A new row: `columns` holds every column.
        case insert
        /// Changed columns of an existing row: `columns` holds them.
        case update
        /// The row was deleted: `columns` is empty.
        case delete
    }

    public var table: String
    /// The primary key, by column name.
    public var key: [String: WireValue]
    public var op: Operation
    public var columns: [String: WireValue]
    public var clock: ChangeClock
    public var site: SiteID
    public var seq: Int64

    public init(
        table: String, key: [String: WireValue], op: Operation, columns: [String: WireValue] = [:],
        clock: ChangeClock, site: SiteID, seq: Int64
    ) {
        self.table = table
        self.key = key
        self.op = op
        self.columns = columns
        self.clock = clock
        self.site = site
        self.seq = seq
    }

    private enum CodingKeys: String, CodingKey { case table, key, op, columns, clock, site, seq }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        table = try container.decode(String.self, forKey: .table)
        key = try container.decode([String: WireValue].self, forKey: .key)
        op = try container.decode(Operation.self, forKey: .op)
        // A delete may leave `columns` out.
        columns = try container.decodeIfPresent([String: WireValue].self, forKey: .columns) ?? [:]
        clock = try container.decode(ChangeClock.self, forKey: .clock)
        site = try container.decode(SiteID.self, forKey: .site)
        seq = try container.decode(Int64.self, forKey: .seq)
    }
}
