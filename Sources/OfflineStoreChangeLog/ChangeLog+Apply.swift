import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

/// What ``ChangeLog/apply(_:to:)`` did with a batch.
public struct ApplyOutcome: Sendable, Hashable {
    /// Changes (or columns of them) that won and were written.
    public var applied = 0
    /// Changes older than what this store already has, per column (last writer wins).
    public var superseded = 0
    /// Changes waiting in the stash after the batch: for a table or column this schema does not
    /// know yet, or a row whose parent has not arrived. They are applied when a later migration or
    /// batch makes room.
    public var stashed = 0
    /// Changes refused, each with the reason; the rest of the batch was applied.
    public var rejected: [RejectedChange] = []
}

/// A change ``ChangeLog/apply(_:to:)`` refused, and why.
public struct RejectedChange: Sendable, Hashable {
    /// Its position in the batch.
    public var index: Int
    public var change: RemoteChange
    public var reason: String
}

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
    ///   drift bound) is rejected with the reason; the rest of the batch still applies. Rejected
    ///   changes are kept, in the same transaction, in the metadatabase (``refusedChanges(_:)``)
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
        _ changes: [RemoteChange], to db: Database, alongside: ((Database) throws -> Void)? = nil
    ) throws -> ApplyOutcome {
        try apply(prepare(changes), to: db, alongside: alongside)
    }

    /// Applies a batch ``prepare(_:)`` readied, as ``apply(_:to:alongside:)`` applies its changes.
    ///
    /// ```swift
    /// let outcome = try log.apply(log.prepare(page.changes), to: db) { db in try log.save(stateAfterPage, db) }
    /// ```
    public func apply(
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
    /// is rejected with its reason and the rest of the batch applied. The batches after it are
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
    /// throws rolls everything back. A rejected change's ``RejectedChange/index`` is its place in
    /// its own batch.
    ///
    /// ```swift
    /// var pages = received.makeIterator()
    /// let outcome = try log.apply(batches: { pages.next() }, to: db, afterEach: { _ in })
    /// ```
    ///
    /// See <https://www.sqlite.org/lang_savepoint.html> and
    /// <https://www.sqlite.org/tempfiles.html#stmtjrnl>.
    public func apply(
        batches next: () throws -> [RemoteChange]?, to db: Database, afterEach: (Database) throws -> Void
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
    public func apply(
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
            outcome.rejected += retried.rejected
            guard retried.stashed < waiting else { break }
            waiting = retried.stashed
        }
        outcome.stashed = try stashCount(db)
        return outcome
    }

    private func stashCount(_ db: Database) throws -> Int {
        try db.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_stash") ?? 0
    }

    private func applyBatches(
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
                                outcome.rejected += applied.rejected
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
    /// again with a savepoint around each change, which keeps the others and rejects that one.
    /// (A savepoint per change cost about a tenth of applying it.)
    ///
    /// Not when SQLite itself ended the caller's transaction (a full disk or an I/O error rolls
    /// back more than the statement): applied again, the batch would commit on its own, apart
    /// from the caller's other writes. The error is thrown instead.
    private static func wholeThenChangeByChange<Result>(
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

    /// Thrown out of the transaction of a batch applied without savepoints, to roll it back.
    private struct FailedChange: Error {
        let underlying: any Error
    }

    /// The batch's work inside the caller's transaction, with the connection's foreign keys as
    /// ``withoutForeignKeyActions(_:_:)`` left them.
    private func applyInTransaction(
        _ batch: PreparedChanges, _ db: Database, foreignKeys: ForeignKeyMode, savepointEach: Bool
    ) throws -> ApplyOutcome {
        // Prepared against another schema (the store migrated since): prepared again, against this one.
        let batch = batch.schema == schema ? batch : prepare(batch.changes)
        let changes = batch.changes
        // Merging reads the keyed log's versions, and writes it directly, which is safe only with
        // the journal empty (ChangeJournal): fold first, in this transaction.
        try ChangeJournal.fold(db)
        // Another process of this store may have issued newer clocks: the orphans' deletes and the
        // last clock kept below must be past them.
        try ClockRegistry.catchUp(clock, db)
        try db.execute("PRAGMA defer_foreign_keys = ON")
        var outcome = ApplyOutcome()
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
                outcome.rejected.append(RejectedChange(index: index, change: changes[index], reason: "\(error)"))
            }
        }
        do { try page?.write(db) } catch { throw FailedChange(underlying: error) }
        try resolveOrphans(
            after: changes, foreignKeys: foreignKeys, db, outcome: &outcome, links: links,
            deletedParents: deletedParents)
        try recordRefused(outcome.rejected, db)
        // The clock has received the batch's clocks: kept with them, so a process opening the store
        // later starts past them. The newest entry it starts from otherwise may be older (the last
        // one written is any of the page's), and a local edit would then lose to the version it
        // overwrote here on every other device.
        try db.execute(
            "UPDATE ostore_meta.ostore_store SET lastClock = max(lastClock, \(clock.lastIssued.packed)) WHERE id = 1")
        return outcome
    }

    private func applyOne(
        at index: Int, of batch: PreparedChanges, page: PageLog?, db: Database, lookups: ApplyLookups,
        outcome: inout ApplyOutcome
    ) throws {
        let change = batch.changes[index]
        let plan = batch.plans[index]
        if let refused = plan.refusedBeforeClock { throw refused }
        try clock.receive(change.clock)
        guard let place = plan.table else {
            try stash(change, reason: "table \(change.table) is not in schema \(schema.version?.description ?? "")", db)
            outcome.stashed += 1
            return
        }
        if let refused = plan.refused { throw refused }
        let target = lookups.table(place)
        let keyValues = plan.keyValues
        // The change's values by column position, its key's at the key columns (prepare(_:)).
        let known = plan.known
        let unknown = plan.unknown
        if !unknown.isEmpty {
            var later = change
            later.operation = .update
            later.columns = unknown
            try stash(
                later,
                reason: "columns \(unknown.keys.sorted()) are not in schema \(schema.version?.description ?? "")", db)
            outcome.stashed += 1
        }
        let tableID = try target.tableID { try trackedTableID(target.definition.name, db) }
        let loggedKey = plan.loggedKey
        let site = try lookups.siteNumber(at: plan.site) { try siteNumber(change.siteID, db) }
        let incoming = ChangeVersion(clock: change.clock.packed, site: change.siteID)
        // An insert learns whether its row is present from the insert itself (below), so its
        // state is the log's versions alone: one index lookup fewer per pulled row. Not when the
        // app has triggers on the table: its BEFORE INSERT triggers would run for an insert that
        // then does nothing.
        let probesByInserting = try change.operation == .insert && !target.hasAppTriggers(db)
        let slot = page?.slots[index]
        let row: (exists: Bool?, versions: [String: ChangeVersion])
        if probesByInserting, let page, let slot {
            row = (nil, page.versions[slot])
        } else {
            // What the page holds back would be missing from what the log answers.
            try page?.write(db)
            row = try rowState(target, keyValues, tableID, loggedKey, existence: !probesByInserting, db)
        }
        // The row's versions as the merge rule reads them: the log's `''` entry is its creation,
        // `'-'` its deletion, the others its columns'.
        let versions = MergeRule.Row(created: row.versions[""], deleted: row.versions["-"])
        let statement = page == nil ? try lookups.recordVersionStatement(db) : nil
        let record = { (column: String) in
            if let page {
                page.record(
                    PageLog.Entry(tableID: tableID, key: loggedKey, column: column, clock: change.clock, site: site),
                    slot: slot, version: incoming)
            } else if let statement {
                try Self.recordVersion(statement, tableID, loggedKey, column, change.clock, site)
            }
        }
        // A new row (no entries in the log, its key once in the page: the rule's `create` with
        // nothing to weigh) is inserted with the page's next new rows by one statement
        // (PageLog.insert); a change of any other kind writes them first, so the table's writes
        // keep their order.
        if let page, probesByInserting, let slot, !page.isRepeated(slot), unknown.isEmpty, row.versions.isEmpty {
            try page.insert(known, into: target, db)
            try record("")
            outcome.applied += 1
            return
        }
        try page?.writeRows(db)
        // An insert that probes by inserting does not know yet whether its row is present: it is
        // weighed as absent, and again as present if the insert finds the row.
        var verdict = MergeRule.verdict(
            of: change.operation, at: incoming, row: versions, isPresent: row.exists == true)
        switch verdict {
        case .superseded:
            outcome.superseded += 1
            return
        case .delete:
            if row.exists == true {
                try lookups.deletedParents.noteDeleting(
                    target.definition.name, keyColumns: target.keyColumns, keyValues: keyValues, db)
                try db.execute(
                    SQL(
                        sql: lookups.keyedSQL("DELETE FROM", target.definition.name, target.keyColumns),
                        arguments: keyValues))
            }
            try record("-")
            // The delete drops the row's column versions, as the server drops a deleted row's cells
            // (Protocol/README.md §8.2 rule 4): one newer than the delete (an update concurrent with
            // it, applied before it) would otherwise keep an older update out of the row inserted
            // again here and not on a site that applied the delete first. A local one still queued
            // goes with them: its row is gone, so the push would pass it over.
            if row.versions.keys.contains(where: { $0 != "" && $0 != "-" }) {
                // The delete's own entry first, so that it takes the newest place: dropping the
                // newest entries before it was written would lower the newest place, and a local
                // change made next would take a place at or below the pushed watermark and never
                // be pushed.
                try page?.write(db)
                try db.execute(
                    SQL(sql: Self.forgetColumnVersionsSQL, arguments: [.integer(Int64(tableID)), loggedKey]))
                if let slot { page?.forgetColumnVersions(slot: slot) }
            }
            outcome.applied += 1
            return
        case .waitForRow:
            try stash(change, reason: "row not present yet", db)
            outcome.stashed += 1
            return
        case .create:
            // A row with live versions and not in its table waits in the stash for its parent (or
            // was removed without being recorded): an insert of its key (the same one delivered
            // again, Protocol §10.3) waits behind it, to merge with it by versions once it is
            // back; written whole now, it would replace this store's newer edits. Its columns
            // unknown to this schema are stashed already (above), once. Not while the stash itself
            // is applied: it was emptied first. The stash's keys are read once per batch, before
            // the insert probes for the row.
            if versions.created != nil, !versions.isDeleted, try waitsInStash(target, keyValues, lookups, db) {
                var behind = change
                behind.columns = change.columns.filter { unknown[$0.key] == nil }
                try stash(behind, reason: "its row waits in the stash for its parent", db)
                outcome.stashed += 1
                return
            }
            // The insert itself tells whether the row was present; a present row is left as it
            // is, and merged below.
            if try target.write(.insert, known, keyValues: [], db) {
                // A row back from waiting for its parent keeps its entry as it was (a local one
                // still to be pushed stays so).
                if versions.created != incoming {
                    try record("")
                }
                outcome.applied += 1
                return
            }
            verdict = MergeRule.verdict(of: .insert, at: incoming, row: versions, isPresent: true)
        case .merge:
            break
        }
        // A newer creation dates again the columns the old one dated.
        var redated: [String] = []
        if verdict == .merge(newCreation: true) {
            try record("")
            for (name, version) in row.versions
            where name != "" && name != "-" && MergeRule.isDatedByCreation(version, row: versions) {
                redated.append(name)
            }
        }
        var winners = [DatabaseValue?](repeating: nil, count: known.count)
        var anyWinner = false
        for (position, value) in known.enumerated() {
            guard let value, !target.isKey[position] else { continue }
            // A version older than the row's delete dates the row's life before it: a delete
            // applied here dropped them (above), but a row deleted by this device keeps them (its
            // delete is recorded, not merged). A version at clock 0 is one a purged database left
            // for the edits it lost (StoreIdentity); the rule counts neither.
            let name = target.definition.columns[position].name
            guard MergeRule.writesColumn(at: incoming, over: row.versions[name], row: versions) else { continue }
            winners[position] = value
            anyWinner = true
        }
        for name in redated {
            let written = winners.indices.contains { winners[$0] != nil && target.definition.columns[$0].name == name }
            if !written { try record(name) }
        }
        guard anyWinner else {
            outcome.superseded += 1
            return
        }
        try target.write(.update, winners, keyValues: keyValues, db)
        for (position, value) in winners.enumerated() where value != nil {
            try record(target.definition.columns[position].name)
        }
        outcome.applied += 1
    }

    /// Names from the wire are refused unless they are plain identifiers, even before they are
    /// looked up in the schema, so nothing odd is ever stashed or echoed in a message.
    static func isPlainIdentifier(_ name: String) -> Bool {
        // ASCII only, so bytes are scalars; read as UTF-8 bytes, not through Unicode properties.
        // A native string's bytes are read in place, cheaper than `allSatisfy` over the view.
        var name = name
        return name.withUTF8 { bytes in
            guard let first = bytes.first, bytes.count <= 128, isIdentifierLetter(first) else { return false }
            for byte in bytes where !isIdentifierLetter(byte) && !(48...57).contains(byte) { return false }
            return true
        }
    }

    @inline(__always)
    private static func isIdentifierLetter(_ byte: UInt8) -> Bool {
        (65...90).contains(byte) || (97...122).contains(byte) || byte == 95
    }

    static func loggedKey(_ values: [DatabaseValue]) -> DatabaseValue {
        values.count == 1 ? values[0] : .text(values.map(\.sqlLiteral).joined(separator: ","))
    }

    func version(_ tableID: Int, _ key: DatabaseValue, _ column: String, _ db: Database) throws -> ChangeVersion? {
        try db.cachedStatement(Self.versionSQL).withFirstRow(binding: [.integer(Int64(tableID)), key, .text(column)]) {
            row in
            guard let row else { return nil }
            return ChangeVersion(
                clock: try row.decode(at: 0), site: try row.decode(Data?.self, at: 1) ?? identity.siteID)
        }
    }

    private static let versionSQL = """
        SELECT c.clock, s.siteID FROM ostore_meta.ostore_changes AS c
        LEFT JOIN ostore_meta.ostore_sites AS s ON s.id = c.site
        WHERE c.tableID = ? AND c.pk = ? AND c.columnName = ?
        """

    /// The key's values in the order of `keyColumns`. The change names the same key columns as
    /// the table, compared as SQLite compares names (case-insensitively); usually exactly.
    static func keyValues(of change: RemoteChange, keyColumns: [String], table: String) throws(ChangeLogError)
        -> [DatabaseValue]
    {
        if change.primaryKey.count == keyColumns.count {
            var values: [DatabaseValue] = []
            values.reserveCapacity(keyColumns.count)
            for key in keyColumns {
                guard let value = change.primaryKey[key] else { break }
                values.append(value)
            }
            if values.count == keyColumns.count { return values }
        }
        // As many names as key columns, the same ones: no key column named twice (in two cases).
        guard change.primaryKey.count == keyColumns.count,
            Set(change.primaryKey.keys.map { $0.lowercased() }) == Set(keyColumns.map { $0.lowercased() })
        else {
            throw ChangeLogError(
                .invalidChange, table: table,
                "the key names \(change.primaryKey.keys.sorted()) but \(table) is keyed by \(keyColumns)")
        }
        return keyColumns.map { key in change.primaryKey.first { $0.key.lowercased() == key.lowercased() }!.value }
    }

    /// Whether the row is present (with `existence`; nil without), and every version the log
    /// holds for it by column name (`''` its creation, `'-'` its deletion): one statement for the
    /// row's whole range of the log's index, instead of one lookup per column.
    private func rowState(
        _ target: AppliedTable, _ keyValues: [DatabaseValue], _ tableID: Int, _ key: DatabaseValue,
        existence: Bool, _ db: Database
    ) throws -> (exists: Bool?, versions: [String: ChangeVersion]) {
        let statement = try existence ? target.rowStateStatement(db) : target.versionsStatement(db)
        defer { statement.reset() }
        let keyCount = existence ? keyValues.count : 0
        if existence {
            for (index, value) in keyValues.enumerated() { try statement.bind(value, toParameter: index + 1) }
        }
        try statement.bind(.integer(Int64(tableID)), toParameter: keyCount + 1)
        try statement.bind(key, toParameter: keyCount + 2)
        // The entry columns follow the existence column when there is one.
        let first = existence ? 1 : 0
        var exists: Bool? = existence ? false : nil
        var versions: [String: ChangeVersion] = [:]
        while try statement.step(arguments: nil) {
            if existence { exists = try statement.value(at: 0) == .integer(1) }
            // A row without entries comes as one row of NULLs (the outer join): nothing follows.
            guard let (column, version) = try loggedVersion(statement, at: first) else { break }
            versions[column] = version
        }
        return (exists, versions)
    }

    /// A log entry's column name and version from the current row of `statement`, whose columns
    /// from `first` are `columnName, clock, siteID` (the site's id, NULL for this device); nil
    /// when there is no entry there.
    private func loggedVersion(_ statement: Statement, at first: Int) throws -> (
        column: String, version: ChangeVersion
    )? {
        guard case .text(let column) = try statement.value(at: first),
            case .integer(let clock) = try statement.value(at: first + 1)
        else { return nil }
        let siteID: Data
        if case .blob(let bytes) = try statement.value(at: first + 2) {
            siteID = bytes
        } else {
            siteID = identity.siteID
        }
        return (column, ChangeVersion(clock: clock, site: siteID))
    }

    /// The log's entries for every row of the page (its distinct keys, which ``prepare(_:)``
    /// found), read by one statement per table (the keys bound as one JSON array) instead of one
    /// per change, kept in a ``PageLog``. Only keys the log stores as ASCII text without quotes,
    /// backslashes or control characters are read so: SQLite compares them byte for byte as Swift
    /// compares ASCII strings (a number may equal a value of another type, and Swift equates
    /// canonically equivalent Unicode strings), and they go into JSON as they are; the others read
    /// their row when applied.
    /// See <https://www.sqlite.org/json1.html#jeach>.
    private func readPageLog(_ batch: PreparedChanges, _ db: Database) throws -> PageLog {
        let rows = batch.rows
        var versions = [[String: ChangeVersion]](repeating: [:], count: rows.repeated.count)
        for table in rows.keys {
            // A table the log has no number for has no entries yet (the number is made when the
            // first one is written).
            guard
                let tableID = try db.fetchValue(
                    Int.self, "SELECT id FROM ostore_meta.ostore_tables WHERE name = \(table.table)")
            else { continue }
            let statement = try db.cachedStatement(Self.pageEntriesSQL)
            defer { statement.reset() }
            try statement.bind(.integer(Int64(tableID)), toParameter: 1)
            try statement.bind(.text(table.json), toParameter: 2)
            while try statement.step(arguments: nil) {
                guard case .integer(let position) = try statement.value(at: 0),
                    let (column, version) = try loggedVersion(statement, at: 1)
                else { continue }
                versions[table.slots[Int(position)]][column] = version
            }
        }
        return PageLog(slots: rows.slots, versions: versions, repeated: rows.repeated)
    }

    /// The entries (the key's place in the array, column name, clock, site id) of the keys in a JSON
    /// array, `?2`, of the table numbered `?1`; the array drives the join (CROSS JOIN), one index
    /// search per key.
    private static let pageEntriesSQL = """
        SELECT k.key, c.columnName, c.clock, s.siteID FROM json_each(?2) AS k
        CROSS JOIN ostore_meta.ostore_changes AS c ON c.tableID = ?1 AND c.pk = k.value
        LEFT JOIN ostore_meta.ostore_sites AS s ON s.id = c.site
        """

    private static func recordVersion(
        _ statement: Statement, _ tableID: Int, _ key: DatabaseValue, _ column: String, _ clock: ChangeClock,
        _ site: Int
    ) throws {
        try statement.bind(.integer(Int64(tableID)), toParameter: 1)
        try statement.bind(key, toParameter: 2)
        try statement.bind(.text(column), toParameter: 3)
        try statement.bind(.integer(clock.packed), toParameter: 4)
        try statement.bind(.integer(Int64(site)), toParameter: 5)
        try statement.runToCompletion(arguments: nil)
    }

    func recordVersion(
        _ tableID: Int, _ key: DatabaseValue, _ column: String, _ clock: ChangeClock, _ site: Int, _ db: Database
    ) throws {
        try Self.recordVersion(db.cachedStatement(Self.recordVersionSQL), tableID, key, column, clock, site)
    }

    /// A fixed text with every value bound: written for each applied change, it is neither built
    /// nor parsed again.
    static let recordVersionSQL = """
        INSERT INTO ostore_meta.ostore_changes (tableID, pk, columnName, clock, site) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (tableID, pk, columnName) DO UPDATE
            SET clock = excluded.clock, site = excluded.site, seq = excluded.seq
        """

    /// Deletes a row's column versions from the log (`?1` the table's number, `?2` the key as the
    /// log stores it), keeping its creation (`''`) and deletion (`'-'`) versions.
    private static let forgetColumnVersionsSQL = """
        DELETE FROM ostore_meta.ostore_changes WHERE tableID = ?1 AND pk = ?2 AND columnName NOT IN ('', '-')
        """

    func trackedTableID(_ name: String, _ db: Database) throws -> Int {
        try db.execute("INSERT OR IGNORE INTO ostore_meta.ostore_tables (name) VALUES (\(name))")
        return try db.fetchValue(Int.self, "SELECT id FROM ostore_meta.ostore_tables WHERE name = \(name)") ?? 0
    }

    /// The site's number in `ostore_sites`. This store's own id gets a number too (never 0, which
    /// means "written here, to be pushed"): a change of ours that comes back from the server (a
    /// snapshot after the database was purged) is applied like any other and must not be queued
    /// for pushing again.
    private func siteNumber(_ siteID: Data, _ db: Database) throws -> Int {
        try db.execute("INSERT OR IGNORE INTO ostore_meta.ostore_sites (siteID) VALUES (\(siteID))")
        return try db.fetchValue(Int.self, "SELECT id FROM ostore_meta.ostore_sites WHERE siteID = \(siteID)") ?? 0
    }

    /// `"a" = ?1 AND "b" = ?2 …`: a row matched by its key, the key's values bound first, in order.
    static func keyMatch(_ keys: [String]) -> String {
        keys.enumerated().map { "\(quoteIdentifier($1)) = ?\($0 + 1)" }.joined(separator: " AND ")
    }

    /// `VERB main."table" [SET …] WHERE key = ? AND …`, names quoted (they come from the declared
    /// schema), values bound.
    static func rowSQL(
        _ verb: String, _ table: String, _ keys: [String], _ keyValues: [DatabaseValue], set: [String: DatabaseValue]
    ) -> SQL {
        var sql = SQL(sql: "\(verb) main.\(quoteIdentifier(table))")
        if !set.isEmpty {
            sql = sql + " SET "
            for (index, name) in set.keys.sorted().enumerated() {
                sql = sql + (index == 0 ? "" : ", ") + "\(identifier: name) = \(set[name]!)"
            }
        }
        sql = sql + " WHERE "
        for (index, (key, value)) in zip(keys, keyValues).enumerated() {
            sql = sql + (index == 0 ? "" : " AND ") + "\(identifier: key) = \(value)"
        }
        return sql
    }

    /// Whether the stash holds the row of `target` with these key values, waiting for its parent.
    private func waitsInStash(
        _ target: AppliedTable, _ keyValues: [DatabaseValue], _ lookups: ApplyLookups, _ db: Database
    ) throws -> Bool {
        try lookups.waitingKeys(of: target.definition.name) {
            Set(try WaitingRows.of(target.definition.name, keyColumns: target.keyColumns, db).keys)
        }.contains(keyValues)
    }

    func stash(_ change: RemoteChange, reason: String, _ db: Database) throws {
        let json = String(decoding: try JSONEncoder().encode(change), as: UTF8.self)
        try db.execute(
            "INSERT INTO ostore_meta.ostore_stash (tableName, reason, change) VALUES (\(change.table), \(reason), \(json))"
        )
    }

    /// Applies what the stash holds that this schema (or the rows now present) can take; what still
    /// cannot be applied goes back to the stash. Run after every migration.
    public func applyStash(_ db: Database) throws -> ApplyOutcome {
        // An empty stash (the common case, at every open) takes no write lock.
        guard try db.fetchValue(Bool.self, "SELECT EXISTS (SELECT 1 FROM ostore_meta.ostore_stash)") == true else {
            return ApplyOutcome()
        }
        // Emptied and applied in one transaction: a retry that fails leaves the stash as it was.
        // The transaction opens inside the scope where foreign key actions are off (SQLite honours
        // that pragma only outside a transaction), so no cascade changes rows behind the log.
        return try db.withoutRecordingChanges { db in
            try withoutForeignKeyActions(db) { foreignKeys in
                try Self.wholeThenChangeByChange(db) { savepointEach in
                    try db.transaction(.immediate) { db in
                        let rows = try db.fetchAll("SELECT id, change FROM ostore_meta.ostore_stash ORDER BY id")
                        guard !rows.isEmpty else { return ApplyOutcome() }
                        var changes: [RemoteChange] = []
                        for row in rows {
                            let json: String = try row.decode(at: 1)
                            changes.append(try JSONDecoder().decode(RemoteChange.self, from: Data(json.utf8)))
                        }
                        try db.execute("DELETE FROM ostore_meta.ostore_stash")
                        let batch = prepare(changes)
                        var outcome = try applyInTransaction(
                            batch, db, foreignKeys: foreignKeys, savepointEach: savepointEach)
                        try requeueLocalEntries(ofRowsBack: batch, outcome.rejected, db)
                        outcome.stashed = try stashCount(db)
                        return outcome
                    }
                }
            }
        }
    }
}

extension ChangeLog {
    /// Queues again this store's own entries of the rows that came back from the stash (an orphan
    /// waited there for its parent, ``resolveOrphans(after:foreignKeys:_:outcome:links:deletedParents:)``).
    /// A push while the row was out of its table read its entries from the stash
    /// (``PendingTable/waitingEntry(_:columnName:tableID:key:in:_:)``), or passed them over (a
    /// build before that, a row it did not find there) and the acknowledged mark went past them
    /// with a later change, or goes past them when that push is acknowledged after the row came
    /// back: a local edit made before the row left would otherwise never be pushed.
    ///
    /// The queue keeps its order: a change made after the row's edit (the delete of the parent the
    /// edit moved the row away from, say) must not reach the server first, or a peer that applies
    /// it alone finds the row orphaned and deletes it, on every site. So the rows' entries at or
    /// below the mark (but a deletion entry: the row is present, so a local deletion of it is
    /// older than what brought it back) go to the end of the queue, followed by every queued entry
    /// from the first one of these rows on, all in their order. Entries pushed already go again;
    /// the server keeps the versions it has (same clock, same site). The rows' own entries are
    /// few; the queue moves only when a row that came back has entries of its own, which takes a
    /// local edit of a row that another site moved to a parent not here yet.
    fileprivate func requeueLocalEntries(
        ofRowsBack batch: PreparedChanges, _ rejected: [RejectedChange], _ db: Database
    ) throws {
        let refused = Set(rejected.map(\.index))
        var done: Set<[DatabaseValue]> = []
        let pushed = try pushedSequence(db)
        var passedOver: [Int64] = []
        var firstQueued: Int64?
        for (index, plan) in batch.plans.enumerated() {
            guard batch.changes[index].operation == .insert, !refused.contains(index), let place = plan.table,
                plan.refused == nil, plan.refusedBeforeClock == nil
            else { continue }
            let table = batch.tables[place]
            let tableID = try trackedTableID(table.definition.name, db)
            guard done.insert([.integer(Int64(tableID)), plan.loggedKey]).inserted else { continue }
            let inTable = SQL(
                sql:
                    "SELECT 1 FROM main.\(quoteIdentifier(table.definition.name)) WHERE \(Self.keyMatch(table.keyColumns))",
                arguments: plan.keyValues)
            guard try db.fetchOne(inTable) != nil else { continue }
            let places = try db.fetchAll(
                Int64.self,
                SQL(
                    sql: Self.ownEntriesSQL, arguments: [.integer(Int64(tableID)), plan.loggedKey]))
            passedOver += places.filter { $0 <= pushed }
            if let first = places.first(where: { $0 > pushed }) { firstQueued = min(firstQueued ?? first, first) }
        }
        // From the first passed-over entry's mark on, or from the first queued entry of these rows.
        guard let after = passedOver.isEmpty ? firstQueued.map({ $0 - 1 }) : pushed else { return }
        let list = "[" + passedOver.map(String.init).joined(separator: ",") + "]"
        try db.execute(SQL(sql: Self.requeueSQL, arguments: [.text(list), .integer(after)]))
    }

    /// The places of a row's own entries but its deletion, in order (`?1` the table's number,
    /// `?2` the key as the log stores it).
    private static let ownEntriesSQL = """
        SELECT seq FROM ostore_meta.ostore_changes
        WHERE tableID = ?1 AND pk = ?2 AND site = 0 AND columnName <> '-' ORDER BY seq
        """

    /// Moves this store's entries at the places `?1` (a JSON array) and after the place `?2` to
    /// new places at the end of the queue, in their order (SQLite reads the whole SELECT before
    /// it writes, as it reads the table it inserts into).
    private static let requeueSQL = """
        INSERT INTO ostore_meta.ostore_changes (tableID, pk, columnName, clock, site)
        SELECT tableID, pk, columnName, clock, site FROM ostore_meta.ostore_changes
        WHERE site = 0 AND (seq IN (SELECT value FROM json_each(?1)) OR seq > ?2)
        ORDER BY seq
        ON CONFLICT (tableID, pk, columnName) DO UPDATE SET seq = excluded.seq
        """
}

/// The log's entries of a page's rows while the page applies whole (see
/// ``ChangeLog/readPageLog(_:_:)``): each row's versions, as the changes applied so far
/// left them, so that a later change of the same row merges against what an earlier one recorded;
/// the page's new rows, inserted together (``insert(_:into:_:)``); and the entries the page
/// records, written together by ``write(_:)`` (a statement per entry costs several times more)
/// before anything reads the log again and at the end of the page.
private final class PageLog {
    // One apply uses it, on one thread, and no access to a property overlaps another access to
    // it: its properties go without dynamic exclusivity checks, which would run on every access.
    static let entriesPerWrite = 100
    static let rowsPerInsert = 100

    struct Entry {
        var tableID: Int
        var key: DatabaseValue
        var column: String
        var clock: ChangeClock
        var site: Int
    }

    /// Per change (by its place in the batch), the slot of its row in ``versions``; nil for a row
    /// read from the log when it applies.
    let slots: [Int?]
    /// Per row, its versions by column name.
    @exclusivity(unchecked) private(set) var versions: [[String: ChangeVersion]]
    /// Per row, whether more than one change of the page changes it: only then do its versions
    /// follow what the page records.
    private let repeated: [Bool]
    /// Entries of keys and columns the log has none of yet (known from ``versions``), and the others.
    @exclusivity(unchecked) private var newEntries: [Entry] = []
    @exclusivity(unchecked) private var otherEntries: [Entry] = []
    /// New rows waiting to be inserted, all of one table and with values for the same columns.
    @exclusivity(unchecked) private var rows: [[DatabaseValue?]] = []
    @exclusivity(unchecked) private var rowTable: AppliedTable?
    /// The arguments of the entries' writes, reused from one to the next.
    @exclusivity(unchecked) private var arguments = BulkArguments()

    init(slots: [Int?], versions: [[String: ChangeVersion]], repeated: [Bool]) {
        self.slots = slots
        self.versions = versions
        self.repeated = repeated
        newEntries.reserveCapacity(slots.count)
    }

    /// Keeps an entry to write; a new one (of a key and column the log and the page have none of)
    /// is written with the other new ones, after which the others update what they find. A row
    /// changed again later in the page sees it in its ``versions``.
    func record(_ entry: Entry, slot: Int?, version: ChangeVersion) {
        guard let slot else {
            otherEntries.append(entry)
            return
        }
        if versions[slot][entry.column] == nil {
            newEntries.append(entry)
        } else {
            otherEntries.append(entry)
        }
        if repeated[slot] { versions[slot][entry.column] = version }
    }

    func isRepeated(_ slot: Int) -> Bool { repeated[slot] }

    /// Forgets the column versions of a row a delete dropped from the log (its creation and
    /// deletion versions stay), for the page's later changes of that row.
    func forgetColumnVersions(slot: Int) {
        guard repeated[slot] else { return }
        versions[slot] = versions[slot].filter { $0.key == "" || $0.key == "-" }
    }

    /// Whether two rows of one table have values for the same columns.
    private static func sameColumns(_ one: [DatabaseValue?], _ other: [DatabaseValue?]) -> Bool {
        for position in one.indices {
            switch (one[position], other[position]) {
            case (.none, .some), (.some, .none): return false
            default: continue
            }
        }
        return true
    }

    /// Holds back the insert of a new row (`values` by column position), written with the others by
    /// ``writeRows(_:)``: when ``rowsPerInsert`` wait, before a row of another table or with other
    /// columns, and before anything else writes or reads.
    func insert(_ values: [DatabaseValue?], into table: AppliedTable, _ db: Database) throws {
        if let first = rows.first, rowTable !== table || !Self.sameColumns(first, values) {
            try writeRows(db)
        }
        rowTable = table
        rows.append(values)
        if rows.count == Self.rowsPerInsert { try writeRows(db) }
    }

    /// Inserts the rows held back, in their order, as their own inserts would have (``AppliedTable/insert(_:_:)``).
    /// Each was new when its change was read (no entries in the log); one present after all (a row
    /// written without its entries, by another program or before the log tracked its table) throws,
    /// and the page is applied again change by change, where its insert merges into it.
    func writeRows(_ db: Database) throws {
        guard let table = rowTable, !rows.isEmpty else { return }
        defer { rows.removeAll(keepingCapacity: true) }
        guard try table.insert(rows, db) == rows.count else { throw RowPresentAfterAll() }
    }

    struct RowPresentAfterAll: Error {}

    /// Writes the rows held back, then the recorded entries into the log: the new ones inserted
    /// ``entriesPerWrite`` by one statement, the others by the upsert one entry at a time runs.
    ///
    /// Statements that write many rows take `OR FAIL`: with SQLite's default (`ABORT`) each keeps a
    /// statement journal to take back its own rows on a failure, which beyond 64 KiB spills to a
    /// temporary file, many times the writes of the page's rows and entries themselves.
    /// Here a failure rolls back the whole page, which is applied again change by change.
    /// See <https://www.sqlite.org/lang_conflict.html>.
    func write(_ db: Database) throws {
        try writeRows(db)
        var start = 0
        while start < newEntries.count {
            let rows = newEntries.count - start >= Self.entriesPerWrite ? Self.entriesPerWrite : 1
            let statement = try db.cachedStatement(rows == 1 ? ChangeLog.recordVersionSQL : Self.insertNewSQL)
            try bind(newEntries[start..<start + rows], to: statement)
            start += rows
        }
        for entry in otherEntries {
            try bind(CollectionOfOne(entry), to: db.cachedStatement(ChangeLog.recordVersionSQL))
        }
        newEntries.removeAll(keepingCapacity: true)
        otherEntries.removeAll(keepingCapacity: true)
    }

    /// Binds the entries' values, five each, in place from one reused buffer (``BulkArguments``:
    /// binding each value as a copy of its own, and clearing the bindings, would weigh on the apply
    /// thread), and runs the statement.
    private func bind(_ entries: some Collection<Entry>, to statement: Statement) throws {
        arguments.removeAll()
        for entry in entries {
            arguments.append(Int64(entry.tableID))
            arguments.append(entry.key)
            arguments.append(text: entry.column)
            arguments.append(entry.clock.packed)
            arguments.append(Int64(entry.site))
        }
        try statement.execute(arguments)
    }

    /// ``entriesPerWrite`` new entries, in their order (each takes the next place in the queue, as
    /// the upsert gives a new entry).
    private static let insertNewSQL =
        "INSERT OR FAIL INTO ostore_meta.ostore_changes (tableID, pk, columnName, clock, site) VALUES "
        + Array(repeating: "(?, ?, ?, ?, ?)", count: entriesPerWrite).joined(separator: ", ")
}

/// What applying one batch looks up again and again, kept for the batch: each table's
/// ``AppliedTable``, the numbers the metadatabase gives sites, and the held statements.
private final class ApplyLookups {
    // Its properties go without dynamic exclusivity checks, as PageLog's do, for the same reason.
    /// The batch's tables (``PreparedChanges/tables``), each made when a change first needs it.
    private let shapes: [TableShape]
    @exclusivity(unchecked) private var tables: [AppliedTable?]
    /// The numbers of the batch's sites (``PreparedChanges/sites``), by place.
    @exclusivity(unchecked) private var siteNumbers: [Int?]
    @exclusivity(unchecked) private var keyedTexts: [String: String] = [:]
    @exclusivity(unchecked) private var recordVersion: Statement?
    /// What the batch's deletes took out of columns a foreign key refers to other than the key.
    let deletedParents: DeletedParentValues
    /// The keys of each table's rows waiting in the stash (``WaitingRows``), by table name, read
    /// once per batch: the inserts the batch stashes behind them are of keys already there, and
    /// orphan resolution stashes rows only after the batch.
    @exclusivity(unchecked) private var waitingKeys: [String: Set<[DatabaseValue]>] = [:]

    init(_ shapes: [TableShape], siteCount: Int, deletedParents: DeletedParentValues) {
        self.deletedParents = deletedParents
        self.shapes = shapes
        tables = [AppliedTable?](repeating: nil, count: shapes.count)
        siteNumbers = [Int?](repeating: nil, count: siteCount)
    }

    /// The keys of `table`'s rows waiting in the stash, `read` asked once per table.
    func waitingKeys(of table: String, _ read: () throws -> Set<[DatabaseValue]>) rethrows -> Set<[DatabaseValue]> {
        if let known = waitingKeys[table] { return known }
        let keys = try read()
        waitingKeys[table] = keys
        return keys
    }

    /// The table at `place` in the batch's tables.
    func table(_ place: Int) -> AppliedTable {
        if let table = tables[place] { return table }
        let table = AppliedTable(shapes[place])
        tables[place] = table
        return table
    }

    /// The number of the site at `place` in the batch's sites, `look` asked once.
    func siteNumber(at place: Int, _ look: () throws -> Int) rethrows -> Int {
        if let known = siteNumbers[place] { return known }
        let number = try look()
        siteNumbers[place] = number
        return number
    }

    /// The statement that records a version in the log (``ChangeLog/recordVersionSQL``), held for the batch.
    func recordVersionStatement(_ db: Database) throws -> Statement {
        if let recordVersion { return recordVersion }
        let statement = try db.cachedStatement(ChangeLog.recordVersionSQL)
        recordVersion = statement
        return statement
    }

    /// `VERB main."table" WHERE key = ? AND …` (see ``ChangeLog/rowSQL(_:_:_:_:set:)``), its text made once.
    func keyedSQL(_ verb: String, _ table: String, _ keys: [String]) -> String {
        let name = verb + " " + table
        if let known = keyedTexts[name] { return known }
        let text = ChangeLog.rowSQL(verb, table, keys, keys.map { _ in .null }, set: [:]).text
        keyedTexts[name] = text
        return text
    }

    /// After a savepoint's rollback: a number made inside it is gone from the metadatabase.
    func forgetNumbers() {
        for case let table? in tables { table.forgetNumber() }
        siteNumbers = siteNumbers.map { _ in nil }
    }
}

/// One synced table as a batch applies changes to it: its ``TableShape``, its number in the
/// metadatabase, and its statements, prepared once for the batch (an insert or update is prepared
/// per set of columns it writes).
private final class AppliedTable {
    // Its properties go without dynamic exclusivity checks, as PageLog's do, for the same reason.
    enum Write { case insert, update }

    let shape: TableShape
    var definition: TableDefinition { shape.definition }
    var keyColumns: [String] { shape.keyColumns }
    var isKey: [Bool] { shape.isKey }
    @exclusivity(unchecked) private var number: Int?
    @exclusivity(unchecked) private var rowState: Statement?
    @exclusivity(unchecked) private var versions: Statement?
    @exclusivity(unchecked) private var writes: [Write: [[Int]: Statement]] = [:]
    @exclusivity(unchecked) private var lastWrite: (kind: Write, written: [Int], statement: Statement)?
    /// Inserts of ``PageLog/rowsPerInsert`` rows, by the columns they write.
    @exclusivity(unchecked) private var multiRowInserts: [[Int]: Statement] = [:]
    /// Their arguments, bound in place from one buffer reused from one insert to the next.
    @exclusivity(unchecked) private var arguments = BulkArguments()
    @exclusivity(unchecked) private var appTriggers: Bool?

    init(_ shape: TableShape) {
        self.shape = shape
    }

    func tableID(_ look: () throws -> Int) rethrows -> Int {
        if let number { return number }
        let id = try look()
        number = id
        return id
    }

    func forgetNumber() { number = nil }

    /// Whether the app has triggers of its own on this table (in `main` or TEMP; the store's
    /// `ostore_` ones aside), looked up once per batch.
    /// See <https://www.sqlite.org/schematab.html>.
    func hasAppTriggers(_ db: Database) throws -> Bool {
        if let appTriggers { return appTriggers }
        let found = try ChangeLog.hasAppTriggers(on: [definition.name.lowercased()], db)
        appTriggers = found
        return found
    }

    /// Whether a row is present and every log entry of it (column name, clock, site id): the
    /// key's values bound first (`?1`…), then the table's number and the logged key. The first
    /// row always comes (the joins are outer), with NULL entry columns when the log has none.
    func rowStateStatement(_ db: Database) throws -> Statement {
        if let rowState { return rowState }
        let (tableID, pk) = ("?\(keyColumns.count + 1)", "?\(keyColumns.count + 2)")
        let statement = try db.cachedStatement(
            """
            SELECT EXISTS (SELECT 1 FROM main.\(quoteIdentifier(definition.name)) WHERE \(ChangeLog.keyMatch(keyColumns))),
                c.columnName, c.clock, s.siteID
            FROM (SELECT 1)
            LEFT JOIN ostore_meta.ostore_changes AS c ON c.tableID = \(tableID) AND c.pk = \(pk)
            LEFT JOIN ostore_meta.ostore_sites AS s ON s.id = c.site
            """)
        rowState = statement
        return statement
    }

    /// The log entries of a row (column name, clock, site id), the table's number and the logged
    /// key bound as `?1` and `?2`: ``rowStateStatement(_:)`` without the row's presence.
    func versionsStatement(_ db: Database) throws -> Statement {
        if let versions { return versions }
        let statement = try db.cachedStatement(
            """
            SELECT c.columnName, c.clock, s.siteID FROM ostore_meta.ostore_changes AS c
            LEFT JOIN ostore_meta.ostore_sites AS s ON s.id = c.site
            WHERE c.tableID = ?1 AND c.pk = ?2
            """)
        versions = statement
        return statement
    }

    /// Writes the non-nil `values` (by column position): an insert of a row unless one with its
    /// key is present (`ON CONFLICT` on the key `DO NOTHING`: another constraint still fails), or
    /// an update of the row with `keyValues`. Returns whether a row was written. The statement
    /// for that set of columns is prepared once.
    /// See <https://www.sqlite.org/lang_upsert.html>.
    @discardableResult
    func write(_ kind: Write, _ values: [DatabaseValue?], keyValues: [DatabaseValue], _ db: Database) throws -> Bool {
        var written: [Int] = []
        written.reserveCapacity(values.count)
        for (position, value) in values.enumerated() where value != nil { written.append(position) }
        let statement: Statement
        // A page's changes mostly write the same columns, one after the other.
        if let last = lastWrite, last.kind == kind, last.written == written {
            statement = last.statement
        } else {
            statement = try self.statement(kind, written, db)
            lastWrite = (kind, written, statement)
        }
        for (index, position) in written.enumerated() { try statement.bind(values[position]!, toParameter: index + 1) }
        for (index, value) in keyValues.enumerated() {
            try statement.bind(value, toParameter: written.count + index + 1)
        }
        try statement.runToCompletion(arguments: nil)
        return db.changesCount > 0
    }

    /// Inserts `rows` (values by column position, all with values for the same columns) in their
    /// order, each unless a row with its key is present, as ``write(_:_:keyValues:_:)`` would one by
    /// one; ``PageLog/rowsPerInsert`` rows by one statement, which on a failure leaves the rows it
    /// wrote before it (`OR FAIL`, see ``PageLog/write(_:)``) for the page's rollback. Returns how
    /// many rows were written.
    func insert(_ rows: [[DatabaseValue?]], _ db: Database) throws -> Int {
        guard let first = rows.first else { return 0 }
        guard rows.count == PageLog.rowsPerInsert else {
            var inserted = 0
            for row in rows where try write(.insert, row, keyValues: [], db) { inserted += 1 }
            return inserted
        }
        var written: [Int] = []
        for (position, value) in first.enumerated() where value != nil { written.append(position) }
        let statement: Statement
        if let known = multiRowInserts[written] {
            statement = known
        } else {
            let names = written.map { quoteIdentifier(definition.columns[$0].name) }
            let row = "(" + Array(repeating: "?", count: names.count).joined(separator: ", ") + ")"
            statement = try db.cachedStatement(
                "INSERT OR FAIL INTO main.\(quoteIdentifier(definition.name)) (\(names.joined(separator: ", "))) VALUES "
                    + Array(repeating: row, count: rows.count).joined(separator: ", ") + " ON CONFLICT ("
                    + keyColumns.map(quoteIdentifier).joined(separator: ", ") + ") DO NOTHING")
            multiRowInserts[written] = statement
        }
        arguments.removeAll()
        for row in rows {
            for position in written { arguments.append(row[position]!) }
        }
        try statement.execute(arguments)
        return db.changesCount
    }

    private func statement(_ kind: Write, _ written: [Int], _ db: Database) throws -> Statement {
        if let known = writes[kind]?[written] { return known }
        let names = written.map { quoteIdentifier(definition.columns[$0].name) }
        let table = "main.\(quoteIdentifier(definition.name))"
        let sql: String
        switch kind {
        case .insert:
            sql =
                "INSERT INTO \(table) (\(names.joined(separator: ", "))) VALUES ("
                + Array(repeating: "?", count: names.count).joined(separator: ", ") + ") ON CONFLICT ("
                + keyColumns.map(quoteIdentifier).joined(separator: ", ") + ") DO NOTHING"
        case .update:
            let keys = keyColumns.enumerated().map { "\(quoteIdentifier($1)) = ?\(names.count + $0 + 1)" }
            sql =
                "UPDATE \(table) SET \(names.enumerated().map { "\($1) = ?\($0 + 1)" }.joined(separator: ", ")) "
                + "WHERE \(keys.joined(separator: " AND "))"
        }
        let statement = try db.cachedStatement(sql)
        writes[kind, default: [:]][written] = statement
        return statement
    }
}
