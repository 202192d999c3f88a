import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

extension ChangeLog {
    func applyOne(
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
        let row: (exists: Bool?, versions: RowVersions)
        if probesByInserting, let page, let slot {
            row = (nil, page.versions[slot])
        } else {
            // What the page holds back would be missing from what the log answers.
            try page?.write(db)
            row = try rowState(target, keyValues, tableID, loggedKey, existence: !probesByInserting, db)
        }
        // The row's life as the merge rule reads it.
        let versions = row.versions.mergeRow
        let statement = page == nil ? try lookups.recordVersionStatement(db) : nil
        let record = { (column: LoggedColumn) in
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
            try record(.creation)
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
            try record(.deletion)
            // The delete drops the row's column versions, as the server drops a deleted row's cells
            // (Protocol/README.md §8.2 rule 4): one newer than the delete (an update concurrent with
            // it, applied before it) would otherwise keep an older update out of the row inserted
            // again here and not on a site that applied the delete first. A local one still queued
            // goes with them: its row is gone, so the push would pass it over.
            if !row.versions.columns.isEmpty {
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
                    try record(.creation)
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
            try record(.creation)
            for (name, version) in row.versions.columns where MergeRule.isDatedByCreation(version, row: versions) {
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
            guard MergeRule.writesColumn(at: incoming, over: row.versions.columns[name], row: versions) else {
                continue
            }
            winners[position] = value
            anyWinner = true
        }
        for name in redated {
            let written = winners.indices.contains { winners[$0] != nil && target.definition.columns[$0].name == name }
            if !written { try record(.column(name)) }
        }
        guard anyWinner else {
            outcome.superseded += 1
            return
        }
        try target.write(.update, winners, keyValues: keyValues, db)
        for (position, value) in winners.enumerated() where value != nil {
            try record(.column(target.definition.columns[position].name))
        }
        outcome.applied += 1
    }
}
