import Foundation
import SyncProtocol

extension PostgresSyncStorage: ScopedStorage {
    public func setScopeRules(_ text: String, dataset: String) throws(ServerError) {
        try setScopeRulesCheckedAgainstNewestDefinition(text, dataset: dataset)
    }

    public func scopeRules(of dataset: String) throws(ServerError) -> ScopeRulesSummary? {
        try serverWork("reading the scope rules of dataset \(dataset)") { connection in
            let result = try connection.execute(
                Statements.scopeRulesNow, [.int8(try self.datasetID(dataset, connection))])
            guard result.rowCount == 1 else { return nil }
            return ScopeRulesSummary(
                version: try result.int64(row: 0, column: 0), text: try result.string(row: 0, column: 1),
                setAt: Date(timeIntervalSince1970: try result.double(row: 0, column: 3)))
        }
    }

    func scopeRulesVersion(of dataset: String) throws(ServerError) -> Int64? {
        try serverWork("reading the scope rules of dataset \(dataset)") { connection in
            let result = try connection.execute(Statements.scopeRulesVersion, [.text(dataset)])
            return result.rowCount == 1 ? try result.int64(row: 0, column: 0) : nil
        }
    }

    /// Sets the rules and relinks every row of the dataset under them in one transaction holding
    /// the dataset's lock, so no push comes between: the rules take effect at the position after
    /// the index's end, for every server over the database.
    func setScopeRules(_ rulesText: String, definition: SchemaDefinition, dataset: String) throws {
        let rules = try ScopeRules.read(from: Data(rulesText.utf8))
        _ = try ScopeEvaluator(rules, definition: definition)
        let definitionText = String(decoding: try JSONEncoder().encode(definition), as: UTF8.self)
        try storageWork("setting the scope rules of dataset \(dataset)") { connection in
            try connection.transaction {
                let datasetID = try lockDataset(dataset, connection).int64(row: 0, column: 0)
                let position = try ScopePosition.rules(
                    after: try PostgresScopeIndex.end(datasetID: datasetID, connection))
                let current = try connection.execute(Statements.scopeRulesNow, [.int8(datasetID)])
                let version = (current.rowCount == 1 ? try current.int64(row: 0, column: 0) : 0) + 1
                let stored = try StoredScopeRules(
                    version: version, rulesText: rulesText, definitionText: definitionText)
                let scopes = try PostgresScopeIndex.storedScopes(datasetID: datasetID, nil, connection)
                var writes = PostgresScopeIndex.Writes()
                for (row, merged) in try PostgresScopeIndex.storedRows(datasetID: datasetID, nil, connection) {
                    let old = scopes[row] ?? RowScope()
                    let new = try RowScope(
                        relinking: merged, table: row.table, keyText: row.key, under: stored.evaluator)
                    if new != old { writes.add(row, moves: [RowScope.Move(position: position, from: old, to: new)]) }
                }
                try writes.write(datasetID: datasetID, connection)
                try connection.execute(
                    Statements.insertScopeRules,
                    [.int8(datasetID), .int8(position), .int8(version), .text(rulesText), .text(definitionText)])
            }
        }
    }

    /// A push writes the index in its own transaction: there is nothing to wait for.
    func waitUntilFolded() {}

    /// A page of `dataset`'s scoped changes for `identity` (``ScopedChanges/read(from:datasetID:identity:after:limit:transitions:)``),
    /// read in one snapshot of the database.
    func readScopedChanges(
        dataset: String, identity: ScopeIdentity, after cursor: ScopedCursor?, limit: Int, excluding site: SiteID?
    ) throws -> ScopedChanges {
        try storageWork("reading the scope of \(identity.subject ?? "no subject") in dataset \(dataset)") {
            connection in
            try connection.transaction(begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") {
                let datasetID = try self.datasetID(dataset, connection)
                return try ScopedChanges.read(
                    from: ScopedReadOfDatabase(connection: connection, datasetID: datasetID, excluding: site),
                    datasetID: datasetID, identity: identity, after: cursor, limit: limit, transitions: transitions)
            }
        }
    }

    func scopeWriteRefusals(_ changes: [Change], identity: ScopeIdentity, dataset: String) throws -> [Int: String] {
        try storageWork("checking a push of \(identity.subject ?? "no subject") in dataset \(dataset)") { connection in
            try connection.transaction(begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") {
                let datasetID = try self.datasetID(dataset, connection)
                guard let rules = try PostgresScopeIndex.rulesNow(datasetID: datasetID, cache: scopeRules, connection)
                else { return [:] }
                var check = try ScopeWriteCheck(
                    rules.evaluator, identity: identity,
                    state: PostgresScopeStateReader(connection: connection, datasetID: datasetID))
                var refusals: [Int: String] = [:]
                for (position, change) in changes.enumerated() {
                    if let reason = try check.refusal(of: change) { refusals[position] = reason }
                }
                return refusals
            }
        }
    }

    /// Writes the scope moves of a batch's rows in the push's transaction, when the dataset has
    /// rules: `changes` are the batch's new changes with their keys' canonical JSON and serials,
    /// in log order, read against the rows as they stood before the batch; `rulesVersion` is the
    /// version the push's lock read.
    func indexScopes(
        of changes: [(change: Change, key: String, serial: Int64)], datasetID: Int64, rulesVersion: Int64,
        _ connection: PostgresConnection
    ) throws {
        guard
            let rules = try PostgresScopeIndex.rulesNow(
                datasetID: datasetID, version: rulesVersion, cache: scopeRules, connection)
        else { return }
        var byRow: [ScopedRow: [(change: FoldChange, serial: Int64)]] = [:]
        var order: [ScopedRow] = []
        for (change, key, serial) in changes {
            let row = ScopedRow(table: change.table, key: key)
            if byRow[row] == nil { order.append(row) }
            byRow[row, default: []].append((FoldChange(change, key: key), serial))
        }
        let stored = try PostgresScopeIndex.storedRows(datasetID: datasetID, order, connection)
        let scopes = try PostgresScopeIndex.storedScopes(datasetID: datasetID, order, connection)
        var writes = PostgresScopeIndex.Writes()
        for row in order {
            writes.add(
                row,
                moves: try RowScope.moves(
                    table: row.table, keyText: row.key, row: stored[row] ?? MergedRow(),
                    scope: scopes[row] ?? RowScope(),
                    changes: byRow[row]!, rules: rules.evaluator))
        }
        if !writes.isEmpty { try writes.write(datasetID: datasetID, connection) }
    }
}

/// A scoped read of the PostgreSQL database in the transaction of `connection`.
private struct ScopedReadOfDatabase: ScopedReadSource {
    let connection: PostgresConnection
    let datasetID: Int64
    let excluding: SiteID?

    var index: PostgresScopeIndexReader { PostgresScopeIndexReader(connection, datasetID: datasetID) }

    func currentChanges(of rows: [ScopedRow]) throws -> [Change] {
        guard !rows.isEmpty else { return [] }
        let stored = try PostgresScopeIndex.storedRows(datasetID: datasetID, rows, connection)
        return try rows.flatMap { row in
            try stored[row].map { try SnapshotChanges.of(table: row.table, keyText: row.key, row: $0) } ?? []
        }
    }

    func loggedChanges(after from: Int64, through to: Int64, limit: Int) throws -> (
        changes: [Change], readThrough: Int64
    ) {
        let result = try connection.execute(
            PostgresSyncStorage.Statements.logRange,
            [
                .int8(datasetID), .int8(from), .int8(to), excluding.map { .bytea($0.bytes) } ?? .null,
                .int8(Int64(limit)),
            ])
        var bodies = LogPage.Entries()
        var last: Int64?
        try withExtendedLifetime(result) { () throws(PostgresError) in
            for row in 0..<result.rowCount {
                last = try result.int64(row: row, column: 0)
                bodies.append(try result.textBytes(row: row, column: 1))
            }
        }
        return (try bodies.decodedChanges(), bodies.count < limit ? to : last ?? to)
    }
}
