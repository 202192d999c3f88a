import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite

/// A batch of changes from other sites with the part of applying them that needs no database
/// already done (``ChangeLog/prepare(_:)``): each change's table found in the schema, its key's
/// values in key order, its values by column position, the checks of its names, site id and
/// types, and the distinct rows of the page. A sync prepares each page on the thread that read
/// it, so the thread holding the write lock only merges and writes.
///
/// ```swift
/// let prepared = log.prepare(page.changes)  // on any thread
/// let outcome = try log.apply(prepared, to: db)
/// ```
///
/// Applying it gives exactly what applying ``changes`` gives. A batch prepared by a change log
/// of another schema (the store migrated meanwhile) is prepared again when it applies.
package struct PreparedChanges: Sendable {
    /// The changes, in order.
    package let changes: [IncomingChange]
    /// The schema the batch was prepared against.
    let schema: SchemaSnapshot
    /// The synced tables the changes name, each once; ``ChangePlan/table`` is a place here.
    let tables: [TableShape]
    /// The site ids the changes carry, each once; ``ChangePlan/site`` is a place here.
    let sites: [Data]
    /// Per change, what preparing it found.
    let plans: [ChangePlan]
    /// The distinct rows of the page whose log entries are read together.
    let rows: PageRows
    /// The rows the page names as having left the scope, removed before its changes apply.
    package let leaving: LeavingRows?
    /// Set when the batch is a page of a download that replaces what the store holds.
    package let replacing: ReplacingDownloadPage?

    /// How many changes the batch holds.
    package var count: Int { changes.count }
    /// Whether applying the batch has nothing to do: no change, no row leaving, and not the last
    /// page of a replacing download (whose apply removes what the download did not give).
    package var isEmpty: Bool {
        changes.isEmpty && (leaving?.rows.isEmpty ?? true) && replacing?.isLast != true
    }
}

/// One change as preparing it found it. The checks that refuse it keep their order in the apply:
/// the site id and the names before its clock is received, its key and columns after its table
/// is known (a change for a table the schema does not sync goes to the stash unchecked).
struct ChangePlan: Sendable {
    /// Why the change is refused before its clock is received: its site id or a name from the wire.
    var refusedBeforeClock: ChangeLogError?
    /// Its table's place in ``PreparedChanges/tables``; nil when the schema does not sync a table of
    /// that name.
    var table: Int?
    /// Its site id's place in ``PreparedChanges/sites``: the apply looks the site's number up by
    /// place, without comparing ids.
    var site: Int
    /// Why the change is refused once its table is known: its key or one of its columns.
    var refused: ChangeLogError?
    /// The key's values in the order of the table's key columns.
    var keyValues: [DatabaseValue] = []
    /// The key as the log stores it (``ChangeLog/loggedKey(_:)``).
    var loggedKey: DatabaseValue = .null
    /// The values the change carries by the table's column positions, its key's values at the key
    /// columns; nil where it carries none.
    var known: [DatabaseValue?] = []
    /// Values of columns this schema does not know, which wait in the stash.
    var unknown: [String: DatabaseValue] = [:]
}

/// The rows of a page whose log entries one statement per table reads
/// (``ChangeLog/readPageLog(_:_:)``): keys stored as plain ASCII JSON text.
struct PageRows: Sendable {
    /// One table's distinct keys as a JSON array, and the slot of each.
    struct Keys: Sendable {
        /// The table's declared name.
        var table: String
        var json: String
        var slots: [Int]
    }

    /// Per change, the slot of its row; nil for a row read from the log when it applies.
    var slots: [Int?]
    /// Per slot, whether more than one change of the page changes that row.
    var repeated: [Bool]
    var keys: [Keys]
}
