import Foundation
import OfflineStoreSQLite
import SyncProtocol

extension SQLiteSyncStorage: ScopedStorage {
    public func setScopeRules(_ text: String, dataset: String) throws(ServerError) {
        try setScopeRulesCheckedAgainstNewestDefinition(text, dataset: dataset)
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

    /// The fold brings the scope index to the rules before any change after them.
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

    /// A page of `dataset`'s scoped changes for `identity` (``ScopedChanges/read(from:datasetID:identity:after:limit:transitions:)``),
    /// from the state folded through the log's end when the move's first page is read.
    func readScopedChanges(
        dataset: String, identity: ScopeIdentity, after cursor: ScopedCursor?, limit: Int, excluding site: SiteID?
    ) throws -> ScopedChanges {
        try storageWork("reading the scope of \(identity.subject ?? "no subject") in dataset \(dataset)") {
            let (datasetID, last, rulesVersion) = try scopedDataset(dataset)
            if cursor.map({ $0.from == $0.to }) ?? true {
                try catchUp(datasetID: datasetID, through: last, rulesVersion: rulesVersion)
            }
            return try state.pool.read { db in
                try ScopedChanges.read(
                    from: ScopedReadOfState(storage: self, db: db, datasetID: datasetID, excluding: site),
                    datasetID: datasetID, identity: identity, after: cursor, limit: limit, transitions: transitions)
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
                // A state behind the log (its fold fails, or lags past the wait) may let a writer
                // keep a scope the newest changes took away: nothing is decided on it.
                let folded =
                    try db.fetchValue(
                        Int64.self, "SELECT foldedSerial FROM state_datasets WHERE datasetID = \(datasetID)") ?? 0
                guard folded >= last else {
                    throw ServerError(
                        .unavailable,
                        "the server's state is behind its log (through change \(folded) of \(last)), so the push "
                            + "cannot be checked against the dataset's rules; nothing of it was stored",
                        fix: "retry shortly; an operator sees why the state falls behind in the server's log")
                }
                let index = StateScopeIndexReader(db, datasetID: datasetID)
                guard let rules = try index.rules(at: try index.end()) else { return [:] }
                var check = try ScopeWriteCheck(
                    rules.evaluator, identity: identity, state: try StateScopeStateReader(db: db, datasetID: datasetID))
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

    /// Up to `limit` of the log's changes of `datasetID` after serial `from` through `to`, leaving
    /// out `site`'s own; and the serial read through (`to` when fewer were left).
    fileprivate func loggedChanges(
        datasetID: Int64, after from: Int64, through to: Int64, excluding site: SiteID?, limit: Int
    ) throws -> (changes: [Change], readThrough: Int64) {
        try pool.read { db in
            let cursor = try db.fetchCursor(
                """
                SELECT serial, body FROM server_log
                WHERE datasetID = \(datasetID) AND serial > \(from) AND serial <= \(to) AND site IS NOT \(site?.bytes)
                ORDER BY serial LIMIT \(limit)
                """)
            var last: Int64?
            var bodies = LogPage.Entries()
            while let row = try cursor.next() {
                last = try row.decode(at: 0)
                try row.withUnsafeBytes(at: 1) { bodies.append($0) }
            }
            return (try bodies.decodedChanges(), bodies.count < limit ? to : last ?? to)
        }
    }
}

/// A scoped read of `state.sqlite` in the read transaction of `db`, with the log's changes read
/// from `server.sqlite` (the log only grows, so what a read sees of it stays true).
private struct ScopedReadOfState: ScopedReadSource {
    let storage: SQLiteSyncStorage
    let db: Database
    let datasetID: Int64
    let excluding: SiteID?

    var index: StateScopeIndexReader { StateScopeIndexReader(db, datasetID: datasetID) }

    func currentChanges(of rows: [ScopedRow]) throws -> [Change] {
        try rows.flatMap { row in
            try SQLiteSyncStorage.storedRow(datasetID: datasetID, table: row.table, key: row.key, db).map {
                try SnapshotChanges.of(table: row.table, keyText: row.key, row: $0)
            } ?? []
        }
    }

    func loggedChanges(after from: Int64, through to: Int64, limit: Int) throws -> (
        changes: [Change], readThrough: Int64
    ) {
        try storage.loggedChanges(datasetID: datasetID, after: from, through: to, excluding: excluding, limit: limit)
    }
}
