/// The keyed container a statement's rows share: it reads the statement's row
/// being decoded through its ``KeyedRowState``, which knows where each key's
/// column is.
///
/// Only a pointer and a number, so the standard library's container box copies it
/// (once per property decoded) without reference counting; the state it points at
/// is never deallocated, and its epoch says whether it still serves this container.
struct StatementKeyedDecodingContainer<Key: CodingKey>: RowKeyedContainer {
    let state: Unmanaged<KeyedRowState>
    let epoch: UInt64

    var row: Row {
        get throws { try state._withUnsafeGuaranteedRef { try checked($0).row } }
    }

    var columnNames: [String] {
        state._withUnsafeGuaranteedRef { $0.epoch == epoch ? $0.columnNames : [] }
    }

    @inline(__always)
    func locateIfPresent(_ key: Key) throws -> (row: Row, index: Int)? {
        try state._withUnsafeGuaranteedRef { state in
            let state = try checked(state)
            return state.column(named: key.stringValue).map { (state.row, $0) }
        }
    }

    @inline(__always)
    private func checked(_ state: KeyedRowState) throws -> KeyedRowState {
        guard state.epoch == epoch else {
            throw DatabaseError.misuse(
                "a decoding container was used after its statement went away; decode inside init(from:)")
        }
        return state
    }
}
