import OfflineStoreSQLite

/// A record type declared by its table's ``Model``: the table's name comes from the model, so the
/// table is declared once, and a ``MigrationPlan`` that lists the record (``MigrationPlan/records``)
/// has its coding keys checked against the table's columns when the migrator is made, before any
/// database is opened: a typo is an error naming the record, the key and the table, not an SQL
/// error on first use.
///
/// ```swift
/// enum Players: Model {
///     static let tableDefinition = TableDefinition("players") {
///         Column("id", .integer).primaryKey()
///         Column("name", .text).notNull()
///     }
/// }
/// struct Player: Codable, FetchableRecord, PersistableRecord, ModelRecord {
///     typealias Model = Players
///     var id: Int64, name: String
/// }
/// enum GamePlan: MigrationPlan {
///     static let schemas: [any VersionedSchema.Type] = [GameV1.self]
///     static let stages: [MigrationStage] = []
///     static let records: [any ModelRecord.Type] = [Player.self]
/// }
/// ```
///
/// The keys are found by decoding the type once from placeholder values: a property whose type
/// cannot be decoded from any (an enum with raw values that is not `CaseIterable`, a type whose
/// `init(from:)` validates) stops the check with an error saying so; make such an enum
/// `CaseIterable`, whose first case is then used.
public protocol ModelRecord: TableRecord, Decodable, SendableMetatype {
    associatedtype Model: OfflineStoreMigrations.Model
}

extension ModelRecord {
    public static var databaseTableName: String { Model.tableDefinition.name }
}

extension MigrationPlan {
    public static var records: [any ModelRecord.Type] { [] }
}

extension ModelRecord {
    /// What is wrong with this record against `snapshot`, the schema the app runs: nil when its
    /// model's table is there and every coding key is one of the table's columns (compared as
    /// SQLite compares names, without regard to ASCII case).
    static func problem(against snapshot: SchemaSnapshot) -> (message: String, fix: String)? {
        let name = Model.tableDefinition.name
        let version = snapshot.version.map { "schema \($0)" } ?? "the schema"
        guard let table = snapshot.tables.first(where: { $0.name.lowercased() == name.lowercased() }) else {
            return (
                "record \(Self.self) belongs to model \(Model.self), whose table \(name) is not in \(version)",
                "list \(Model.self) in the models of \(version), or take \(Self.self) out of records"
            )
        }
        let keys: [String]
        do {
            keys = try RecordCodingKeys.of(Self.self)
        } catch {
            return (
                "the coding keys of record \(Self.self) cannot be found: \(error)",
                "make the property's type CaseIterable, or decodable from a placeholder value"
            )
        }
        let columns = table.columns.map(\.name)
        let folded = Set(columns.map { $0.lowercased() })
        if let key = keys.first(where: { !folded.contains($0.lowercased()) }) {
            return (
                "record \(Self.self) has the coding key \"\(key)\", which is not a column of table \(table.name)",
                "rename the property, or map it with a CodingKeys case, to one of \(columns.joined(separator: ", "))"
            )
        }
        guard !keys.isEmpty else {
            return (
                "record \(Self.self) decodes no keyed values, so none of its keys can be checked",
                "decode it through a keyed container (the synthesized init(from:) does)"
            )
        }
        return nil
    }
}
