import Foundation
import OfflineStoreSQLite
import SyncProtocol

/// A change made at another site, as the sync engine hands it to ``ChangeLog/apply(_:to:)``.
///
/// ```swift
/// let change = IncomingChange(
///     table: "reminders", primaryKey: ["id": .text(id)], operation: .update,
///     columns: ["title": .text("Oat milk")], clock: stamp, siteID: otherSite)
/// ```
public struct IncomingChange: Sendable, Hashable, Codable {
    public var table: String
    public var primaryKey: [String: DatabaseValue]
    public var operation: PendingChange.Operation
    /// For an insert every column, for an update the changed columns, empty for a delete.
    public var columns: [String: DatabaseValue]
    public var clock: ChangeClock
    /// The 16-byte id of the site that made the change.
    public var siteID: Data

    public init(
        table: String, primaryKey: [String: DatabaseValue], operation: PendingChange.Operation,
        columns: [String: DatabaseValue], clock: ChangeClock, siteID: Data
    ) {
        self.table = table
        self.primaryKey = primaryKey
        self.operation = operation
        self.columns = columns
        self.clock = clock
        self.siteID = siteID
    }

    /// A local pending change as another site receives it.
    init(_ pending: PendingChange, siteID: Data) {
        self.init(
            table: pending.table, primaryKey: pending.primaryKey, operation: pending.operation,
            columns: pending.columns, clock: pending.clock, siteID: siteID)
    }

    private enum CodingKeys: String, CodingKey {
        case table, primaryKey, operation, columns, clock, siteID
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        table = try container.decode(String.self, forKey: .table)
        primaryKey = try container.decode([String: TaggedValue].self, forKey: .primaryKey).mapValues(\.value)
        operation = try container.decode(PendingChange.Operation.self, forKey: .operation)
        columns = try container.decode([String: TaggedValue].self, forKey: .columns).mapValues(\.value)
        clock = try container.decode(ChangeClock.self, forKey: .clock)
        siteID = try container.decode(Data.self, forKey: .siteID)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(table, forKey: .table)
        try container.encode(primaryKey.mapValues(TaggedValue.init), forKey: .primaryKey)
        try container.encode(operation, forKey: .operation)
        try container.encode(columns.mapValues(TaggedValue.init), forKey: .columns)
        try container.encode(clock, forKey: .clock)
        try container.encode(siteID, forKey: .siteID)
    }
}

/// A value with its storage class, for the stash: 64-bit integers as decimal strings (JSON
/// numbers lose precision past 2^53), blobs as base64.
struct TaggedValue: Codable, Hashable {
    let value: DatabaseValue

    init(_ value: DatabaseValue) { self.value = value }

    private enum CodingKeys: String, CodingKey { case null, integer, real, text, blob }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let integer = try container.decodeIfPresent(String.self, forKey: .integer) {
            guard let parsed = Int64(integer) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .integer, in: container, debugDescription: "not a 64-bit integer")
            }
            value = .integer(parsed)
        } else if let real = try container.decodeIfPresent(Double.self, forKey: .real) {
            value = .real(real)
        } else if let text = try container.decodeIfPresent(String.self, forKey: .text) {
            value = .text(text)
        } else if let blob = try container.decodeIfPresent(Data.self, forKey: .blob) {
            value = .blob(blob)
        } else {
            value = .null
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch value {
        case .null: try container.encode(true, forKey: .null)
        case .integer(let integer): try container.encode(String(integer), forKey: .integer)
        case .real(let real): try container.encode(real, forKey: .real)
        case .text(let text): try container.encode(text, forKey: .text)
        case .blob(let data): try container.encode(data, forKey: .blob)
        }
    }
}
