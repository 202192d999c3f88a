import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

/// How the connection's foreign keys stand while a batch applies (``ChangeLog/withoutForeignKeyActions(_:_:)``).
enum ForeignKeyMode {
    /// The connection enforces keys and the batch runs inside the caller's transaction, where the
    /// pragma cannot change: SQLite's deferred check at that transaction's `COMMIT` is the proof.
    case enforced
    /// The connection enforces keys; they are off for the batch (so no `ON DELETE` action changes
    /// rows behind the log) and the apply proves the batch's rows itself.
    case suspended
    /// The connection does not enforce keys: nothing checked the app's own writes either.
    case notEnforced
}
