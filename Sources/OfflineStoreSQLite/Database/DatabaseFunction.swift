import CSQLite
import Foundation

/// A scalar SQL function implemented in Swift.
///
/// The body receives the SQL arguments as ``DatabaseValue``s and returns any
/// convertible value (or nil for NULL). A thrown error becomes an SQL error
/// of the statement that called the function. Register it per connection with
/// ``Database/add(function:)``, typically from ``Configuration/prepareDatabase``
/// so every connection of a pool has it.
///
/// ```swift
/// let reverse = DatabaseFunction("reverse", argumentCount: 1, deterministic: true) { arguments in
///     guard case .text(let text) = arguments[0] else { return nil }
///     return String(text.reversed())
/// }
/// try db.add(function: reverse)
/// let reversed = try db.fetchValue(String.self, "SELECT reverse(\("abc"))")  // "cba"
/// ```
///
/// The body runs on whichever thread executes the statement, hence `@Sendable`.
/// See <https://www.sqlite.org/c3ref/create_function.html>.
public struct DatabaseFunction: Sendable {
    public let name: String
    /// The number of arguments, or nil for any number.
    public let argumentCount: Int?
    /// Same arguments, same result: lets SQLite use the function in indexes and factor calls out.
    public let isDeterministic: Bool
    let body: @Sendable ([DatabaseValue]) throws -> (any DatabaseValueConvertible)?

    public init(
        _ name: String, argumentCount: Int? = nil, deterministic: Bool = false,
        _ body: @escaping @Sendable ([DatabaseValue]) throws -> (any DatabaseValueConvertible)?
    ) {
        self.name = name
        self.argumentCount = argumentCount
        self.isDeterministic = deterministic
        self.body = body
    }
}

/// Keeps a function body alive while SQLite may call it; released by SQLite's destroy callback.
private final class FunctionBox {
    let body: @Sendable ([DatabaseValue]) throws -> (any DatabaseValueConvertible)?
    init(_ body: @escaping @Sendable ([DatabaseValue]) throws -> (any DatabaseValueConvertible)?) {
        self.body = body
    }
}

extension Database {
    /// Registers (or replaces) a function on this connection.
    public func add(function: DatabaseFunction) throws(DatabaseError) {
        let handle = try connection.handle(for: "add(function:)")
        var flags = SQLITE_UTF8
        if function.isDeterministic { flags |= SQLITE_DETERMINISTIC }
        let box = Unmanaged.passRetained(FunctionBox(function.body)).toOpaque()
        let code = sqlite3_create_function_v2(
            handle, function.name, Int32(function.argumentCount ?? -1), flags, box,
            { context, count, arguments in
                let box = Unmanaged<FunctionBox>.fromOpaque(sqlite3_user_data(context)).takeUnretainedValue()
                do {
                    let values = try (0..<Int(count)).map { try functionArgument(arguments?[$0], position: $0) }
                    let result = try box.body(values)?.databaseValue ?? .null
                    if case .real(let real) = result, real.isNaN {
                        throw DatabaseError.conversion(
                            "the function returned NaN, which SQLite would turn into NULL; return nil or a value")
                    }
                    setFunctionResult(context, result)
                } catch let error as DatabaseError {
                    sqlite3_result_error(context, error.message, -1)
                    sqlite3_result_error_code(context, error.resultCode.rawValue)
                } catch {
                    sqlite3_result_error(context, "\(error)", -1)
                }
            }, nil, nil,
            { box in
                if let box { Unmanaged<FunctionBox>.fromOpaque(box).release() }
            })
        guard code == SQLITE_OK else {
            throw connection.lastError(code: code).prefixed("cannot register function \(function.name)")
        }
    }

    /// Removes a function registered with ``add(function:)``.
    public func remove(function: DatabaseFunction) throws(DatabaseError) {
        let handle = try connection.handle(for: "remove(function:)")
        let code = sqlite3_create_function_v2(
            handle, function.name, Int32(function.argumentCount ?? -1), SQLITE_UTF8, nil, nil, nil, nil, nil)
        guard code == SQLITE_OK else { throw connection.lastError(code: code) }
    }
}

/// Copies one `sqlite3_value` argument into a ``DatabaseValue``.
/// See <https://www.sqlite.org/c3ref/value_blob.html>.
func functionArgument(_ value: OpaquePointer?, position: Int) throws -> DatabaseValue {
    switch sqlite3_value_type(value) {
    case SQLITE_INTEGER:
        return .integer(sqlite3_value_int64(value))
    case SQLITE_FLOAT:
        return .real(sqlite3_value_double(value))
    case SQLITE_TEXT:
        guard let text = sqlite3_value_text(value) else { return .text("") }
        let count = Int(sqlite3_value_bytes(value))
        // Never repaired: a U+FFFD written back by the function would change stored bytes.
        guard let decoded = decodeSQLiteText(text, count: count) else {
            throw DatabaseError.conversion(
                "argument \(position + 1) is TEXT that is not valid UTF-8; pass CAST(... AS BLOB) instead")
        }
        return .text(decoded)
    case SQLITE_BLOB:
        let count = Int(sqlite3_value_bytes(value))
        guard let bytes = sqlite3_value_blob(value), count > 0 else { return .blob(Data()) }
        return .blob(Data(bytes: bytes, count: count))
    default:
        return .null
    }
}

/// Hands a ``DatabaseValue`` back to SQLite as the function's result.
/// See <https://www.sqlite.org/c3ref/result_blob.html>.
private func setFunctionResult(_ context: OpaquePointer?, _ value: DatabaseValue) {
    switch value {
    case .null:
        sqlite3_result_null(context)
    case .integer(let integer):
        sqlite3_result_int64(context, integer)
    case .real(let real):
        sqlite3_result_double(context, real)
    case .text(var text):
        text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) {
                csqlite_result_text_copy(context, $0.baseAddress ?? emptyCString, Int32(clamping: $0.count))
            }
        }
    case .blob(let bytes) where bytes.isEmpty:
        sqlite3_result_zeroblob(context, 0)
    case .blob(let bytes):
        bytes.withUnsafeBytes { csqlite_result_blob_copy(context, $0.baseAddress, Int32(clamping: $0.count)) }
    }
}
