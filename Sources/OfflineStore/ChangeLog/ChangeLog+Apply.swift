import Foundation

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
    ///   off while a batch applies, and `foreign_key_check` proves the result). A child left
    ///   pointing at a parent that was deleted is deleted too, as `ON DELETE CASCADE` would have,
    ///   by a new local delete that every site then applies; a child whose parent never arrived
    ///   waits in the stash (with its own children, keeping its versions) until it does.
    /// - A malformed change (unknown key columns, a value of the wrong type for a STRICT column,
    ///   a site id that is not 16 bytes, a clock beyond the drift bound) is rejected with the
    ///   reason; the rest of the batch still applies. Rejected changes are kept, in the same
    ///   transaction, in the metadatabase (``refusedChanges(_:)``) and logged as warnings through
    ///   the connection's ``LogHandler``. Names from a change reach SQL only after
    ///   they are found in the declared schema, and values are always bound.
    ///
    /// See <https://www.sqlite.org/foreignkeys.html#fk_deferred>.
    public func apply(_ changes: [RemoteChange], to db: Database) throws -> ApplyOutcome {
        var outcome = try applyBatch(changes, to: db)
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

    private func applyBatch(_ changes: [RemoteChange], to db: Database) throws -> ApplyOutcome {
        try db.withoutRecordingChanges { db in
            try withoutForeignKeyActions(db) { enforced in
                try Self.wholeThenChangeByChange { savepointEach in
                    try db.transaction(.immediate) { db in
                        try applyInTransaction(changes, db, foreignKeysEnforced: enforced, savepointEach: savepointEach)
                    }
                }
            }
        }
    }

    /// Most batches apply whole, each change straight in the transaction. A change that fails may
    /// have written part of itself, so then the transaction is rolled back and the batch applied
    /// again with a savepoint around each change, which keeps the others and rejects that one.
    /// (A savepoint per change cost about a tenth of applying it.)
    private static func wholeThenChangeByChange<Result>(_ run: (_ savepointEach: Bool) throws -> Result) throws
        -> Result
    {
        do {
            return try run(false)
        } catch is FailedChange {
            return try run(true)
        }
    }

    /// Thrown out of the transaction of a batch applied without savepoints, to roll it back.
    private struct FailedChange: Error {}

    /// The batch's work inside the caller's transaction, with the connection's foreign keys as
    /// ``withoutForeignKeyActions(_:_:)`` left them.
    private func applyInTransaction(
        _ changes: [RemoteChange], _ db: Database, foreignKeysEnforced enforced: Bool, savepointEach: Bool
    ) throws -> ApplyOutcome {
        // Merging reads the keyed log's versions, and writes it directly, which is safe only with
        // the journal empty (ChangeJournal): fold first, in this transaction.
        try ChangeJournal.fold(db)
        try db.execute("PRAGMA defer_foreign_keys = ON")
        var outcome = ApplyOutcome()
        let lookups = ApplyLookups()
        for (index, change) in changes.enumerated() {
            guard savepointEach else {
                do {
                    try applyOne(change, db: db, lookups: lookups, outcome: &outcome)
                } catch {
                    throw FailedChange()
                }
                continue
            }
            do {
                try db.savepoint { db in try applyOne(change, db: db, lookups: lookups, outcome: &outcome) }
            } catch {
                // The savepoint's rollback may have taken back a table or site number it made:
                // look them up again.
                lookups.forgetNumbers()
                outcome.rejected.append(RejectedChange(index: index, change: change, reason: "\(error)"))
            }
        }
        try resolveOrphans(db, outcome: &outcome)
        if !enforced, let violation = try db.fetchOne("PRAGMA foreign_key_check") {
            throw ChangeLogError(
                .invalidChange, table: try violation.decode(String.self, at: 0),
                "a row is left without its parent after applying a batch; nothing of the batch was applied")
        }
        try recordRefused(outcome.rejected, db)
        return outcome
    }

    /// Foreign keys off while a batch applies (outside a transaction, where SQLite honours the
    /// pragma): their actions (`ON DELETE CASCADE`) would otherwise delete or change rows without
    /// a trace in the log, e.g. the tags of a reminder taken out while it waits for its list, which
    /// then never come back. ``resolveOrphans(_:outcome:)`` does their work by the sync rules, and
    /// `foreign_key_check` proves none is left. Inside a caller's transaction the pragma cannot
    /// change; keys stay as they are. See <https://www.sqlite.org/foreignkeys.html#fk_enable>.
    private func withoutForeignKeyActions<Result>(_ db: Database, _ body: (_ enforced: Bool) throws -> Result)
        throws -> Result
    {
        let wereOn = try db.fetchValue(Bool.self, "PRAGMA foreign_keys") ?? false
        guard wereOn, !db.isInsideTransaction else { return try body(wereOn) }
        try db.execute("PRAGMA foreign_keys = OFF")
        defer { try? db.execute("PRAGMA foreign_keys = ON") }
        return try body(false)
    }

    private func applyOne(_ change: RemoteChange, db: Database, lookups: ApplyLookups, outcome: inout ApplyOutcome)
        throws
    {
        guard change.siteID.count == 16 else {
            throw ChangeLogError(
                .invalidChange, table: change.table, "the site id is \(change.siteID.count) bytes, not 16")
        }
        let isOdd = { (name: String) in !Self.isPlainIdentifier(name) }
        if let odd = isOdd(change.table)
            ? change.table : change.primaryKey.keys.first(where: isOdd) ?? change.columns.keys.first(where: isOdd)
        {
            throw ChangeLogError(
                .invalidChange, table: change.table,
                "\(odd.debugDescription) is not a plain SQL identifier (letters, digits, underscores)")
        }
        try clock.receive(change.clock)
        guard let table = lookups.table(change.table, in: schema), table.sync == .synced else {
            try stash(change, reason: "table \(change.table) is not in schema \(schema.version?.description ?? "")", db)
            outcome.stashed += 1
            return
        }
        let keyColumns = lookups.keyColumns(of: table)
        let keyValues = try Self.keyValues(of: change, keyColumns: keyColumns, table: table.name)
        var known: [String: DatabaseValue] = [:]
        var unknown: [String: DatabaseValue] = [:]
        let columnsByName = lookups.columns(of: table)
        for (name, value) in change.columns {
            if let column = columnsByName[name] ?? columnsByName[name.lowercased()] {
                try checkType(value, for: column, in: table)
                known[column.name] = value
            } else {
                unknown[name] = value
            }
        }
        if !unknown.isEmpty {
            var later = change
            later.operation = .update
            later.columns = unknown
            try stash(
                later,
                reason: "columns \(unknown.keys.sorted()) are not in schema \(schema.version?.description ?? "")", db)
            outcome.stashed += 1
        }
        let tableID = try lookups.tableID(table.name) { try trackedTableID(table.name, db) }
        let loggedKey = Self.loggedKey(keyValues)
        let site = try lookups.siteNumber(change.siteID) { try siteNumber(change.siteID, db) }
        let incoming = Version(clock: change.clock, siteID: change.siteID)
        let (rowExists, created, deleted) = try rowState(
            try lookups.rowStateStatement(table.name, keyColumns, db), keyValues, tableID, loggedKey)
        // A row is deleted while its newest tombstone is newer than its newest creation.
        let isDeleted = deleted.map { deleted in created.map { deleted > $0 } ?? true } ?? false
        switch change.operation {
        case .delete:
            // Delete wins over updates of the row; only a newer insert brings it back.
            guard incoming > (created ?? .oldest), incoming > (deleted ?? .oldest) else {
                outcome.superseded += 1
                return
            }
            if rowExists {
                try db.execute(SQL(sql: lookups.keyedSQL("DELETE FROM", table.name, keyColumns), arguments: keyValues))
            }
            try recordVersion(tableID, loggedKey, "-", change.clock, site, db)
            outcome.applied += 1
        case .insert, .update:
            if change.operation == .update, isDeleted {
                outcome.superseded += 1
                return
            }
            if change.operation == .insert, let deleted, deleted > incoming {
                outcome.superseded += 1
                return
            }
            if !rowExists {
                guard change.operation == .insert else {
                    try stash(change, reason: "row not present yet", db)
                    outcome.stashed += 1
                    return
                }
                var values = known
                for (key, value) in zip(keyColumns, keyValues) { values[key] = value }
                let names = values.keys.sorted()
                try lookups.insertStatement(table.name, names, db).run(binding: names.map { values[$0]! })
                // A row back from waiting for its parent keeps its entry as it was (a local one
                // still to be pushed stays so).
                if created != incoming { try recordVersion(tableID, loggedKey, "", change.clock, site, db) }
                outcome.applied += 1
                return
            }
            if change.operation == .insert, incoming > (created ?? .oldest) {
                try recordVersion(tableID, loggedKey, "", change.clock, site, db)
            }
            var winners: [String: DatabaseValue] = [:]
            for (name, value) in known where !keyColumns.contains(name) {
                if let local = try version(tableID, loggedKey, name, db) {
                    if incoming > local { winners[name] = value }
                } else if incoming >= (created ?? .oldest) {
                    // No change of this column yet: the row's creation dates it. The same version
                    // is the same change, e.g. a column of an insert that waited in the stash for
                    // the migration that added the column.
                    winners[name] = value
                }
            }
            guard !winners.isEmpty else {
                outcome.superseded += 1
                return
            }
            try db.execute(Self.rowSQL("UPDATE", table.name, keyColumns, keyValues, set: winners))
            for name in winners.keys { try recordVersion(tableID, loggedKey, name, change.clock, site, db) }
            outcome.applied += 1
        }
    }

    /// Names from the wire are refused unless they are plain identifiers, even before they are
    /// looked up in the schema, so nothing odd is ever stashed or echoed in a message.
    static func isPlainIdentifier(_ name: String) -> Bool {
        // ASCII only, so bytes are scalars; read as UTF-8 bytes, not through Unicode properties.
        func isLetter(_ byte: UInt8) -> Bool { (65...90).contains(byte) || (97...122).contains(byte) || byte == 95 }
        let bytes = name.utf8
        guard let first = bytes.first, bytes.count <= 128, isLetter(first) else { return false }
        return bytes.allSatisfy { isLetter($0) || (48...57).contains($0) }
    }

    /// A clock and the site that issued it: the order last-writer-wins uses.
    struct Version: Comparable {
        static let oldest = Version(clock: .zero, siteID: Data())
        var clock: HybridTimestamp
        var siteID: Data
        static func < (lhs: Version, rhs: Version) -> Bool {
            lhs.clock != rhs.clock ? lhs.clock < rhs.clock : lhs.siteID.lexicographicallyPrecedes(rhs.siteID)
        }
    }

    static func loggedKey(_ values: [DatabaseValue]) -> DatabaseValue {
        values.count == 1 ? values[0] : .text(values.map(\.sqlLiteral).joined(separator: ","))
    }

    private func version(_ tableID: Int, _ key: DatabaseValue, _ column: String, _ db: Database) throws -> Version? {
        try db.cachedStatement(Self.versionSQL).withFirstRow(binding: [.integer(Int64(tableID)), key, .text(column)]) {
            row in
            guard let row else { return nil }
            return Version(
                clock: HybridTimestamp(packed: try row.decode(at: 0)) ?? .zero,
                siteID: try row.decode(Data?.self, at: 1) ?? identity.siteID)
        }
    }

    private static let versionSQL = """
        SELECT c.clock, s.siteID FROM ostore_meta.ostore_changes AS c
        LEFT JOIN ostore_meta.ostore_sites AS s ON s.id = c.site
        WHERE c.tableID = ? AND c.pk = ? AND c.columnName = ?
        """

    /// The key's values in the order of `keyColumns`. The change names the same key columns as
    /// the table, compared as SQLite compares names (case-insensitively); usually exactly.
    private static func keyValues(of change: RemoteChange, keyColumns: [String], table: String) throws
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
        guard Set(change.primaryKey.keys.map { $0.lowercased() }) == Set(keyColumns.map { $0.lowercased() }) else {
            throw ChangeLogError(
                .invalidChange, table: table,
                "the key names \(change.primaryKey.keys.sorted()) but \(table) is keyed by \(keyColumns)")
        }
        return keyColumns.map { key in change.primaryKey.first { $0.key.lowercased() == key.lowercased() }!.value }
    }

    /// Whether the row is present, and its creation and deletion versions (the `''` and `'-'`
    /// entries): one step of the table's statement from ``ApplyLookups/rowStateStatement(_:_:_:)``
    /// instead of two statements.
    private func rowState(_ statement: Statement, _ keyValues: [DatabaseValue], _ tableID: Int, _ key: DatabaseValue)
        throws -> (exists: Bool, created: Version?, deleted: Version?)
    {
        try statement.withFirstRow(binding: keyValues + [.integer(Int64(tableID)), key]) { row in
            guard let row else { return (false, nil, nil) }
            func version(at index: Int) throws -> Version? {
                guard let clock = try row.decode(Int64?.self, at: index) else { return nil }
                return Version(
                    clock: HybridTimestamp(packed: clock) ?? .zero,
                    siteID: try row.decode(Data?.self, at: index + 1) ?? identity.siteID)
            }
            return (try row.decode(Bool.self, at: 0), try version(at: 1), try version(at: 3))
        }
    }

    private func recordVersion(
        _ tableID: Int, _ key: DatabaseValue, _ column: String, _ clock: HybridTimestamp, _ site: Int, _ db: Database
    ) throws {
        try db.cachedStatement(Self.recordVersionSQL).run(
            binding: [.integer(Int64(tableID)), key, .text(column), .integer(clock.packed), .integer(Int64(site))])
    }

    /// A fixed text with every value bound: written for each applied change, it is neither built
    /// nor parsed again.
    private static let recordVersionSQL = """
        INSERT INTO ostore_meta.ostore_changes (tableID, pk, columnName, clock, site) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (tableID, pk, columnName) DO UPDATE
            SET clock = excluded.clock, site = excluded.site, seq = excluded.seq
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

    private func checkType(_ value: DatabaseValue, for column: Column, in table: TableDefinition) throws {
        guard table.options.contains(.strict) else { return }
        let fits: Bool
        switch (column.type, value) {
        case (_, .null): fits = true
        case (.any, _): fits = true
        case (.integer, .integer), (.text, .text), (.blob, .blob), (.real, .real), (.real, .integer): fits = true
        default: fits = false
        }
        guard fits else {
            throw ChangeLogError(
                .invalidChange, table: table.name,
                "column \(column.name) is \(column.type) in a STRICT table; the change carries \(value.storageClass)")
        }
    }

    func stash(_ change: RemoteChange, reason: String, _ db: Database) throws {
        let json = String(decoding: try JSONEncoder().encode(change), as: UTF8.self)
        try db.execute(
            "INSERT INTO ostore_meta.ostore_stash (tableName, reason, change) VALUES (\(change.table), \(reason), \(json))"
        )
    }

    /// Children left without their parent: deleted when the parent was deleted (the tombstone is
    /// known), stashed until it arrives otherwise. Taking a row out orphans its own children, so
    /// this goes round until a pass finds none.
    private func resolveOrphans(_ db: Database, outcome: inout ApplyOutcome) throws {
        while try resolveOrphansOnce(db, outcome: &outcome) {}
    }

    /// One pass over every foreign key; whether it found an orphan.
    private func resolveOrphansOnce(_ db: Database, outcome: inout ApplyOutcome) throws -> Bool {
        var found = false
        for table in schema.tables where table.sync == .synced {
            let foreignKeys = table.foreignKeys + table.columns.compactMap(\.reference)
            let keyColumns = ChangeTracker.keyColumns(of: table)
            for foreignKey in foreignKeys {
                let child = quoteIdentifier(table.name)
                let parent = quoteIdentifier(foreignKey.parentTable)
                let notNull = foreignKey.columns.map { "c.\(quoteIdentifier($0)) IS NOT NULL" }.joined(
                    separator: " AND ")
                let match = zip(foreignKey.columns, foreignKey.parentColumns).map {
                    "p.\(quoteIdentifier($1)) = c.\(quoteIdentifier($0))"
                }.joined(separator: " AND ")
                let orphans = try db.fetchAll(
                    SQL(
                        sql: "SELECT \(keyColumns.map { "c.\(quoteIdentifier($0))" }.joined(separator: ", ")), "
                            + "\(foreignKey.columns.map { "c.\(quoteIdentifier($0))" }.joined(separator: ", ")) "
                            + "FROM main.\(child) AS c WHERE \(notNull) AND NOT EXISTS "
                            + "(SELECT 1 FROM main.\(parent) AS p WHERE \(match))"))
                guard !orphans.isEmpty, let parentTable = schema.table(named: foreignKey.parentTable) else { continue }
                found = true
                let parentID = try trackedTableID(parentTable.name, db)
                let childID = try trackedTableID(table.name, db)
                for orphan in orphans {
                    let childKey = try (0..<keyColumns.count).map { try orphan.decode(DatabaseValue.self, at: $0) }
                    let parentKey = try (keyColumns.count..<orphan.count).map {
                        try orphan.decode(DatabaseValue.self, at: $0)
                    }
                    let row = try db.fetchOne(Self.rowSQL("SELECT * FROM", table.name, keyColumns, childKey, set: [:]))
                    try db.execute(Self.rowSQL("DELETE FROM", table.name, keyColumns, childKey, set: [:]))
                    if try version(parentID, Self.loggedKey(parentKey), "-", db) != nil {
                        // A new local delete, newer than anything this store has seen: dated by
                        // the parent's deletion, it could be older than the child's creation and
                        // lose on other sites, which keep the child (moved meanwhile to a live
                        // parent) while this one has dropped it for good.
                        try recordVersion(childID, Self.loggedKey(childKey), "-", clock.now(), 0, db)
                        outcome.applied += 1
                    } else if let row {
                        let values = try row.valuesByColumnName()
                        let created = try version(childID, Self.loggedKey(childKey), "", db) ?? .oldest
                        try stash(
                            RemoteChange(
                                table: table.name,
                                primaryKey: Dictionary(uniqueKeysWithValues: zip(keyColumns, childKey)),
                                operation: .insert, columns: values, clock: created.clock,
                                siteID: created.siteID.isEmpty ? identity.siteID : created.siteID),
                            reason: "parent row in \(parentTable.name) not present yet", db)
                        // The row's versions stay: it comes back as it was, and a change older
                        // than one of its columns, arriving meanwhile, stays superseded.
                        outcome.stashed += 1
                    }
                }
            }
        }
        return found
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
            try withoutForeignKeyActions(db) { enforced in
                try Self.wholeThenChangeByChange { savepointEach in
                    try db.transaction(.immediate) { db in
                        let rows = try db.fetchAll("SELECT id, change FROM ostore_meta.ostore_stash ORDER BY id")
                        guard !rows.isEmpty else { return ApplyOutcome() }
                        var changes: [RemoteChange] = []
                        for row in rows {
                            let json: String = try row.decode(at: 1)
                            changes.append(try JSONDecoder().decode(RemoteChange.self, from: Data(json.utf8)))
                        }
                        try db.execute("DELETE FROM ostore_meta.ostore_stash")
                        var outcome = try applyInTransaction(
                            changes, db, foreignKeysEnforced: enforced, savepointEach: savepointEach)
                        outcome.stashed = try stashCount(db)
                        return outcome
                    }
                }
            }
        }
    }
}

/// What applying one batch looks up again and again, kept for the batch: each table's definition,
/// key columns and columns by lowercased name (from the schema), and the numbers the metadatabase
/// gives tables and sites.
private final class ApplyLookups {
    private var tables: [String: TableDefinition?] = [:]
    private var keyColumns: [String: [String]] = [:]
    private var columns: [String: [String: Column]] = [:]
    private var tableIDs: [String: Int] = [:]
    private var siteNumbers: [Data: Int] = [:]
    private var keyedTexts: [String: String] = [:]
    private var inserts: [String: [[String]: Statement]] = [:]
    private var rowStates: [String: Statement] = [:]

    func table(_ name: String, in schema: SchemaSnapshot) -> TableDefinition? {
        if let known = tables[name] { return known }
        let table = schema.table(named: name)
        tables[name] = table
        return table
    }

    func keyColumns(of table: TableDefinition) -> [String] {
        if let known = keyColumns[table.name] { return known }
        let columns = ChangeTracker.keyColumns(of: table)
        keyColumns[table.name] = columns
        return columns
    }

    /// The table's columns by lowercased name and by name as declared (look a name up as it is,
    /// then lowercased). The first column of a name wins, as a search from the start would find it.
    func columns(of table: TableDefinition) -> [String: Column] {
        if let known = columns[table.name] { return known }
        var byName: [String: Column] = [:]
        for column in table.columns where byName[column.name.lowercased()] == nil {
            byName[column.name.lowercased()] = column
        }
        for column in byName.values { byName[column.name] = column }
        columns[table.name] = byName
        return byName
    }

    func tableID(_ name: String, _ look: () throws -> Int) rethrows -> Int {
        if let known = tableIDs[name] { return known }
        let id = try look()
        tableIDs[name] = id
        return id
    }

    func siteNumber(_ siteID: Data, _ look: () throws -> Int) rethrows -> Int {
        if let known = siteNumbers[siteID] { return known }
        let number = try look()
        siteNumbers[siteID] = number
        return number
    }

    /// `VERB main."table" WHERE key = ? AND …` (see ``ChangeLog/rowSQL(_:_:_:_:set:)``), its text made once.
    func keyedSQL(_ verb: String, _ table: String, _ keys: [String]) -> String {
        let name = verb + " " + table
        if let known = keyedTexts[name] { return known }
        let text = ChangeLog.rowSQL(verb, table, keys, keys.map { _ in .null }, set: [:]).text
        keyedTexts[name] = text
        return text
    }

    /// `INSERT INTO main."table" ("a", "b", …) VALUES (?, ?, …)` for `names` in order, prepared
    /// once for the batch.
    func insertStatement(_ table: String, _ names: [String], _ db: Database) throws -> Statement {
        if let known = inserts[table]?[names] { return known }
        let statement = try db.cachedStatement(
            "INSERT INTO main.\(quoteIdentifier(table)) (\(names.map(quoteIdentifier).joined(separator: ", "))) VALUES ("
                + Array(repeating: "?", count: names.count).joined(separator: ", ") + ")")
        inserts[table, default: [:]][names] = statement
        return statement
    }

    /// Whether a row of `table` is present and its creation and deletion entries, in one row: the
    /// key's values bound first (`?1`…), then the table's number and the logged key. A row
    /// always comes back (the joins are outer); prepared once for the batch.
    func rowStateStatement(_ table: String, _ keys: [String], _ db: Database) throws -> Statement {
        if let known = rowStates[table] { return known }
        let match = ChangeLog.keyMatch(keys)
        let (tableID, pk) = ("?\(keys.count + 1)", "?\(keys.count + 2)")
        let statement = try db.cachedStatement(
            """
            SELECT EXISTS (SELECT 1 FROM main.\(quoteIdentifier(table)) WHERE \(match)), c.clock, cs.siteID, d.clock, ds.siteID
            FROM (SELECT 1)
            LEFT JOIN ostore_meta.ostore_changes AS c ON c.tableID = \(tableID) AND c.pk = \(pk) AND c.columnName = ''
            LEFT JOIN ostore_meta.ostore_sites AS cs ON cs.id = c.site
            LEFT JOIN ostore_meta.ostore_changes AS d ON d.tableID = \(tableID) AND d.pk = \(pk) AND d.columnName = '-'
            LEFT JOIN ostore_meta.ostore_sites AS ds ON ds.id = d.site
            """)
        rowStates[table] = statement
        return statement
    }

    /// After a savepoint's rollback: a number made inside it is gone from the metadatabase.
    func forgetNumbers() {
        tableIDs = [:]
        siteNumbers = [:]
    }
}
