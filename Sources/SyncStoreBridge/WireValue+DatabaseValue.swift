import OfflineStoreSQLite
import SyncProtocol

/// The wire's values and the store's are the same five SQLite storage classes; the client (what it
/// pushes and applies) and the server (what it stores and serves) convert through this one place.
///
/// ```swift
/// let wire = WireValue(DatabaseValue.integer(.max))  // .integer(.max), bit for bit
/// ```
extension WireValue {
    /// The SQLite value stored for this wire value: the same storage class, bit for bit.
    package var databaseValue: DatabaseValue {
        switch self {
        case .null: .null
        case .integer(let integer): .integer(integer)
        case .real(let real): .real(real)
        case .text(let text): .text(text)
        case .blob(let data): .blob(data)
        }
    }

    package init(_ value: DatabaseValue) {
        switch value {
        case .null: self = .null
        case .integer(let integer): self = .integer(integer)
        case .real(let real): self = .real(real)
        case .text(let text): self = .text(text)
        case .blob(let data): self = .blob(data)
        }
    }
}
