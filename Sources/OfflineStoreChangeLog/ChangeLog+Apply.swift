import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

extension ChangeLog {
    /// Applies changes from other sites in one transaction, without recording them again, merging
    /// each column by last-writer-wins on (clock, site id).
    ///
    /// The rules, which every site applies the same way so all converge:
    /// - An insert creates the row unless a newer delete of it is known; on an existing row its
    ///   columns merge like an update. A delete removes the row when it is newer than every
    ///   change this store has for the row. An update writes each column whose clock is newer.
    /// - A change for a table or column this schema does not know, or an update of a row not
    ///   present yet, goes to the stash and is retried after every batch and every migration.
    /// - Foreign keys are resolved at commit by the sync rules, not by SQLite's actions (keys are
    ///   off while a batch applies, and a search of the rows it touched proves the result; see
    ///   ChangeLog+Orphans.swift for why that is enough). A child left
    ///   pointing at a parent that was deleted is deleted too, as `ON DELETE CASCADE` would have,
    ///   by a new local delete that every site then applies; a child whose parent never arrived
    ///   waits in the stash (with its own children, keeping its versions) until it does.
    /// - A malformed change (unknown key columns, a column named twice in two cases, a value of
    ///   the wrong type for a STRICT column, a site id that is not 16 bytes, a clock beyond the
    ///   drift bound) is refused with the reason; the rest of the batch still applies. Refused
    ///   changes are kept, in the same transaction, in the metadatabase (``refusedIncomingChanges(_:)``)
    ///   and logged as warnings through the connection's ``LogHandler``. Names from a change
    ///   reach SQL only after they are found in the declared schema, and values are always bound.
    ///
    /// `alongside`, when given, writes in the batch's transaction after its changes, so that what
    /// it writes (a sync's cursor, saved with the changes it covers) commits with them, or, when
    /// it throws, nothing of the batch does.
    ///
    /// ```swift
    /// let outcome = try log.apply(page.changes, to: db) { db in try log.save(stateAfterPage, db) }
    /// ```
    ///
    /// See <https://www.sqlite.org/foreignkeys.html#fk_deferred>.
    public func apply(
        _ changes: [IncomingChange], to db: Database, alongside: ((Database) throws -> Void)? = nil
    ) throws -> ApplyOutcome {
        try apply(prepare(changes), to: db, alongside: alongside)
    }

    /// Applies a batch ``prepare(_:)`` readied, as ``apply(_:to:alongside:)`` applies its changes.
    ///
    /// ```swift
    /// let outcome = try log.apply(log.prepare(page.changes), to: db) { db in try log.save(stateAfterPage, db) }
    /// ```
    package func apply(
        _ prepared: PreparedChanges, to db: Database, alongside: ((Database) throws -> Void)? = nil
    ) throws -> ApplyOutcome {
        var given: PreparedChanges? = prepared
        return try apply(
            preparedBatches: {
                defer { given = nil }
                return given
            }, to: db, afterEach: { db in try alongside?(db) })
    }

    /// Applies batches that come one after another (the pages of a pull) in one transaction, each
    /// batch as ``apply(_:to:alongside:)`` applies one, with the same rules, until `next` returns
    /// nil; `afterEach` writes after each batch's changes (a pull's cursor, committed with the
    /// pages it covers). The stash is retried after the transaction commits, while it shrinks.
    ///
    /// The first batch is applied as ``apply(_:to:alongside:)`` applies one: a change that fails
    /// is refused with its reason and the rest of the batch applied. The batches after it are
    /// applied straight in the transaction, with no savepoint of their own (a savepoint makes
    /// SQLite copy every page the batch changes to a statement journal first); when one of them
    /// cannot be applied whole, the whole transaction is rolled back and this throws
    /// ``ChangeLogError/Kind/batchesRolledBack``: none of the batches is applied, and the caller
    /// applies them again, the first of them alone. (When SQLite itself ended the transaction, a
    /// full disk or an I/O error, its error is thrown instead; inside the caller's transaction,
    /// only this call's savepoint is rolled back.)
    ///
    /// One transaction for several pages is cheaper than one each: each commit writes to the WAL
    /// every page its batch dirtied, and random keys dirty most of a table's index pages whatever
    /// the batch's size; the tracking triggers are taken out and put back once, not per batch.
    /// `next` runs inside the write transaction: it must not wait (for the network, say); return
    /// nil to commit what has been applied, and call this again for what comes later; an error it
    /// throws rolls everything back. A refused change's ``RefusedIncomingChange/index`` is its place in
    /// its own batch.
    ///
    /// ```swift
    /// var pages = received.makeIterator()
    /// let outcome = try log.apply(batches: { pages.next() }, to: db, afterEach: { _ in })
    /// ```
    ///
    /// See <https://www.sqlite.org/lang_savepoint.html> and
    /// <https://www.sqlite.org/tempfiles.html#stmtjrnl>.
    package func apply(
        batches next: () throws -> [IncomingChange]?, to db: Database, afterEach: (Database) throws -> Void
    ) throws -> ApplyOutcome {
        try apply(preparedBatches: { try next().map { prepare($0) } }, to: db, afterEach: afterEach)
    }

    /// Applies batches ``prepare(_:)`` readied, as ``apply(batches:to:afterEach:)`` applies
    /// batches of changes: a sync prepares each page on the thread that read it, while the page
    /// before it applies.
    ///
    /// ```swift
    /// var pages = received.map { log.prepare($0) }.makeIterator()
    /// let outcome = try log.apply(preparedBatches: { pages.next() }, to: db, afterEach: { _ in })
    /// ```
    package func apply(
        preparedBatches next: () throws -> PreparedChanges?, to db: Database, afterEach: (Database) throws -> Void
    ) throws -> ApplyOutcome {
        var first = try next()
        guard first != nil else { return ApplyOutcome() }
        var outcome = try applyBatches(first: &first, next: next, to: db, afterEach: afterEach)
        // A batch may bring what stashed changes waited for (a parent row, a row to update). One
        // stashed change may wait for another (an update for the insert of a row that waits for
        // its parent), so the stash is retried while it shrinks.
        var waiting = try stashCount(db)
        while waiting > 0 {
            let retried = try applyStash(db)
            outcome.applied += retried.applied
            outcome.superseded += retried.superseded
            outcome.refused += retried.refused
            guard retried.stashed < waiting else { break }
            waiting = retried.stashed
        }
        outcome.stashed = try stashCount(db)
        return outcome
    }
}
