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
    @usableFromInline let statement: Statement
    private let arguments: [DatabaseValue]
    private var isFinished = false

    package init(statement: Statement, arguments: [DatabaseValue]) {
        self.statement = statement
        self.arguments = arguments
        statement.isIterating = true
    }

    deinit {
        finish()
    }

    /// The next row, valid until the following call (``Row/copy()`` keeps it).
    @inlinable
    public func next() throws -> Row? {
        // Inlinable so that the caller sees which kind of row this is: reading its columns then
        // skips the detached-row branch, and dropping it costs nothing.
        try advance() ? Row(statement: statement) : nil
    }

    /// Steps the statement: true when a row is ready; false at the end, and forever after.
    @usableFromInline
    func advance() throws(DatabaseError) -> Bool {
        guard !isFinished else { return false }
        do {
            if try statement.step(arguments: arguments) { return true }
        } catch {
            finish()
            throw error
        }
        finish()
        return false
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
