/// A page of a download that replaces what the store holds: one started after the server refused
/// the store's pull cursor, from a dataset whose pages say which rows leave the read scope (Protocol/README.md
/// §17.3). The store may hold rows that are no longer in its scope, which no page of the download
/// names as leaving (the download starts from nothing): the apply keeps the rows each page gives
/// (`ostore_downloaded`), and the last page's apply removes every row of the synced tables and
/// of the stash that no page gave, as rows leaving the scope are removed (``LeavingRows``): no
/// delete recorded, the row's versions with it. A row with a change this store has not pushed yet
/// is kept: the server decides on that change when it arrives.
///
/// ```swift
/// let page = ReplacingDownloadPage(isLast: !response.hasMore)
/// let outcome = try log.apply(log.prepare(changes, leaving: leaving, replacing: page), to: db)
/// ```
package struct ReplacingDownloadPage: Sendable, Hashable {
    /// Whether this page ends the download: its apply removes what no page gave.
    package var isLast: Bool

    package init(isLast: Bool) { self.isLast = isLast }
}
