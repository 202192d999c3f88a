import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

extension ChangeLog {
    func applyBatches(
        first: inout PreparedChanges?, next: () throws -> PreparedChanges?, to db: Database,
        afterEach: (Database) throws -> Void
    ) throws -> ApplyOutcome {
        // Only a transaction of the batches' own is sure to roll back whatever fails, the drop of
        // the triggers with it.
        let withoutTriggers = (first?.count ?? 0) >= Self.batchSizeWithoutTrackingTriggers && !db.isInsideTransaction
        return try db.withoutRecordingChanges { db in
            try withoutForeignKeyActions(db) { foreignKeys in
                // A first batch that fails whole rolls back this transaction (it holds nothing
                // else yet) and is applied again change by change; what joins it comes after.
                try Self.wholeThenChangeByChange(db) { savepointEach in
                    try db.transaction(.immediate) { db in
                        func applyAll() throws -> ApplyOutcome {
                            // Released below once applied; only a failure of the first batch itself
                            // applies it again (run(true)), before anything has released it.
                            guard first != nil else {
                                preconditionFailure("the first batch was applied again after it was released")
                            }
                            // Each batch is read through its optional, never bound to a local copy,
                            // so that releaseApplied(_:) takes the last reference to it.
                            var outcome = try applyInTransaction(
                                first!, db, foreignKeys: foreignKeys, savepointEach: savepointEach)
                            try afterEach(db)
                            // Applied: not held while the batches after it apply.
                            Self.releaseApplied(&first)
                            var joined = 0
                            while true {
                                var changes = try next()
                                if changes == nil { break }
                                joined += 1
                                let applied: ApplyOutcome
                                do {
                                    applied = try applyInTransaction(
                                        changes!, db, foreignKeys: foreignKeys, savepointEach: false)
                                } catch let failed as FailedChange {
                                    // SQLite itself ended the transaction (a full disk): its error.
                                    guard db.isInsideTransaction else { throw failed.underlying }
                                    throw ChangeLogError(
                                        .batchesRolledBack,
                                        "batch \(joined + 1) of this transaction could not be applied whole "
                                            + "(\(failed.underlying)): the transaction was rolled back",
                                        fix: "apply the batches again, the first of them alone")
                                }
                                try afterEach(db)
                                Self.releaseApplied(&changes)
                                outcome.applied += applied.applied
                                outcome.superseded += applied.superseded
                                outcome.refused += applied.refused
                                outcome.removed += applied.removed
                            }
                            return outcome
                        }
                        return try withoutTriggers ? withoutTrackingTriggers(db, applyAll) : applyAll()
                    }
                }
            }
        }
    }

    /// Frees an applied batch on another thread (``BackgroundRelease``) unless it is small, so
    /// that the batch after it does not wait for that; `batch` is nil afterwards.
    private static func releaseApplied(_ batch: inout PreparedChanges?) {
        if let count = batch?.count, count >= 256 {
            BackgroundRelease.release(&batch)
        } else {
            batch = nil
        }
    }

    /// Most batches apply whole, each change straight in the transaction. A change that fails may
    /// have written part of itself, so then the transaction is rolled back and the batch applied
    /// again with a savepoint around each change, which keeps the others and refuses that one.
    /// (A savepoint per change cost about a tenth of applying it.)
    ///
    /// Not when SQLite itself ended the caller's transaction (a full disk or an I/O error rolls
    /// back more than the statement): applied again, the batch would commit on its own, apart
    /// from the caller's other writes. The error is thrown instead.
    static func wholeThenChangeByChange<Result>(
        _ db: Database, _ run: (_ savepointEach: Bool) throws -> Result
    ) throws -> Result {
        let callerTransaction = db.isInsideTransaction
        do {
            return try run(false)
        } catch let failed as FailedChange {
            if callerTransaction && !db.isInsideTransaction { throw failed.underlying }
            // A batch that keeps coming this way (rows written while nothing was recorded, say)
            // costs twice its apply: say why.
            db.configuration.logHandler.log(
                .debug, "applying the batch again change by change",
                metadata: ["path": db.path, "reason": "\(failed.underlying)"])
            return try run(true)
        }
    }

    /// The `keepUnpushed` of rows that have no change waiting to be pushed.
    private static let keepNothing: @Sendable (PendingEntry, Database) throws -> Void = { _, _ in }

    /// Thrown out of the transaction of a batch applied without savepoints, to roll it back.
    private struct FailedChange: Error {
        let underlying: any Error
    }

    /// The batch's work inside the caller's transaction, with the connection's foreign keys as
    /// ``withoutForeignKeyActions(_:_:)`` left them.
    func applyInTransaction(
        _ batch: PreparedChanges, _ db: Database, foreignKeys: ForeignKeyMode, savepointEach: Bool
    ) throws -> ApplyOutcome {
        // Prepared against another schema (the store migrated since): prepared again, against this one.
        let batch =
            batch.schema == schema
            ? batch : prepare(batch.changes, leaving: batch.leaving, replacing: batch.replacing)
        let changes = batch.changes
        // Merging reads the keyed log's versions, and writes it directly, which is safe only with
        // the journal empty (ChangeJournal): fold first, in this transaction.
        try ChangeJournal.fold(db)
        // Another process of this store may have issued newer clocks: the orphans' deletes and the
        // last clock kept below must be past them.
        try ClockRegistry.catchUp(clock, db)
        try db.execute("PRAGMA defer_foreign_keys = ON")
        var outcome = ApplyOutcome()
        // Before the changes, whose rows' entries are read next: a row leaves before rows come in.
        var removedAsDeletes: [IncomingChange] = []
        var leaving = batch.leaving
        let notDownloaded = try rowsNotDownloaded(after: batch, db)
        if !notDownloaded.isEmpty {
            // None of them has a change waiting to be pushed, for `keepUnpushed` to keep.
            let keep = leaving?.keepUnpushed ?? Self.keepNothing
            leaving = LeavingRows(rows: (leaving?.rows ?? []) + notDownloaded, keepUnpushed: keep)
        }
        if let leaving, !leaving.rows.isEmpty {
            (outcome.removed, removedAsDeletes) = try removeLeavingRows(leaving, db)
        }
        let links = OrphanLink.declared(in: schema)
        let deletedParents = DeletedParentValues(links)
        let lookups = ApplyLookups(batch.tables, siteCount: batch.sites.count, deletedParents: deletedParents)
        // Applied whole, the page's log entries are read for all its rows at once and its new
        // entries written together (PageLog); change by change, each reads and writes its own,
        // since a savepoint's rollback takes back what it wrote.
        var page: PageLog?
        if !savepointEach {
            do { page = try readPageLog(batch, db) } catch { throw FailedChange(underlying: error) }
        }
        for index in changes.indices {
            guard savepointEach else {
                do {
                    try applyOne(at: index, of: batch, page: page, db: db, lookups: lookups, outcome: &outcome)
                } catch {
                    throw FailedChange(underlying: error)
                }
                continue
            }
            do {
                try db.savepoint { db in
                    try applyOne(at: index, of: batch, page: nil, db: db, lookups: lookups, outcome: &outcome)
                }
            } catch {
                // The savepoint's rollback may have taken back a table or site number it made:
                // look them up again.
                lookups.forgetNumbers()
                outcome.refused.append(RefusedIncomingChange(index: index, change: changes[index], reason: "\(error)"))
            }
        }
        do { try page?.write(db) } catch { throw FailedChange(underlying: error) }
        try resolveOrphans(
            after: removedAsDeletes.isEmpty ? changes : removedAsDeletes + changes, foreignKeys: foreignKeys, db,
            outcome: &outcome, links: links, deletedParents: deletedParents)
        try recordRefusedIncoming(outcome.refused, db)
        // The clock has received the batch's clocks: kept with them, so a process opening the store
        // later starts past them. The newest entry it starts from otherwise may be older (the last
        // one written is any of the page's), and a local edit would then lose to the version it
        // overwrote here on every other device.
        try db.execute(
            "UPDATE ostore_meta.ostore_store SET lastClock = max(lastClock, \(clock.lastIssued.packed)) WHERE id = 1")
        return outcome
    }
}
