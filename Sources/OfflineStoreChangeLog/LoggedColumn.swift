import Foundation
import SyncProtocol

/// What one entry of the keyed log (`ostore_changes`) dates, by its `columnName`: the row's
/// creation, its deletion, or one of its columns.
///
/// The log stores the creation as `''` and the deletion as `'-'`, texts no column can be named
/// (every name from the wire is a plain identifier, `ChangeValidation.isPlainIdentifier`); the tracking
/// triggers (``ChangeTracker``) and the C change tracking write the same texts. Swift code names
/// them only through this type; SQL text takes ``sqlLiteral``.
///
/// ```swift
/// switch LoggedColumn(stored: columnName) {
/// case .creation: operation = .insert
/// case .deletion: operation = .delete
/// case .column(let name): columns = [name]
/// }
/// ```
enum LoggedColumn: Hashable, Sendable {
    case creation
    case deletion
    case column(String)

    /// The entry read from the log's `columnName`.
    init(stored: String) {
        if stored.isEmpty {
            self = .creation
        } else if stored == "-" {
            self = .deletion
        } else {
            self = .column(stored)
        }
    }

    /// As the log stores it in `columnName`.
    var stored: String {
        switch self {
        case .creation: ""
        case .deletion: "-"
        case .column(let name): name
        }
    }

    /// ``stored`` as an SQL string literal, for statement texts: `''`, `'-'`.
    var sqlLiteral: String { "'" + stored.replacingOccurrences(of: "'", with: "''") + "'" }
}

/// A row's versions as the keyed log holds them: its creation's, its deletion's and each of its
/// columns' (by the column's declared name), read by one statement for the row's whole range of
/// the log's index.
struct RowVersions: Sendable {
    var created: ChangeVersion?
    var deleted: ChangeVersion?
    var columns: [String: ChangeVersion] = [:]

    /// No entry at all: a row this store has never seen.
    var isEmpty: Bool { created == nil && deleted == nil && columns.isEmpty }

    /// The row's life as the merge rule weighs it.
    var mergeRow: MergeRule.Row { MergeRule.Row(created: created, deleted: deleted) }

    subscript(_ entry: LoggedColumn) -> ChangeVersion? {
        get {
            switch entry {
            case .creation: created
            case .deletion: deleted
            case .column(let name): columns[name]
            }
        }
        set {
            switch entry {
            case .creation: created = newValue
            case .deletion: deleted = newValue
            case .column(let name): columns[name] = newValue
            }
        }
    }
}
