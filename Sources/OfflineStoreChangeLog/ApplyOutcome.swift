import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

/// What ``ChangeLog/apply(_:to:)`` did with a batch.
///
/// ```swift
/// let outcome = try log.apply(changes, to: db)
/// print("\(outcome.applied) applied, \(outcome.stashed) waiting, \(outcome.refused.count) refused")
/// ```
public struct ApplyOutcome: Sendable, Hashable {
    /// Changes (or columns of them) that won and were written.
    public var applied = 0
    /// Changes older than what this store already has, per column (last writer wins).
    public var superseded = 0
    /// Changes waiting in the stash after the batch: for a table or column this schema does not
    /// know yet, or a row whose parent has not arrived. They are applied when a later migration or
    /// batch makes room.
    public var stashed = 0
    /// Changes this store refused to apply, each with the reason; the rest of the batch was
    /// applied. They are kept in the metadatabase too (``ChangeLog/refusedIncomingChanges(_:)``).
    public var refused: [RefusedIncomingChange] = []
    /// Rows removed because they left the device's read scope (a pull's `removed`, Protocol
    /// §17.3): taken out with their versions, no delete recorded.
    public var removed = 0
}

/// An incoming change ``ChangeLog/apply(_:to:)`` refused to apply, and why, as one batch's
/// outcome reports it (kept afterwards as a ``RefusedIncomingChangeRecord``).
///
/// ```swift
/// for refused in try log.apply(page, to: db).refused { print(refused.index, refused.reason) }
/// ```
public struct RefusedIncomingChange: Sendable, Hashable {
    /// Its position in the batch.
    public var index: Int
    public var change: IncomingChange
    public var reason: String
}
