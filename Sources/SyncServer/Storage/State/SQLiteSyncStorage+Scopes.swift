import Foundation
import OfflineStoreSQLite
import SyncProtocol

/// One page of a subject's scoped reads: rows that came into its scope, whole, and the changes
/// of rows that stayed in it, as changes; rows that left it; the cursor of the next page, and
/// whether the move it reads has more pages (the next page of a move that has none starts the
/// next move, and is empty until the dataset changes).
struct ScopedChanges: Sendable {
    var changes: [Change]
    var removed: [ScopedRow]
    var cursor: ScopedCursor
    var hasMore: Bool
}

extension SQLiteSyncStorage: ScopedStorage {
    public func setScopeRules(_ text: String, dataset: String) throws(ServerError) {
        guard let (version, definition) = try schemaDefinitions(of: dataset).max(by: { $0.key < $1.key }) else {
            throw ServerError(
                .invalidArgument,
                "no device of dataset \(dataset) has announced its schema's definition yet, so the rules cannot be "
                    + "checked", fix: "sync a device of the app first, then set the rules")
        }
        do {
            try setScopeRules(text, definition: definition, dataset: dataset)
        } catch let problem as ScopeRuleProblem {
            throw ServerError(.invalidArgument, "the rules file: \(problem)", fix: "see docs/scoped-sync.md")
        } catch let refused as ScopeRulesRefused {
            throw ServerError(
                .invalidArgument,
                "the rules do not fit schema \(version) of dataset \(dataset):\n"
                    + refused.problems.map { "  \($0)" }.joined(separator: "\n"),
                fix: "check the file with `ostore-server rules check --dataset \(dataset) FILE`")
        } catch let error as ServerError {
            throw error
        } catch {
            throw ServerError(.storage, "setting the scope rules of dataset \(dataset) failed: \(error)")
        }
    }

    public func scopeRules(of dataset: String) throws(ServerError) -> ScopeRulesSummary? {
        try serverWork("reading the scope rules of dataset \(dataset)") {
            try pool.read { db in
                let datasetID = try self.datasetID(dataset, db)
                return try db.fetchOne(
                    "SELECT version, rules, setAt FROM server_scope_rules WHERE datasetID = \(datasetID)"
                ).map { row in
                    ScopeRulesSummary(
                        version: try row.decode(at: 0), text: try row.decode(at: 1), setAt: try row.decode(at: 2))
                }
            }
        }
    }

    func scopeRulesVersion(of dataset: String) throws(ServerError) -> Int64? {
        try serverWork("reading the scope rules of dataset \(dataset)") {
            try pool.read { db in
                try db.fetchValue(
                    Int64.self,
                    """
                    SELECT r.version FROM server_scope_rules AS r JOIN server_datasets AS d ON d.id = r.datasetID
                    WHERE d.name = \(dataset)
                    """)
            }
        }
    }

    /// Makes `rulesText` (a rules file, ``ScopeRules``) the scope rules of `dataset`, checked
    /// against `definition`; the fold brings the scope index to them before any change after.
    func setScopeRules(_ rulesText: String, definition: SchemaDefinition, dataset: String) throws {
        let rules = try ScopeRules.read(from: Data(rulesText.utf8))
        _ = try ScopeEvaluator(rules, definition: definition)
        // The fold relinks the index at the position after its end: refused here, not there.
        let datasetID = try pool.read { db in try self.datasetID(dataset, db) }
        _ = try state.pool.read { db in
            try ScopePosition.rules(after: try StateScopeIndexReader(db, datasetID: datasetID).end())
        }
        let definitionText = String(decoding: try JSONEncoder().encode(definition), as: UTF8.self)
        try storageWork("setting the scope rules of dataset \(dataset)") {
            try pool.write { db in
                let datasetID = try self.datasetID(dataset, db)
                let version =
                    (try db.fetchValue(
                        Int64.self, "SELECT version FROM server_scope_rules WHERE datasetID = \(datasetID)") ?? 0) + 1
                try db.execute(
                    """
                    INSERT INTO server_scope_rules (datasetID, version, rules, definition, setAt)
                    VALUES (\(datasetID), \(version), \(rulesText), \(definitionText), \(Date()))
                    ON CONFLICT (datasetID) DO UPDATE SET
                        version = excluded.version, rules = excluded.rules, definition = excluded.definition,
                        setAt = excluded.setAt
                    """)
            }
        }
        folder.foldNow(timeout: .zero)
    }

    /// A page of at most `limit` rows and changes of `dataset` that move `identity`'s read scope on
    /// from where `cursor` stands (nil for a first download) to the newest position folded when
    /// the move's first page was read, leaving out `site`'s own changes: first the rows that left
    /// the scope, then those that came in, then the changes of those that stayed.
    func readScopedChanges(
        dataset: String, identity: ScopeIdentity, after cursor: ScopedCursor?, limit: Int, excluding site: SiteID?
    ) throws -> ScopedChanges {
        try storageWork("reading the scope of \(identity.subject ?? "no subject") in dataset \(dataset)") {
            let (datasetID, last, rulesVersion) = try scopedDataset(dataset)
            if cursor.map({ $0.from == $0.to }) ?? true {
                try catchUp(datasetID: datasetID, through: last, rulesVersion: rulesVersion)
            }
            return try state.pool.read { db in
                let index = StateScopeIndexReader(db, datasetID: datasetID)
                let end = try index.end()
                var cursor = cursor ?? ScopedCursor(from: nil, to: end)
                if cursor.from == cursor.to { cursor.to = end }
                let key = ScopeTransitionCache.Key(
                    datasetID: datasetID, identity: identity, from: cursor.from, to: cursor.to)
                var transition = try transitions.transition(key) {
                    try ScopeTransition(index, identity: identity, from: cursor.from, to: cursor.to)
                }
                defer { transitions.keep(transition, for: key) }
                var room = max(limit, 1)
                let removed = Array(transition.leaving.dropFirst(cursor.leavingSent).prefix(room))
                cursor.leavingSent += removed.count
                room -= removed.count
                var changes: [Change] = []
                for row in transition.entering.dropFirst(cursor.enteringSent).prefix(room) {
                    // The row as the state holds it now, as a snapshot gives it.
                    if let merged = try Self.storedRow(datasetID: datasetID, table: row.table, key: row.key, db) {
                        changes += try snapshotChanges(table: row.table, keyText: row.key, row: merged)
                    }
                    cursor.enteringSent += 1
                    room -= 1
                }
                var hasMore =
                    cursor.leavingSent < transition.leaving.count || cursor.enteringSent < transition.entering.count
                if let from = cursor.from, !hasMore {
                    let start = cursor.changesThrough ?? ScopePosition.serial(of: from)
                    let last = ScopePosition.serial(of: cursor.to)
                    var read = start
                    while room > 0, read < last {
                        let batch = try loggedChanges(
                            datasetID: datasetID, after: read, through: last, excluding: site, limit: room)
                        // A batch is no longer than the room left, so all of it fits.
                        for (_, change) in batch.changes
                        where try transition.receivesChanges(
                            of: ScopedRow(table: change.table, key: try change.canonicalKeyJSON()), in: index)
                        {
                            changes.append(change)
                            room -= 1
                        }
                        read = batch.readThrough
                    }
                    cursor.changesThrough = read
                    hasMore = read < last
                }
                return ScopedChanges(
                    changes: changes, removed: removed, cursor: hasMore ? cursor : cursor.next, hasMore: hasMore)
            }
        }
    }

    /// The changes of a batch `identity` may not write under `dataset`'s rules, by their index in
    /// `changes`, each with why (``ScopeWriteCheck``): decided on the state folded through the
    /// dataset's newest change, and the batch's earlier changes that pass. None without rules.
    func scopeWriteRefusals(_ changes: [Change], identity: ScopeIdentity, dataset: String) throws -> [Int: String] {
        try storageWork("checking a push of \(identity.subject ?? "no subject") in dataset \(dataset)") {
            let (datasetID, last, rulesVersion) = try scopedDataset(dataset)
            try catchUp(datasetID: datasetID, through: last, rulesVersion: rulesVersion)
            return try state.pool.read { db in
                let index = StateScopeIndexReader(db, datasetID: datasetID)
                guard let rules = try index.rules(at: try index.end()) else { return [:] }
                var check = try ScopeWriteCheck(
                    rules.evaluator, identity: identity, state: StateScopeStateReader(db: db, datasetID: datasetID))
                var refusals: [Int: String] = [:]
                for (position, change) in changes.enumerated() {
                    if let reason = try check.refusal(of: change) { refusals[position] = reason }
                }
                return refusals
            }
        }
    }

    /// `dataset`'s id, newest serial and rules version (nil without rules), in one read.
    private func scopedDataset(_ dataset: String) throws -> (id: Int64, lastSerial: Int64, rulesVersion: Int64?) {
        try pool.read { db in
            let datasetID = try self.datasetID(dataset, db)
            return (
                datasetID,
                try db.fetchValue(Int64.self, "SELECT lastSerial FROM server_datasets WHERE id = \(datasetID)") ?? 0,
                try db.fetchValue(Int64.self, "SELECT version FROM server_scope_rules WHERE datasetID = \(datasetID)")
            )
        }
    }

    /// Waits until the state is folded through serial `last` of `datasetID` and its scope index
    /// follows rules version `rulesVersion`: rules set by another process (`ostore-server rules
    /// set` beside a running server) are folded in by a round started for them.
    private func catchUp(datasetID: Int64, through last: Int64, rulesVersion: Int64?) throws {
        folder.waitUntilFolded(datasetID: datasetID, through: last, timeout: .seconds(10))
        func follows() throws -> Bool {
            try state.pool.read { db in try StateScopeIndex.appliedVersion(datasetID: datasetID, db) } == rulesVersion
        }
        guard try !follows() else { return }
        folder.foldNow(timeout: .seconds(10))
        guard try follows() else {
            throw ServerError(
                .unavailable, "the scope index does not follow the dataset's rules yet", fix: "retry shortly")
        }
    }

    /// Up to `limit` of the log's changes of `datasetID` after serial `from` through `to`, with
    /// their serials, leaving out `site`'s own; and the serial read through (`to` when fewer were
    /// left).
    private func loggedChanges(
        datasetID: Int64, after from: Int64, through to: Int64, excluding site: SiteID?, limit: Int
    ) throws -> (changes: [(serial: Int64, change: Change)], readThrough: Int64) {
        try pool.read { db in
            let cursor = try db.fetchCursor(
                """
                SELECT serial, body FROM server_log
                WHERE datasetID = \(datasetID) AND serial > \(from) AND serial <= \(to) AND site IS NOT \(site?.bytes)
                ORDER BY serial LIMIT \(limit)
                """)
            var serials: [Int64] = []
            var bodies = LogPage.Entries()
            while let row = try cursor.next() {
                serials.append(try row.decode(at: 0))
                try row.withUnsafeBytes(at: 1) { bodies.append($0) }
            }
            let changes = Array(zip(serials, try Self.decodeLogBodies(bodies)))
            return (changes, serials.count < limit ? to : serials.last ?? to)
        }
    }
}
