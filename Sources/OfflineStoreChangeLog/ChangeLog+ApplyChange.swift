import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

/// One incoming change on its way into its table: what ``ChangeLog/applyOne(at:of:page:db:lookups:outcome:)``
/// reads once (the table, the key, the row's versions) and the steps of the merge rule's verdict
/// share.
struct ChangeApplication {
    let change: IncomingChange
    let target: AppliedTable
    let keyValues: [DatabaseValue]
    /// The change's values by column position, its key's at the key columns.
    let known: [DatabaseValue?]
    /// Its columns this schema does not have (stashed already).
    let unknown: [String: DatabaseValue]
    let tableID: Int
    let loggedKey: DatabaseValue
    let site: Int
    let incoming: ChangeVersion
    let page: PageLog?
    let slot: Int?
    /// Whether an insert learns if its row is present from the insert itself; its row's
    /// existence is then not read (``row`` says nil).
    let probesByInserting: Bool
    let row: (exists: Bool?, versions: RowVersions)
    /// The statement that records a version when there is no page to gather them.
    let statement: Statement?

    /// The row's life as the merge rule reads it.
    var versions: MergeRule.Row { row.versions.mergeRow }

    /// Records the change's version of `column`: in the page, or at once.
    func record(_ column: LoggedColumn) throws {
        if let page {
            page.record(
                PageLog.Entry(tableID: tableID, key: loggedKey, column: column, clock: change.clock, site: site),
                slot: slot, version: incoming)
        } else if let statement {
            try ChangeLog.recordVersion(statement, tableID, loggedKey, column, change.clock, site)
        }
    }

    /// A new row (no entries in the log, its key once in the page: the rule's `create` with
    /// nothing to weigh), which is inserted with the page's next new rows by one statement
    /// (``PageLog/insert(_:into:_:)``).
    var isNewRowOfItsPage: Bool {
        guard let page, probesByInserting, let slot else { return false }
        return !page.isRepeated(slot) && unknown.isEmpty && row.versions.isEmpty
    }
}

extension ChangeLog {
    /// Applies change `index` of `batch` by the merge rule (Protocol/README.md §8.2): stashes
    /// what this schema does not know, then writes, deletes, stashes or passes over the row as
    /// ``MergeRule`` decides, recording each version it writes. Throws a change's refusal, which
    /// the batch keeps aside.
    func applyOne(
        at index: Int, of batch: PreparedChanges, page: PageLog?, db: Database, lookups: ApplyLookups,
        outcome: inout ApplyOutcome
    ) throws {
        guard
            let applying = try beginApplying(
                at: index, of: batch, page: page, db: db, lookups: lookups, outcome: &outcome)
        else { return }
        if let page, applying.isNewRowOfItsPage {
            try page.insert(applying.known, into: applying.target, db)
            try applying.record(.creation)
            outcome.applied += 1
            return
        }
        // Any change but a new row of the page writes the page's new rows first, so the table's
        // writes keep their order.
        try page?.writeRows(db)
        // An insert that probes by inserting does not know yet whether its row is present: it is
        // weighed as absent, and again as present if the insert finds the row.
        var verdict = MergeRule.verdict(
            of: applying.change.operation, at: applying.incoming, row: applying.versions,
            isPresent: applying.row.exists == true)
        switch verdict {
        case .superseded:
            outcome.superseded += 1
            return
        case .delete:
            try applyDelete(applying, lookups, db)
            outcome.applied += 1
            return
        case .waitForRow:
            try stash(applying.change, reason: "row not present yet", db)
            outcome.stashed += 1
            return
        case .create:
            guard let merge = try create(applying, lookups, db, outcome: &outcome) else { return }
            verdict = merge
        case .merge:
            break
        }
        try mergeColumns(applying, verdict, db, outcome: &outcome)
    }

    /// What applying change `index` needs, once its refusals are thrown, its clock received and
    /// what this schema does not know stashed; nil when the whole change was stashed.
    private func beginApplying(
        at index: Int, of batch: PreparedChanges, page: PageLog?, db: Database, lookups: ApplyLookups,
        outcome: inout ApplyOutcome
    ) throws -> ChangeApplication? {
        let change = batch.changes[index]
        let plan = batch.plans[index]
        if let refused = plan.refusedBeforeClock { throw refused }
        try clock.receive(change.clock)
        guard let place = plan.table else {
            try stash(change, reason: "table \(change.table) is not in schema \(schema.version?.description ?? "")", db)
            outcome.stashed += 1
            return nil
        }
        if let refused = plan.refused { throw refused }
        let target = lookups.table(place)
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
        let site = try lookups.siteNumber(at: plan.site) { try siteNumber(change.siteID, db) }
        // An insert learns whether its row is present from the insert itself (create(_:_:_:outcome:)),
        // so its state is the log's versions alone: one index lookup fewer per pulled row. Not when
        // the app has triggers on the table: its BEFORE INSERT triggers would run for an insert
        // that then does nothing.
        let probesByInserting = try change.operation == .insert && !target.hasAppTriggers(db)
        let slot = page?.slots[index]
        let row: (exists: Bool?, versions: RowVersions)
        if probesByInserting, let page, let slot {
            row = (nil, page.versions[slot])
        } else {
            // What the page holds back would be missing from what the log answers.
            try page?.write(db)
            row = try rowState(target, plan.keyValues, tableID, plan.loggedKey, existence: !probesByInserting, db)
        }
        return ChangeApplication(
            change: change, target: target, keyValues: plan.keyValues, known: plan.known, unknown: unknown,
            tableID: tableID, loggedKey: plan.loggedKey, site: site,
            incoming: ChangeVersion(clock: change.clock.packed, site: change.siteID), page: page, slot: slot,
            probesByInserting: probesByInserting, row: row,
            statement: page == nil ? try lookups.recordVersionStatement(db) : nil)
    }

    /// The rule's `delete`: the row goes, if present, and so do its column versions.
    private func applyDelete(_ applying: ChangeApplication, _ lookups: ApplyLookups, _ db: Database) throws {
        let target = applying.target
        if applying.row.exists == true {
            try lookups.deletedParents.noteDeleting(
                target.definition.name, keyColumns: target.keyColumns, keyValues: applying.keyValues, db)
            try db.execute(
                SQL(
                    sql: lookups.keyedSQL("DELETE FROM", target.definition.name, target.keyColumns),
                    arguments: applying.keyValues))
        }
        try applying.record(.deletion)
        // The delete drops the row's column versions, as the server drops a deleted row's cells
        // (Protocol/README.md §8.2 rule 4): one newer than the delete (an update concurrent with
        // it, applied before it) would otherwise keep an older update out of the row inserted
        // again here and not on a site that applied the delete first. A local one still queued
        // goes with them: its row is gone, so the push would pass it over.
        guard !applying.row.versions.columns.isEmpty else { return }
        // The delete's own entry first, so that it takes the newest place: dropping the newest
        // entries before it was written would lower the newest place, and a local change made
        // next would take a place at or below the pushed watermark and never be pushed.
        try applying.page?.write(db)
        try db.execute(
            SQL(sql: Self.forgetColumnVersionsSQL, arguments: [.integer(Int64(applying.tableID)), applying.loggedKey]))
        if let slot = applying.slot { applying.page?.forgetColumnVersions(slot: slot) }
    }

    /// The rule's `create`: the row is inserted whole, unless it turns out present, in which case
    /// the verdict for merging into it is returned. Nil when the change is done with (inserted, or
    /// stashed behind its row waiting for its parent).
    private func create(
        _ applying: ChangeApplication, _ lookups: ApplyLookups, _ db: Database, outcome: inout ApplyOutcome
    ) throws -> MergeRule.Verdict? {
        let versions = applying.versions
        // A row with live versions and not in its table waits in the stash for its parent (or was
        // removed without being recorded): an insert of its key (the same one delivered again,
        // Protocol §10.3) waits behind it, to merge with it by versions once it is back; written
        // whole now, it would replace this store's newer edits. Its columns unknown to this schema
        // are stashed already, once. Not while the stash itself is applied: it was emptied first.
        // The stash's keys are read once per batch, before the insert probes for the row.
        if versions.created != nil, !versions.isDeleted,
            try waitsInStash(applying.target, applying.keyValues, lookups, db)
        {
            var behind = applying.change
            behind.columns = applying.change.columns.filter { applying.unknown[$0.key] == nil }
            try stash(behind, reason: "its row waits in the stash for its parent", db)
            outcome.stashed += 1
            return nil
        }
        // The insert itself tells whether the row was present; a present row is left as it is,
        // and merged.
        if try applying.target.write(.insert, applying.known, keyValues: [], db) {
            // A row back from waiting for its parent keeps its entry as it was (a local one still
            // to be pushed stays so).
            if versions.created != applying.incoming {
                try applying.record(.creation)
            }
            outcome.applied += 1
            return nil
        }
        return MergeRule.verdict(of: .insert, at: applying.incoming, row: versions, isPresent: true)
    }

    /// The rule's `merge`: each column whose version the change's beats is written, and a newer
    /// creation dates again the columns the old one dated.
    private func mergeColumns(
        _ applying: ChangeApplication, _ verdict: MergeRule.Verdict, _ db: Database, outcome: inout ApplyOutcome
    ) throws {
        let target = applying.target
        let columns = applying.row.versions.columns
        // Read once: the rule is asked for every column.
        let versions = applying.versions
        var redated: [String] = []
        if verdict == .merge(newCreation: true) {
            try applying.record(.creation)
            for (name, version) in columns where MergeRule.isDatedByCreation(version, row: versions) {
                redated.append(name)
            }
        }
        var winners = [DatabaseValue?](repeating: nil, count: applying.known.count)
        var anyWinner = false
        for (position, value) in applying.known.enumerated() {
            guard let value, !target.isKey[position] else { continue }
            // A version older than the row's delete dates the row's life before it: a delete
            // applied here dropped them, but a row deleted by this device keeps them (its delete
            // is recorded, not merged). A version at clock 0 is one a purged database left for
            // the edits it lost (StoreIdentity); the rule counts neither.
            let name = target.definition.columns[position].name
            guard MergeRule.writesColumn(at: applying.incoming, over: columns[name], row: versions) else {
                continue
            }
            winners[position] = value
            anyWinner = true
        }
        for name in redated {
            let written = winners.indices.contains { winners[$0] != nil && target.definition.columns[$0].name == name }
            if !written { try applying.record(.column(name)) }
        }
        guard anyWinner else {
            outcome.superseded += 1
            return
        }
        try target.write(.update, winners, keyValues: applying.keyValues, db)
        for (position, value) in winners.enumerated() where value != nil {
            try applying.record(.column(target.definition.columns[position].name))
        }
        outcome.applied += 1
    }
}
