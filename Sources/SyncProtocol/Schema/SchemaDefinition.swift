/// The synced tables of one schema version as a hello announces them (Protocol/README.md,
/// section 5.1): each table's columns with their declared type, NOT NULL, default and place in the
/// primary key, its STRICT and WITHOUT ROWID flags, and its foreign keys. The fingerprint a hello
/// sends is the SHA-256 of its ``canonicalText``, and a server refuses, change by change, what a
/// client of the version would refuse when it applies it (``SchemaRules``).
///
/// ```swift
/// let definition = SchemaDefinition(tables: [
///     .init(name: "lists", isStrict: true, columns: [
///         .init(name: "id", type: "TEXT", isNotNull: true, primaryKeyPosition: 1),
///         .init(name: "name", type: "TEXT", isNotNull: true, defaultValue: .value(.text(""))),
///     ]),
/// ])
/// let fingerprint = definition.fingerprint  // 64 lowercase hex digits
/// ```
public struct SchemaDefinition: Codable, Sendable, Hashable {
    public var tables: [Table]

    public init(tables: [Table]) {
        self.tables = tables
    }

    /// One synced table.
    public struct Table: Codable, Sendable, Hashable {
        public var name: String
        public var isStrict: Bool
        public var isWithoutRowID: Bool
        public var columns: [Column]
        public var foreignKeys: [ForeignKey]

        public init(
            name: String, isStrict: Bool = false, isWithoutRowID: Bool = false, columns: [Column],
            foreignKeys: [ForeignKey] = []
        ) {
            self.name = name
            self.isStrict = isStrict
            self.isWithoutRowID = isWithoutRowID
            self.columns = columns
            self.foreignKeys = foreignKeys
        }

        private enum CodingKeys: String, CodingKey {
            case name, columns, foreignKeys
            case isStrict = "strict"
            case isWithoutRowID = "withoutRowID"
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            isStrict = try container.decodeIfPresent(Bool.self, forKey: .isStrict) ?? false
            isWithoutRowID = try container.decodeIfPresent(Bool.self, forKey: .isWithoutRowID) ?? false
            columns = try container.decode([Column].self, forKey: .columns)
            foreignKeys = try container.decodeIfPresent([ForeignKey].self, forKey: .foreignKeys) ?? []
        }
    }

    /// One column of a synced table.
    public struct Column: Codable, Sendable, Hashable {
        public var name: String
        /// The declared type in upper case (`TEXT`, `INTEGER`, `VARCHAR(20)`), empty for none.
        public var type: String
        /// NOT NULL, which every primary key column counts as.
        public var isNotNull: Bool
        /// The column's place in the primary key, from 1; 0 for a column outside it.
        public var primaryKeyPosition: Int
        public var defaultValue: Default?

        public init(
            name: String, type: String, isNotNull: Bool = false, primaryKeyPosition: Int = 0,
            defaultValue: Default? = nil
        ) {
            self.name = name
            self.type = type
            self.isNotNull = isNotNull
            self.primaryKeyPosition = primaryKeyPosition
            self.defaultValue = defaultValue
        }

        private enum CodingKeys: String, CodingKey {
            case name, type
            case isNotNull = "notNull"
            case primaryKeyPosition = "primaryKey"
            case value = "default"
            case expression = "defaultExpression"
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            type = try container.decode(String.self, forKey: .type)
            isNotNull = try container.decodeIfPresent(Bool.self, forKey: .isNotNull) ?? false
            primaryKeyPosition = try container.decodeIfPresent(Int.self, forKey: .primaryKeyPosition) ?? 0
            let value = try container.decodeIfPresent(WireValue.self, forKey: .value)
            let expression = try container.decodeIfPresent(String.self, forKey: .expression)
            switch (value, expression) {
            case (let value?, nil): defaultValue = .value(value)
            case (nil, let expression?): defaultValue = .expression(expression)
            case (nil, nil): defaultValue = nil
            case (.some, .some):
                throw DecodingError.dataCorruptedError(
                    forKey: .expression, in: container,
                    debugDescription: "column \(name) has both default and defaultExpression; a column has one default")
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(type, forKey: .type)
            try container.encode(isNotNull, forKey: .isNotNull)
            try container.encode(primaryKeyPosition, forKey: .primaryKeyPosition)
            switch defaultValue {
            case .value(let value): try container.encode(value, forKey: .value)
            case .expression(let expression): try container.encode(expression, forKey: .expression)
            case nil: break
            }
        }
    }

    /// A column's DEFAULT: a value, or an SQL expression (`CURRENT_TIMESTAMP`) as declared.
    public enum Default: Sendable, Hashable {
        case value(WireValue)
        case expression(String)
    }

    /// Child columns of the table referencing columns of a parent table, with SQLite's actions.
    public struct ForeignKey: Codable, Sendable, Hashable {
        public var columns: [String]
        public var parentTable: String
        public var parentColumns: [String]
        public var onDelete: Action
        public var onUpdate: Action

        public init(
            columns: [String], parentTable: String, parentColumns: [String], onDelete: Action = .noAction,
            onUpdate: Action = .noAction
        ) {
            self.columns = columns
            self.parentTable = parentTable
            self.parentColumns = parentColumns
            self.onDelete = onDelete
            self.onUpdate = onUpdate
        }
    }

    /// What SQLite does to a child row when its parent key is deleted or updated.
    public enum Action: String, Codable, Sendable, Hashable, CaseIterable {
        case noAction = "NO ACTION"
        case restrict = "RESTRICT"
        case setNull = "SET NULL"
        case setDefault = "SET DEFAULT"
        case cascade = "CASCADE"
    }
}
