import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

/// What applying a change to a synced table needs to know of the table alone, with no database:
/// its key columns and their positions, how a name from the wire finds its column, and which
/// storage classes a STRICT table takes in each column. Made once per table and batch, on
/// whichever thread prepares the batch (``ChangeLog/prepare(_:)``). A class: every change of a
/// batch looks at its table's shape, and copying a struct of seven arrays and dictionaries would
/// retain each of them.
final class TableShape: Sendable {
    let definition: TableDefinition
    let keyColumns: [String]
    /// The positions of the key columns in ``TableDefinition/columns``, in key order.
    let keyPositions: [Int]
    let isKey: [Bool]
    /// Whether the table is STRICT, and each column's declared type, for the type check.
    let isStrict: Bool
    let columnTypes: [ColumnType]
    /// Per column, the storage classes a STRICT table takes in it (``StrictColumnRule``), looked up
    /// once: comparing a ``ColumnType`` compares strings, for every value.
    private let acceptedClasses: [StorageClasses]
    /// Column positions by declared name and by lowercased name; the first column of a
    /// lowercased name wins, as a search from the start would find it.
    private let positions: [String: Int]

    init(_ definition: TableDefinition) {
        self.definition = definition
        let keyColumns = ChangeTracker.keyColumns(of: definition)
        let keyPositions = keyColumns.map { key in definition.columns.firstIndex { $0.name == key }! }
        self.keyColumns = keyColumns
        self.keyPositions = keyPositions
        isKey = definition.columns.indices.map { keyPositions.contains($0) }
        isStrict = definition.options.contains(.strict)
        let columnTypes = definition.columns.map(\.type)
        self.columnTypes = columnTypes
        acceptedClasses = columnTypes.map { StrictColumnRule.accepted(byDeclaredType: $0.rawValue) }
        var byName: [String: Int] = [:]
        for (position, column) in definition.columns.enumerated() where byName[column.name.lowercased()] == nil {
            byName[column.name.lowercased()] = position
        }
        for position in byName.values { byName[definition.columns[position].name] = position }
        positions = byName
    }

    /// Whether a STRICT table takes `value` in the column at `position` (``StrictColumnRule``).
    func accepts(_ value: DatabaseValue, at position: Int) -> Bool {
        acceptedClasses[position].contains(Self.storageClass(value))
    }

    @inline(__always)
    private static func storageClass(_ value: DatabaseValue) -> StorageClasses {
        switch value {
        case .null: .null
        case .integer: .integer
        case .real: .real
        case .text: .text
        case .blob: .blob
        }
    }

    /// Where a column named `name` (as it is, then lowercased, as SQLite compares names) is.
    func position(of name: String) -> Int? {
        positions[name] ?? positions[name.lowercased()]
    }
}
