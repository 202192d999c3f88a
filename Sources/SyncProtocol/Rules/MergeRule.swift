/// Per-column last-writer-wins (Protocol §8.2, rules 4–9) as pure functions of a row's versions and
/// one change: what applying the change does. The client's change log and both server backends
/// ask these functions and keep only how they load and store a row's state; the foreign-key part
/// of §8.4 and the stash's storage are the client's own.
///
/// A caller asks ``verdict(of:at:row:isPresent:)`` for the row, then, for a ``Verdict/merge(_:)``
/// (and for the columns of a row that waited, see ``Verdict/create``),
/// ``writesColumn(at:over:row:)`` for each column the change names:
///
/// ```swift
/// let row = MergeRule.Row(created: insert, deleted: nil)
/// switch MergeRule.verdict(of: .update, at: incoming, row: row, isPresent: true) {
/// case .merge:
///     for (name, value) in columns where MergeRule.writesColumn(at: incoming, over: versions[name], row: row) {
///         write(name, value)
///     }
/// default: break
/// }
/// ```
public enum MergeRule {
    /// The versions a site keeps for a row (§8.1), as they are before the change.
    public struct Row: Equatable, Sendable {
        /// The version of the newest insert applied to the row.
        public var created: ChangeVersion?
        /// The version of the newest delete applied to it.
        public var deleted: ChangeVersion?

        public init(created: ChangeVersion?, deleted: ChangeVersion?) {
            self.created = created
            self.deleted = deleted
        }

        /// Deleted while its deletion version is newer than its creation version (or it has a
        /// deletion version and no creation version).
        public var isDeleted: Bool {
            guard let deleted else { return false }
            guard let created else { return true }
            return deleted > created
        }
    }

    /// What one change does to its row.
    public enum Verdict: Equatable, Sendable {
        /// Older than what the row already has: nothing is written (rules 4–6).
        case superseded
        /// Rule 4: the row, if present, is deleted; its deletion version becomes the change's and its
        /// column versions are dropped (its creation version stays).
        case delete
        /// Rule 7: an update of a row not present (and not deleted) waits until the row arrives. A
        /// client keeps it in its stash; a server, which has no rows to wait for, keeps its columns
        /// with their versions as the row's (``writesColumn(at:over:row:)`` with the row's versions),
        /// and they act as that stash when the insert comes (see ``create``).
        case waitForRow
        /// Rule 7: an insert of a row not present creates it from its key and known columns, and its
        /// creation version becomes the change's. Its columns get no version of their own: the
        /// creation dates them. Columns that waited for the row (a server's columns of updates that
        /// came first) are merged as a client merges its stash after the insert: one stays when
        /// ``waitingColumnStays(_:afterCreationAt:)`` and is dropped otherwise; the insert's columns
        /// are then written by ``writesColumn(at:over:row:)`` over those that stay.
        case create
        /// Rule 8: the row is present. For an insert newer than the row's creation,
        /// `newCreation` is true and the creation version becomes the change's, and so do the
        /// columns the old creation dated (``isDatedByCreation(_:row:)``): a caller that keeps such
        /// a column at the creation's version moves it to the change's. Each column is then
        /// written when ``writesColumn(at:over:row:)`` says so; a change that writes none is
        /// superseded.
        case merge(newCreation: Bool)
    }

    /// Rules 4–8 for the row: `row` is its versions before the change, `isPresent` whether the
    /// receiver holds the row (a server holds a row while it has a creation version and is not
    /// deleted; a client looks in the row's table).
    public static func verdict(
        of operation: Change.Operation, at incoming: ChangeVersion, row: Row, isPresent: Bool
    ) -> Verdict {
        switch operation {
        case .delete:
            // A delete wins over every update of the row, whatever their clocks; only a newer
            // insert brings the row back. A missing version counts as the oldest.
            guard incoming > (row.created ?? .oldest), incoming > (row.deleted ?? .oldest) else { return .superseded }
            return .delete
        case .update:
            if row.isDeleted { return .superseded }
            return isPresent ? .merge(newCreation: false) : .waitForRow
        case .insert:
            if let deleted = row.deleted, deleted > incoming { return .superseded }
            guard isPresent else { return .create }
            return .merge(newCreation: row.created.map { incoming > $0 } ?? true)
        }
    }

    /// Rule 8 for one column the change names: whether the change's value is written over the
    /// column's version `existing` (nil when the column has none). A column version older than the
    /// row's deletion counts as none, as does one at clock 0 (no change is made at clock 0 but the
    /// oldest possible, and a store that lost edits keeps their versions there, where no other site
    /// holds one); the row's creation version, as it was before the change, then dates the column,
    /// and an equal version is the same change (a column of an insert that waited for the
    /// migration that added it) and is written.
    @inlinable
    public static func writesColumn(at incoming: ChangeVersion, over existing: ChangeVersion?, row: Row) -> Bool {
        if let existing, existing.clock != 0, row.deleted.map({ existing > $0 }) ?? true {
            return incoming > existing
        }
        return incoming >= (row.created ?? .oldest)
    }

    /// Whether a column's version `existing` is the row's creation version: the creation dates
    /// such a column (a server keeps an inserted column at its insert's version, a client keeps no
    /// version for it), and a newer creation dates it again (``Verdict/merge(newCreation:)``).
    @inlinable
    public static func isDatedByCreation(_ existing: ChangeVersion, row: Row) -> Bool {
        existing == row.created
    }

    /// Whether a column that waited for its row, written at `waiting`, stays when an insert creates
    /// the row at `creation` (``Verdict/create``): as the update it came from would be merged after
    /// the insert, with the insert's creation dating the column.
    @inlinable
    public static func waitingColumnStays(_ waiting: ChangeVersion, afterCreationAt creation: ChangeVersion) -> Bool {
        writesColumn(at: waiting, over: nil, row: Row(created: creation, deleted: nil))
    }
}
