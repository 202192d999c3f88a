import OfflineStore
import SyncProtocol

extension WireValue {
    /// The SQLite value stored for this wire value: the same storage class, bit for bit.
    var databaseValue: DatabaseValue {
        switch self {
        case .null: .null
        case .integer(let integer): .integer(integer)
        case .real(let real): .real(real)
        case .text(let text): .text(text)
        case .blob(let data): .blob(data)
        }
    }

    init(_ value: DatabaseValue) {
        switch value {
        case .null: self = .null
        case .integer(let integer): self = .integer(integer)
        case .real(let real): self = .real(real)
        case .text(let text): self = .text(text)
        case .blob(let data): self = .blob(data)
        }
    }
}
