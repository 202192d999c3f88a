/// A schema declaration that cannot be right, or a live schema that cannot be read.
///
/// The message names the table (and column) and says how to fix the declaration.
public struct SchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        case invalidDeclaration
        case unsupportedLiveSchema
        case introspectionFailed
    }

    public var kind: Kind
    public var table: String?
    public var column: String?
    public var message: String

    public init(_ kind: Kind, table: String? = nil, column: String? = nil, _ message: String) {
        self.kind = kind
        self.table = table
        self.column = column
        self.message = message
    }

    public var description: String {
        var location = ""
        if let table { location = column.map { " \(table).\($0)" } ?? " \(table)" }
        return "schema error\(location): \(message)"
    }
}
