/// Follows BEGIN, COMMIT, END, ROLLBACK, SAVEPOINT and RELEASE to know whether a statement runs inside a
/// transaction. A SAVEPOINT outside a transaction starts one, which releasing that savepoint ends.
///
/// See <https://www.sqlite.org/lang_transaction.html> and <https://www.sqlite.org/lang_savepoint.html>.
struct TransactionTracker {
    private(set) var isInsideTransaction: Bool
    private var savepoints: [String] = []
    private var savepointStartedTransaction = false

    init(isInsideTransaction: Bool) {
        self.isInsideTransaction = isInsideTransaction
    }

    mutating func begin() {
        isInsideTransaction = true
        savepoints = []
        savepointStartedTransaction = false
    }

    mutating func end() {
        isInsideTransaction = false
        savepoints = []
        savepointStartedTransaction = false
    }

    mutating func savepoint(_ name: String) {
        if !isInsideTransaction {
            isInsideTransaction = true
            savepointStartedTransaction = true
        }
        savepoints.append(name.lowercased())
    }

    /// RELEASE removes the most recent savepoint of that name and every one after it.
    mutating func release(_ name: String) {
        guard let index = savepoints.lastIndex(of: name.lowercased()) else { return }
        savepoints.removeSubrange(index...)
        if savepoints.isEmpty && savepointStartedTransaction { end() }
    }
}
