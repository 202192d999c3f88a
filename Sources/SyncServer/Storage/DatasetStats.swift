import SyncProtocol

/// What a dataset's storage holds: its log, and its merged state of rows, the live ones and the
/// tombstones (rows whose newest version is a delete, by ``MergeRule``), which `ostore-server
/// dataset stats` prints. Read by a scan of the dataset's rows: for an operator's look, not for
/// every request.
///
/// ```swift
/// let stats = try storage.datasetStats("family")
/// print(stats.logEntries, stats.liveRows, stats.tombstones)
/// ```
public struct DatasetStats: Sendable, Hashable, Codable {
    /// The dataset's name.
    public var dataset: String
    /// The changes the log holds, and the bytes of their bodies (the canonical JSON pulls send).
    public var logEntries: Int64
    public var logBytes: Int64
    /// The serial of the newest change stored, and of the newest one the state holds (the
    /// embedded storage folds the log into its state after the push's commit; PostgreSQL in it).
    public var lastSerial: Int64
    public var foldedSerial: Int64
    /// The first serial the log still holds every change from; nil while it holds every change
    /// since the dataset was made (no retention).
    public var horizonSerial: Int64?
    /// The state's rows whose newest version is not a delete, and those whose newest is.
    public var liveRows: Int64
    public var tombstones: Int64

    public init(
        dataset: String, logEntries: Int64, logBytes: Int64, lastSerial: Int64, foldedSerial: Int64,
        horizonSerial: Int64?, liveRows: Int64, tombstones: Int64
    ) {
        self.dataset = dataset
        self.logEntries = logEntries
        self.logBytes = logBytes
        self.lastSerial = lastSerial
        self.foldedSerial = foldedSerial
        self.horizonSerial = horizonSerial
        self.liveRows = liveRows
        self.tombstones = tombstones
    }

    /// Counts one row of the state by its creation and deletion versions.
    mutating func count(_ row: MergeRule.Row) {
        if row.isDeleted { tombstones += 1 } else { liveRows += 1 }
    }
}
