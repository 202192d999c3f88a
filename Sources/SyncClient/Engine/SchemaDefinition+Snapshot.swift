import OfflineStore
import SyncProtocol
import SyncStoreBridge

extension SchemaDefinition {
    /// The synced tables of `schema` as a hello announces them (Protocol/README.md, section 5.1):
    /// names in their declared spelling, every key column NOT NULL, defaults as declared (a literal
    /// as its value, an expression as its SQL text). Local-only tables, indexes, CHECK and UNIQUE
    /// constraints and collations are not part of it.
    ///
    /// ```swift
    /// let definition = SchemaDefinition(try RemindersSchemaV1_1.snapshot())
    /// let fingerprint = definition.fingerprint
    /// ```
    public init(_ schema: SchemaSnapshot) {
        self.init(tables: schema.tables.filter { $0.sync == .synced }.map(Table.init))
    }
}

extension SchemaDefinition.Table {
    init(_ table: TableDefinition) {
        let declaredKey = table.primaryKey.isEmpty ? table.columns.filter(\.isPrimaryKey).map(\.name) : table.primaryKey
        let key = declaredKey.map { $0.lowercased() }
        let foreignKeys = table.foreignKeys + table.columns.compactMap(\.reference)
        self.init(
            name: table.name, isStrict: table.options.contains(.strict),
            isWithoutRowID: table.options.contains(.withoutRowID),
            columns: table.columns.map { column in
                let position = (key.firstIndex(of: column.name.lowercased()) ?? -1) + 1
                return SchemaDefinition.Column(
                    name: column.name, type: column.type.rawValue, isNotNull: column.isNotNull || position > 0,
                    primaryKeyPosition: position, defaultValue: column.defaultValue.map(SchemaDefinition.Default.init))
            },
            foreignKeys: foreignKeys.map { foreignKey in
                SchemaDefinition.ForeignKey(
                    columns: foreignKey.columns, parentTable: foreignKey.parentTable,
                    parentColumns: foreignKey.parentColumns,
                    onDelete: SchemaDefinition.Action(rawValue: foreignKey.onDelete.rawValue)!,
                    onUpdate: SchemaDefinition.Action(rawValue: foreignKey.onUpdate.rawValue)!)
            })
    }
}

extension SchemaDefinition.Default {
    init(_ declared: ColumnDefault) {
        switch declared {
        case .literal(let value): self = .value(WireValue(value))
        case .expression(let sql): self = .expression(sql)
        }
    }
}
