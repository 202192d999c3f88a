import CSQLite
import Foundation

/// The arguments of one run of a statement that runs once per row of a bulk write, gathered in one
/// buffer that is reused from row to row and bound from it in place (`SQLITE_STATIC`): SQLite
/// neither copies each text and blob into an allocation of its own nor frees it when the bindings
/// are cleared, and no value is boxed into a ``DatabaseValue`` or bound through a generic witness.
/// In a bulk write those copies and boxes would be a large share of the cost of each row.
///
/// ```swift
/// var arguments = BulkArguments()
/// for reminder in reminders {
///     arguments.removeAll()
///     arguments.append(reminder.id)
///     arguments.append(text: reminder.title)
///     arguments.append(blob: reminder.photo)
///     try insert.execute(arguments)
/// }
/// ```
///
/// See <https://www.sqlite.org/c3ref/bind_blob.html> (`SQLITE_STATIC`).
public struct BulkArguments: Sendable {
    enum Slot: Sendable {
        case null
        case integer(Int64)
        case real(Double)
        case text(start: Int, count: Int)
        case blob(start: Int, count: Int)
    }

    var bytes: [UInt8] = []
    var slots: [Slot] = []

    /// No values yet; ``append(_:)`` and its siblings add them in parameter order.
    public init() {}

    /// How many values are gathered.
    public var count: Int { slots.count }

    /// Forgets the values, keeping the buffers for the next row's.
    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        slots.removeAll(keepingCapacity: true)
    }

    /// An integer, or NULL for nil.
    public mutating func append(_ integer: Int64?) {
        slots.append(integer.map { .integer($0) } ?? .null)
    }

    /// A NULL.
    public mutating func appendNull() {
        slots.append(.null)
    }

    /// A floating-point number. NaN is refused when the arguments are bound, as
    /// ``Statement/bind(_:toParameter:)`` refuses it (SQLite would store NULL).
    public mutating func append(real: Double) {
        slots.append(.real(real))
    }

    /// Any value, as the sibling for its type appends it.
    public mutating func append(_ value: DatabaseValue) {
        switch value {
        case .null: appendNull()
        case .integer(let integer): slots.append(.integer(integer))
        case .real(let real): append(real: real)
        case .text(let text): append(text: text)
        case .blob(let bytes): append(blob: bytes)
        }
    }

    /// A text, as its UTF-8 bytes.
    public mutating func append(text: String) {
        var text = text
        let start = bytes.count
        text.withUTF8 { bytes.append(contentsOf: $0) }
        slots.append(.text(start: start, count: bytes.count - start))
    }

    /// A blob (an empty one stays an empty blob, not NULL).
    public mutating func append(blob: Data) {
        let start = bytes.count
        blob.withUnsafeBytes { bytes.append(contentsOf: $0) }
        slots.append(.blob(start: start, count: bytes.count - start))
    }

    /// A blob (an empty one stays an empty blob, not NULL).
    public mutating func append(blob: [UInt8]) {
        let start = bytes.count
        bytes.append(contentsOf: blob)
        slots.append(.blob(start: start, count: bytes.count - start))
    }
}

extension Statement {
    /// Binds `arguments` in place, in order, and runs the statement to completion, then resets it
    /// and clears the bindings (they point into `arguments`).
    public func execute(_ arguments: BulkArguments) throws(DatabaseError) {
        guard arguments.count == parameterCount else {
            throw argumentCountError(given: arguments.count, arguments: nil)
        }
        let handle = try handle()
        guard arguments.bytes.count <= Int32.max else {
            throw DatabaseError(
                resultCode: .tooBig,
                message: "the arguments hold \(arguments.bytes.count) bytes, more than SQLite can bind", sql: sql)
        }
        // `withUnsafeBytes` rethrows untyped errors: the outcome comes out as a value.
        let outcome = arguments.bytes.withUnsafeBytes { buffer -> Result<Void, DatabaseError> in
            // Whatever happens (a run refused because the transaction was rolled back before it
            // stepped included), nothing keeps pointing into the arguments once this returns.
            defer { sqlite3_clear_bindings(handle) }
            do throws(DatabaseError) {
                try bind(arguments.slots, from: buffer, handle)
                try runToCompletion(arguments: nil)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try outcome.get()
    }

    private func bind(_ slots: [BulkArguments.Slot], from buffer: UnsafeRawBufferPointer, _ handle: OpaquePointer)
        throws(DatabaseError)
    {
        for (offset, slot) in slots.enumerated() {
            let position = Int32(offset + 1)
            let code: Int32
            switch slot {
            case .null:
                code = sqlite3_bind_null(handle, position)
            case .integer(let integer):
                code = sqlite3_bind_int64(handle, position, integer)
            case .real(let real) where real.isNaN:
                sqlite3_clear_bindings(handle)
                throw DatabaseError.conversion(
                    "parameter \(offset + 1) is NaN, which SQLite would store as NULL; store NULL or a sentinel explicitly"
                ).with(sql: sql, arguments: nil, showsArguments: false)
            case .real(let real):
                code = sqlite3_bind_double(handle, position, real)
            case .text(let start, let count):
                // A nil pointer would bind NULL: an empty text stays an empty text.
                let text = count == 0 ? emptyCString : (buffer.baseAddress! + start).assumingMemoryBound(to: CChar.self)
                code = csqlite_bind_text_in_place(handle, position, text, Int32(count))
            case .blob(_, let count) where count == 0:
                code = sqlite3_bind_zeroblob(handle, position, 0)
            case .blob(let start, let count):
                code = csqlite_bind_blob_in_place(handle, position, buffer.baseAddress! + start, Int32(count))
            }
            guard code == SQLITE_OK else {
                // Nothing may keep pointing into the arguments once the run returns.
                sqlite3_clear_bindings(handle)
                throw connection.lastError(code: code, sql: sql)
            }
        }
    }
}
