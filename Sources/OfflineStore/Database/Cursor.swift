/// A forward-only stream of elements read from SQLite one at a time, so a
/// large result is never loaded whole.
///
/// ```swift
/// let cursor = try db.fetchCursor("SELECT title FROM reminders")
/// while let row = try cursor.next() {
///     print(try row.decode(String.self, at: 0))
/// }
/// ```
///
/// See <https://www.sqlite.org/c3ref/step.html>.
public protocol Cursor<Element>: AnyObject {
    associatedtype Element
    /// The next element, or nil at the end (and forever after).
    func next() throws -> Element?

    /// Every remaining element in an array (rows are copied, so they stay valid).
    func toArray() throws -> [Element]
}

extension Cursor {
    /// Calls `body` with every remaining element.
    public func forEach(_ body: (Element) throws -> Void) throws {
        while let element = try next() { try body(element) }
    }

    /// Every remaining element in an array.
    public func toArray() throws -> [Element] {
        var elements: [Element] = []
        while let element = try next() { elements.append(element) }
        return elements
    }
}

/// Rows of a statement, streamed.
public final class RowCursor: Cursor {
    let statement: Statement
    private let arguments: [DatabaseValue]
    private var isFinished = false

    init(statement: Statement, arguments: [DatabaseValue]) {
        self.statement = statement
        self.arguments = arguments
        statement.isIterating = true
    }

    deinit {
        finish()
    }

    /// The next row, valid until the following call (``Row/copy()`` keeps it).
    public func next() throws -> Row? {
        guard !isFinished else { return nil }
        do {
            if try statement.step(arguments: arguments) { return Row(statement: statement) }
        } catch {
            finish()
            throw error
        }
        finish()
        return nil
    }

    /// Every remaining row, each copied so that it stays valid.
    public func toArray() throws -> [Row] {
        var rows: [Row] = []
        while let row = try next() { rows.append(try row.copy()) }
        return rows
    }

    /// Column names of the rows.
    public var columnNames: [String] { statement.columnNames }

    private func finish() {
        guard !isFinished else { return }
        isFinished = true
        statement.reset()
        statement.isIterating = false
    }
}

/// Values of a statement's first column, streamed.
public final class ValueCursor<Value: DatabaseValueConvertible>: Cursor {
    private let rows: RowCursor

    init(rows: RowCursor) {
        self.rows = rows
    }

    public func next() throws -> Value? {
        guard let row = try rows.next() else { return nil }
        return try row.decode(Value.self, at: 0)
    }
}

/// Records decoded from rows, streamed.
public final class RecordCursor<Record: FetchableRecord>: Cursor {
    private let rows: RowCursor

    init(rows: RowCursor) {
        self.rows = rows
    }

    public func next() throws -> Record? {
        guard let row = try rows.next() else { return nil }
        return try Record(row: row)
    }
}
