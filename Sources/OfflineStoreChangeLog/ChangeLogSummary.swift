/// Who a store is and how much of its log waits to be pushed, read by
/// ``ChangeLogReader/summary(in:)`` from the metadatabase alone.
///
/// ```swift
/// if let summary = try ChangeLogReader.summary(in: db) {
///     print(summary.storeID, summary.siteID, summary.pendingChanges)
/// }
/// ```
package struct ChangeLogSummary: Sendable, Hashable {
    /// The store id the database and its metadatabase share (a UUID string).
    package var storeID: String
    /// This device's 16-byte site id in lowercase hex.
    package var siteID: String
    /// How many log entries wait to be pushed.
    package var pendingChanges: Int

    package init(storeID: String, siteID: String, pendingChanges: Int) {
        self.storeID = storeID
        self.siteID = siteID
        self.pendingChanges = pendingChanges
    }
}
