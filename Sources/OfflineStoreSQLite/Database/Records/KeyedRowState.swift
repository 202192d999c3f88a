import Foundation

/// What a ``StatementKeyedDecodingContainer`` reads: the statement row being
/// decoded, and the column each coding key was found at.
///
/// Decoding a record asks for its keys in the same order on every row, so the
/// state remembers the order it met them in: the key met at that position costs
/// one string comparison (a key's `stringValue` is a string literal, compared by
/// its bits), and only a key asked for out of order is looked up by name, with
/// SQLite's rules (exact, then case-insensitive).
///
/// States are never deallocated: a container only points at its state (so the
/// standard library's box copies it without reference counting, once per
/// property), and a container kept past its statement must find memory that is
/// still a state. When the statement goes away its states move to a new epoch and
/// wait for a later statement; a container of the old epoch throws instead of reading.
@usableFromInline
final class KeyedRowState {
    // One decoding at a time, on the thread that owns the statement: the type is not Sendable.
    @exclusivity(unchecked) var epoch: UInt64 = 0
    /// The statement whose rows are decoded (not retained: `rowGeneration` says whether it is on the row).
    @exclusivity(unchecked) var statement: Unmanaged<Statement>
    @exclusivity(unchecked) var rowGeneration: RowGeneration
    /// The statement's row count when the row being decoded was current.
    @exclusivity(unchecked) var generation: UInt64 = 0
    /// The columns the learned indexes refer to.
    @exclusivity(unchecked) private var columns: RowColumns?
    /// Keys in the order they were asked for, and their columns (-1: no such column).
    @exclusivity(unchecked) private var learnedNames: [String] = []
    @exclusivity(unchecked) private var learnedColumns: [Int] = []
    /// Where the next key is expected in `learnedNames`.
    @exclusivity(unchecked) private var position = 0

    private init(statement: Statement) {
        self.statement = Unmanaged.passUnretained(statement)
        rowGeneration = statement.rowGeneration
    }

    /// The row being decoded: reading it throws once the cursor has moved on.
    @inline(__always)
    var row: Row {
        Row(statement: statement, rowGeneration: rowGeneration, generation: generation)
    }

    /// Starts decoding the statement's row of count `generation`.
    @usableFromInline
    func begin(generation: UInt64) {
        self.generation = generation
        position = 0
        // A re-prepared statement (`SELECT *` after a schema change) may have moved its columns.
        statement._withUnsafeGuaranteedRef { statement in
            if statement.columns !== columns {
                columns = statement.columns
                learnedNames.removeAll(keepingCapacity: true)
                learnedColumns.removeAll(keepingCapacity: true)
            }
        }
    }

    var columnNames: [String] { columns?.names ?? [] }

    /// The column of a key, or nil when the row has no such column.
    @inline(__always)
    func column(named name: String) -> Int? {
        let position = self.position
        if position < learnedNames.count, learnedNames[position] == name {
            self.position = position + 1
            let column = learnedColumns[position]
            return column >= 0 ? column : nil
        }
        return lookUp(name, at: position)
    }

    private func lookUp(_ name: String, at position: Int) -> Int? {
        // The key just asked for, again (`contains` then `decode`).
        if position > 0, position <= learnedNames.count, learnedNames[position - 1] == name {
            let column = learnedColumns[position - 1]
            return column >= 0 ? column : nil
        }
        let index = columns?.index(of: name)
        if position < learnedNames.count {
            learnedNames[position] = name
            learnedColumns[position] = index ?? -1
        } else {
            learnedNames.append(name)
            learnedColumns.append(index ?? -1)
        }
        self.position = position + 1
        return index
    }

    /// A state for `statement`'s rows: a recycled one, or a new one kept forever.
    static func acquire(for statement: Statement) -> KeyedRowState {
        guard let state = recycledStates.pop() else { return KeyedRowState(statement: statement) }
        state.statement = Unmanaged.passUnretained(statement)
        state.rowGeneration = statement.rowGeneration
        return state
    }

    /// Called when the statement goes away: its containers stop reading, and the state waits for the next statement.
    func relinquish() {
        epoch &+= 1
        columns = nil
        learnedNames.removeAll()
        learnedColumns.removeAll()
        recycledStates.push(self)
    }
}

/// States of finished statements, and so every state ever made: none is deallocated.
///
/// `@unchecked Sendable` is safe because `states` is only touched while `lock` is
/// held, and a state in it belongs to no statement, so no thread uses it.
private final class RecycledKeyedRowStates: @unchecked Sendable {
    private let lock = NSLock()
    private var states: [KeyedRowState] = []

    func pop() -> KeyedRowState? {
        lock.withLock { states.popLast() }
    }

    func push(_ state: KeyedRowState) {
        lock.withLock { states.append(state) }
    }
}

private let recycledStates = RecycledKeyedRowStates()

/// The keyed containers a statement's rows were decoded with, kept for its next rows:
/// making one costs an allocation and generic-metadata lookups, more than decoding
/// a few properties.
@usableFromInline
final class KeyedContainerCache {
    /// One entry per coding-key type (a record decoding a nested record from the same
    /// row uses two); few enough that a linear search beats hashing. The references are
    /// unretained, so that finding one counts no reference: `owned` keeps them.
    @usableFromInline @exclusivity(unchecked) var entries:
        [(keyType: ObjectIdentifier, entry: Unmanaged<AnyObject>, state: Unmanaged<KeyedRowState>)] = []
    @exclusivity(unchecked) private var owned: [AnyObject] = []
    /// More key types than this decode with containers made per row: an entry is never
    /// evicted, since a decoding still running may be using it.
    static let capacity = 8

    @usableFromInline
    init() {}

    /// The container for `Key` on the current row of `statement`, whose row count is `generation`.
    @inlinable
    func container<Key: CodingKey>(keyedBy type: Key.Type, statement: Statement, generation: UInt64)
        -> KeyedDecodingContainer<Key>
    {
        let keyType = ObjectIdentifier(Key.self)
        var index = 0
        while index < entries.count {
            let slot = entries[index]
            if slot.keyType == keyType {
                slot.state._withUnsafeGuaranteedRef { $0.begin(generation: generation) }
                return slot.entry._withUnsafeGuaranteedRef {
                    // Safe: entries of this key type are only ever made below, with this type.
                    unsafeDowncast($0, to: CachedKeyedContainer<Key>.self).container
                }
            }
            index += 1
        }
        return insert(keyedBy: Key.self, statement: statement, generation: generation)
    }

    @usableFromInline
    func insert<Key: CodingKey>(keyedBy type: Key.Type, statement: Statement, generation: UInt64)
        -> KeyedDecodingContainer<Key>
    {
        guard entries.count < Self.capacity else {
            return makeKeyedContainer(
                Row(
                    statement: Unmanaged.passUnretained(statement), rowGeneration: statement.rowGeneration,
                    generation: generation))
        }
        let state = KeyedRowState.acquire(for: statement)
        let entry = CachedKeyedContainer<Key>(state: state)
        state.begin(generation: generation)
        owned.append(entry)
        entries.append((ObjectIdentifier(Key.self), Unmanaged.passUnretained(entry), Unmanaged.passUnretained(state)))
        return entry.container
    }
}

/// A container and the state it reads, kept together; the state is handed back with the entry.
@usableFromInline
final class CachedKeyedContainer<Key: CodingKey> {
    let state: KeyedRowState
    @usableFromInline let container: KeyedDecodingContainer<Key>

    init(state: KeyedRowState) {
        self.state = state
        container = KeyedDecodingContainer(
            StatementKeyedDecodingContainer<Key>(state: Unmanaged.passUnretained(state), epoch: state.epoch))
    }

    deinit {
        state.relinquish()
    }
}
