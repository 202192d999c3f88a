/// Where a subject's scoped reads stand (``SQLiteSyncStorage/readScopedChanges(dataset:identity:after:limit:excluding:)``):
/// the move of its scope being read, from one position to another (``ScopeTransition``), and how
/// much of it the pages so far gave. A move's rows that leave and rows that come in are the same
/// lists, in the same order, every time they are read (the index's history does not change), so
/// the pages of one move count through them.
///
/// ```swift
/// var cursor: ScopedCursor?  // nil: a first download
/// repeat { let page = try storage.readScopedChanges(…, after: cursor, limit: 500, …); cursor = page.cursor } while page.hasMore
/// ```
struct ScopedCursor: Codable, Hashable, Sendable {
    /// The position the move starts from; nil for a first download.
    var from: Int64?
    /// The position it goes to: where the index stood when its first page was read.
    var to: Int64
    /// How many of the rows that leave the scope, and of those that come in, pages gave.
    var leavingSent: Int = 0
    var enteringSent: Int = 0
    /// The last log serial whose changes pages gave (the move's changes are those after `from`).
    var changesThrough: Int64?

    /// The cursor of the next move, from where this one ends.
    var next: ScopedCursor { ScopedCursor(from: to, to: to) }
}
