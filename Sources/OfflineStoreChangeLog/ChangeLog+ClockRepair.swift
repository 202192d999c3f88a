import Foundation
import OfflineStoreSQLite
import SyncProtocol

extension ChangeLog {
    /// Re-stamps the local changes this device wrote while its wall clock ran ahead, so they and
    /// every later change can be pushed again. Returns how many log entries it re-stamped.
    ///
    /// A server refuses a change whose clock is more than its drift limit ahead of its own clock
    /// (`400 clock_out_of_range`), and this device's clock never goes back (a hybrid logical clock
    /// orders each write after every clock it has seen). So one stretch of a wall clock set wrongly
    /// into the future, even corrected, would leave every later write stamped past it, refused
    /// until real time reached it: months of edits that never left the device. Clocks received
    /// from other sites are bounded on the way in (``HybridLogicalClock/receive(_:)``), so a clock
    /// beyond ``HybridLogicalClock/driftBound`` in this store can only come from this machine.
    ///
    /// Each local entry stamped beyond the bound (whether queued, or pushed and refused) gets a new
    /// clock now, in its queue order, and a new place at the end of the queue, so it is pushed
    /// again: values are read from the row at push time, so what goes out is the row as it is,
    /// ordered as made now. The clock goes back to the newest reading within the bound, the refused
    /// records of those changes (`clock_out_of_range` in `ostore_rejected`, which the sync client's `refusedOutgoingChanges(_:)` reads) are dropped, as the
    /// changes are queued again, and a warning goes to the store's `LogHandler`. Nothing happens
    /// while the wall clock is still wrong (the bound moves with it). ``open(_:migrator:)`` calls it
    /// when the store's newest clock is beyond the bound, and the sync engine before it pushes one.
    ///
    /// ```swift
    /// let restamped = try log.restampClocksAhead(db)  // 0 unless the clock ran ahead
    /// ```
    ///
    /// See <https://www.sqlite.org/lang_update.html#update_from> for the one-statement re-stamp.
    @discardableResult
    public func restampClocksAhead(_ db: Database) throws -> Int {
        let meta = Metadatabase.schemaName
        return try db.transaction(.immediate) { db in
            try ChangeJournal.fold(db)
            let bound = clock.driftBound.packed
            let stampedAhead = try db.fetchAll(
                Int64.self,
                "SELECT seq FROM \(identifier: meta).ostore_changes WHERE site = 0 AND clock > \(bound) ORDER BY seq")
            let lastClock = try db.fetchValue(Int64.self, "SELECT lastClock FROM \(identifier: meta).ostore_store") ?? 0
            guard !stampedAhead.isEmpty || max(clock.lastIssued.packed, lastClock) > bound else { return 0 }
            let newestWithin =
                try db.fetchValue(
                    Int64.self,
                    """
                    SELECT max(coalesce((SELECT max(clock) FROM \(identifier: meta).ostore_changes WHERE clock <= \(bound)), 0),
                        coalesce((SELECT lastClock FROM \(identifier: meta).ostore_store WHERE lastClock <= \(bound)), 0))
                    """) ?? 0
            clock.reset(to: ChangeClock(packed: newestWithin) ?? .zero)
            if !stampedAhead.isEmpty {
                // Readings one apart from one taken now, as the clock issues them within a
                // millisecond: the counter is the packed value's low bits, so adding one borrows
                // the next millisecond when it is full, as `now()` does.
                let start = clock.now().packed
                let newestPlace =
                    try db.fetchValue(Int64.self, "SELECT max(seq) FROM \(identifier: meta).ostore_changes") ?? 0
                try db.execute(
                    """
                    UPDATE \(identifier: meta).ostore_changes SET clock = \(start) + moved.n, seq = \(newestPlace + 1) + moved.n
                    FROM (SELECT seq AS old, row_number() OVER (ORDER BY seq) - 1 AS n
                        FROM \(identifier: meta).ostore_changes WHERE site = 0 AND clock > \(bound)) AS moved
                    WHERE ostore_changes.seq = moved.old
                    """)
                clock.catchUp(to: ChangeClock(packed: start + Int64(stampedAhead.count) - 1) ?? .zero)
                // Their refusals: the changes are queued again.
                let restamped = "[" + stampedAhead.map(String.init).joined(separator: ",") + "]"
                try db.execute(
                    """
                    DELETE FROM \(identifier: meta).ostore_rejected WHERE code = 'clock_out_of_range' AND json_valid(change)
                        AND json_extract(change, '$.seq') IN (SELECT value FROM json_each(\(restamped)))
                    """)
            }
            try db.execute("UPDATE \(identifier: meta).ostore_store SET lastClock = \(clock.lastIssued.packed)")
            db.configuration.logHandler.log(
                .warning,
                "this machine's clock ran ahead: the local changes stamped then are stamped again and queued to be "
                    + "pushed, as the server refuses clocks that far ahead of its own",
                metadata: [
                    "path": db.path, "restamped": "\(stampedAhead.count)",
                    "aheadOf": "\(ChangeClock(packed: bound) ?? .zero)", "newestNow": "\(clock.lastIssued)",
                ])
            return stampedAhead.count
        }
    }

}
