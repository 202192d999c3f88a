import OfflineStore

/// Twenty tables over three versions (1.0.0 creates them, 2.0.0 adds a column to each, 3.0.0 a
/// column and an index to each): the shape of a grown app, for timing the open of a database
/// that is already up to date.
enum WideBenchPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [WideSchema<1>.self, WideSchema<2>.self, WideSchema<3>.self]
    static let stages: [MigrationStage] = [
        .lightweight(fromVersion: WideSchema<1>.self, toVersion: WideSchema<2>.self),
        .lightweight(fromVersion: WideSchema<2>.self, toVersion: WideSchema<3>.self),
    ]

    static let tableCount = 20

    /// Table `number` as declared by the plan's `version`th schema.
    static func table(_ number: Int, version: Int) -> TableDefinition {
        let name = "wide\(number)"
        return TableDefinition(name, options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull()
            Column("position", .integer).notNull().defaults(0)
            Column("updatedAt", .real)
            Index("\(name)_name", on: "name")
            if version >= 2 {
                Column("notes", .text).notNull().defaults("")
            }
            if version >= 3 {
                Column("archivedAt", .real)
                Index("\(name)_updatedAt", on: "updatedAt")
            }
        }
    }
}

/// A schema needs one type per table; integer generic parameters give twenty without twenty
/// declarations.
enum WideTable<let number: Int, let version: Int>: Model {
    static var tableDefinition: TableDefinition { WideBenchPlan.table(number, version: version) }
}

enum WideSchema<let version: Int>: VersionedSchema {
    static var versionIdentifier: Schema.Version { Schema.Version(version, 0, 0) }
    static var models: [any Model.Type] {
        [
            WideTable<1, version>.self, WideTable<2, version>.self, WideTable<3, version>.self,
            WideTable<4, version>.self, WideTable<5, version>.self, WideTable<6, version>.self,
            WideTable<7, version>.self, WideTable<8, version>.self, WideTable<9, version>.self,
            WideTable<10, version>.self, WideTable<11, version>.self, WideTable<12, version>.self,
            WideTable<13, version>.self, WideTable<14, version>.self, WideTable<15, version>.self,
            WideTable<16, version>.self, WideTable<17, version>.self, WideTable<18, version>.self,
            WideTable<19, version>.self, WideTable<20, version>.self,
        ]
    }
}
