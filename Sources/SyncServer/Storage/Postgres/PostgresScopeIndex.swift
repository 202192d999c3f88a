import Foundation
import SyncProtocol

/// The scope index of a PostgreSQL database (migration 8): each row's links and grants
/// (``RowScope``) with the scope positions they held between, as ``StateScopeIndex`` keeps them in
/// `state.sqlite`. A push writes the moves of the rows it changes in its own transaction, so the
/// index always stands where the log ends, for every server over the database.
///
/// ```swift
/// var writes = PostgresScopeIndex.Writes()
/// writes.add(row, moves: try RowScope.moves(table: t, keyText: k, row: stored, scope: indexed, changes: c, rules: r))
/// try writes.write(datasetID: id, connection)
/// ```
enum PostgresScopeIndex {
    /// The merged state of `rows` (every row of the dataset when nil) as the database holds it.
    static func storedRows(datasetID: Int64, _ rows: [ScopedRow]?, _ connection: PostgresConnection) throws
        -> [ScopedRow: MergedRow]
    {
        typealias Statements = PostgresSyncStorage.Statements
        let keys: [PostgresValue] =
            rows.map { rows in
                [.array(.text, rows.map { .text($0.table) }), .array(.text, rows.map { .text($0.key) })]
            } ?? []
        let rowResult = try connection.execute(
            rows == nil ? Statements.allRows : Statements.rowStates, [.int8(datasetID)] + keys)
        var merged: [ScopedRow: MergedRow] = [:]
        for row in 0..<rowResult.rowCount {
            merged[
                ScopedRow(
                    table: try rowResult.string(row: row, column: 0), key: try rowResult.string(row: row, column: 1))] =
                MergedRow(
                    created: try RowMerge.version(rowResult, row: row, clockAt: 2),
                    deleted: try RowMerge.version(rowResult, row: row, clockAt: 4))
        }
        let cells = try connection.execute(
            rows == nil ? Statements.allCells : Statements.cellsOfRows, [.int8(datasetID)] + keys)
        for cell in 0..<cells.rowCount {
            let row = ScopedRow(
                table: try cells.string(row: cell, column: 0), key: try cells.string(row: cell, column: 1))
            merged[row, default: MergedRow()].cells[try cells.string(row: cell, column: 2)] = MergedRow.Cell(
                value: try PostgresCellValue.wireValue(cells, row: cell, column: 3),
                version: ChangeVersion(
                    clock: try cells.int64(row: cell, column: 7), site: try cells.data(row: cell, column: 8)))
        }
        return merged
    }

    /// What the index holds now of `rows` (of every row of the dataset when nil).
    static func storedScopes(datasetID: Int64, _ rows: [ScopedRow]?, _ connection: PostgresConnection) throws
        -> [ScopedRow: RowScope]
    {
        typealias Statements = PostgresSyncStorage.Statements
        let keys: [PostgresValue] =
            rows.map { rows in
                [.array(.text, rows.map { .text($0.table) }), .array(.text, rows.map { .text($0.key) })]
            } ?? []
        var scopes: [ScopedRow: RowScope] = [:]
        let links = try connection.execute(
            rows == nil ? Statements.allScopeLinks : Statements.scopeLinksOfRows, [.int8(datasetID)] + keys)
        for link in 0..<links.rowCount {
            let row = ScopedRow(
                table: try links.string(row: link, column: 0), key: try links.string(row: link, column: 1))
            scopes[row, default: RowScope()].links.insert(
                RowScope.Link(
                    kind: try links.string(row: link, column: 2), a: try links.string(row: link, column: 3),
                    b: try links.string(row: link, column: 4)))
        }
        let grants = try connection.execute(
            rows == nil ? Statements.allScopeGrants : Statements.scopeGrantsOfRows, [.int8(datasetID)] + keys)
        for grant in 0..<grants.rowCount {
            let row = ScopedRow(
                table: try grants.string(row: grant, column: 0), key: try grants.string(row: grant, column: 1))
            scopes[row, default: RowScope()].grants.insert(
                MembershipGrant(
                    kind: try grants.string(row: grant, column: 2), member: try grants.string(row: grant, column: 3),
                    value: try grants.string(row: grant, column: 4)))
        }
        return scopes
    }

    /// The writes of many rows' moves, made a few statements: a link or grant that stands in the
    /// index is closed once, at the position it went; one a move of the same writes opened is
    /// inserted with the positions it held between.
    struct Writes {
        private struct Closed<Item> {
            var row: ScopedRow
            var item: Item
            var position: Int64
        }
        private struct Opened<Item> {
            var row: ScopedRow
            var item: Item
            var addedAt: Int64
            var removedAt: Int64?
        }
        private var closedLinks: [Closed<RowScope.Link>] = []
        private var openedLinks: [Opened<RowScope.Link>] = []
        private var closedGrants: [Closed<MembershipGrant>] = []
        private var openedGrants: [Opened<MembershipGrant>] = []

        var isEmpty: Bool { closedLinks.isEmpty && openedLinks.isEmpty && closedGrants.isEmpty && openedGrants.isEmpty }

        /// Adds `row`'s moves, in the order they were made.
        mutating func add(_ row: ScopedRow, moves: [RowScope.Move]) {
            var linksOpened: [RowScope.Link: Int] = [:]
            var grantsOpened: [MembershipGrant: Int] = [:]
            for move in moves {
                Self.follow(
                    row, from: move.from.links, to: move.to.links, at: move.position, closed: &closedLinks,
                    opened: &openedLinks, openedHere: &linksOpened)
                Self.follow(
                    row, from: move.from.grants, to: move.to.grants, at: move.position, closed: &closedGrants,
                    opened: &openedGrants, openedHere: &grantsOpened)
            }
        }

        private static func follow<Item: Hashable>(
            _ row: ScopedRow, from old: Set<Item>, to new: Set<Item>, at position: Int64, closed: inout [Closed<Item>],
            opened: inout [Opened<Item>], openedHere: inout [Item: Int]
        ) {
            for item in old.subtracting(new) {
                if let index = openedHere.removeValue(forKey: item) {
                    opened[index].removedAt = position
                } else {
                    closed.append(Closed(row: row, item: item, position: position))
                }
            }
            for item in new.subtracting(old) {
                openedHere[item] = opened.count
                opened.append(Opened(row: row, item: item, addedAt: position))
            }
        }

        func write(datasetID: Int64, _ connection: PostgresConnection) throws {
            typealias Statements = PostgresSyncStorage.Statements
            func texts<T>(_ items: [T], _ text: (T) -> String) -> PostgresValue {
                .array(.text, items.map { .text(text($0)) })
            }
            if !closedLinks.isEmpty {
                try connection.execute(
                    Statements.closeScopeLinks,
                    [
                        .int8(datasetID), texts(closedLinks) { $0.row.table }, texts(closedLinks) { $0.row.key },
                        texts(closedLinks) { $0.item.kind }, texts(closedLinks) { $0.item.a },
                        texts(closedLinks) { $0.item.b }, .array(.int8, closedLinks.map { .int8($0.position) }),
                    ])
            }
            if !openedLinks.isEmpty {
                try connection.execute(
                    Statements.insertScopeLinks,
                    [
                        .int8(datasetID), texts(openedLinks) { $0.row.table }, texts(openedLinks) { $0.row.key },
                        texts(openedLinks) { $0.item.kind }, texts(openedLinks) { $0.item.a },
                        texts(openedLinks) { $0.item.b }, .array(.int8, openedLinks.map { .int8($0.addedAt) }),
                        .array(.int8, openedLinks.map { .optionalInt8($0.removedAt) }),
                    ])
            }
            if !closedGrants.isEmpty {
                try connection.execute(
                    Statements.closeScopeGrants,
                    [
                        .int8(datasetID), texts(closedGrants) { $0.row.table }, texts(closedGrants) { $0.row.key },
                        texts(closedGrants) { $0.item.kind }, texts(closedGrants) { $0.item.member },
                        texts(closedGrants) { $0.item.value }, .array(.int8, closedGrants.map { .int8($0.position) }),
                    ])
            }
            if !openedGrants.isEmpty {
                try connection.execute(
                    Statements.insertScopeGrants,
                    [
                        .int8(datasetID), texts(openedGrants) { $0.row.table }, texts(openedGrants) { $0.row.key },
                        texts(openedGrants) { $0.item.kind }, texts(openedGrants) { $0.item.member },
                        texts(openedGrants) { $0.item.value }, .array(.int8, openedGrants.map { .int8($0.addedAt) }),
                        .array(.int8, openedGrants.map { .optionalInt8($0.removedAt) }),
                    ])
            }
        }
    }

    /// The rules dataset `datasetID` is served under now, in the transaction of `connection`;
    /// nil when it has none. Parsed once per version (`cache`); with `version`, the version a read
    /// of the same transaction found, rules of that version in the cache are not read again.
    static func rulesNow(
        datasetID: Int64, version: Int64? = nil, cache: LockedState<[Int64: StoredScopeRules]>,
        _ connection: PostgresConnection
    ) throws -> StoredScopeRules? {
        if let version, let known = cache.withLock({ $0[datasetID] }), known.version == version { return known }
        let result = try connection.execute(PostgresSyncStorage.Statements.scopeRulesNow, [.int8(datasetID)])
        guard result.rowCount == 1 else { return nil }
        let version = try result.int64(row: 0, column: 0)
        if let known = cache.withLock({ $0[datasetID] }), known.version == version { return known }
        let rules = try StoredScopeRules(
            version: version, rulesText: try result.string(row: 0, column: 1),
            definitionText: try result.string(row: 0, column: 2))
        cache.withLock { $0[datasetID] = rules }
        return rules
    }

    /// The position the index of `datasetID` stands at.
    static func end(datasetID: Int64, _ connection: PostgresConnection) throws -> Int64 {
        let result = try connection.execute(PostgresSyncStorage.Statements.scopeEnd, [.int8(datasetID)])
        guard result.rowCount == 1 else { return 0 }
        return max(
            ScopePosition.afterChange(try result.int64(row: 0, column: 0)),
            try result.optionalInt64(row: 0, column: 1) ?? 0)
    }
}

/// ``ScopeIndexReading`` over the PostgreSQL scope index, in the transaction of `connection`.
final class PostgresScopeIndexReader: ScopeIndexReading {
    private typealias Statements = PostgresSyncStorage.Statements
    private let connection: PostgresConnection
    private let datasetID: Int64
    private var rulesByVersion: [Int64: StoredScopeRules] = [:]

    init(_ connection: PostgresConnection, datasetID: Int64) {
        self.connection = connection
        self.datasetID = datasetID
    }

    func end() throws -> Int64 { try PostgresScopeIndex.end(datasetID: datasetID, connection) }

    func rules(at position: Int64) throws -> StoredScopeRules? {
        let result = try connection.execute(Statements.scopeRulesAt, [.int8(datasetID), .int8(position)])
        guard result.rowCount == 1 else { return nil }
        let version = try result.int64(row: 0, column: 0)
        if let known = rulesByVersion[version] { return known }
        let rules = try StoredScopeRules(
            version: version, rulesText: try result.string(row: 0, column: 1),
            definitionText: try result.string(row: 0, column: 2))
        rulesByVersion[version] = rules
        return rules
    }

    func grantedValues(kind: String, member: String, at position: Int64) throws -> Set<String> {
        let result = try connection.execute(
            Statements.scopeGrantedAt, [.int8(datasetID), .text(kind), .text(member), .int8(position)])
        return Set(try (0..<result.rowCount).map { try result.string(row: $0, column: 0) })
    }

    func rows(reachedFrom buckets: Set<ScopeBucket>, at position: Int64) throws -> Set<ScopedRow> {
        let buckets = Array(buckets)
        return try scopedRows(
            try connection.execute(
                Statements.scopeRowsReached,
                [
                    .int8(datasetID), .array(.text, buckets.map { .text($0.kind) }),
                    .array(.text, buckets.map { .text($0.value) }), .int8(position),
                ]))
    }

    func rowsRelinked(after from: Int64, through to: Int64) throws -> Set<ScopedRow> {
        try scopedRows(
            try connection.execute(Statements.scopeRowsRelinked, [.int8(datasetID), .int8(from), .int8(to)]))
    }

    func rows(linkedTo buckets: Set<ScopeBucket>, below rows: Set<ScopedRow>, at from: Int64, or to: Int64) throws
        -> Set<ScopedRow>
    {
        let buckets = Array(buckets)
        let rows = Array(rows)
        return try scopedRows(
            try connection.execute(
                Statements.scopeRowsLinkedBelow,
                [
                    .int8(datasetID), .array(.text, buckets.map { .text($0.kind) }),
                    .array(.text, buckets.map { .text($0.value) }), .array(.text, rows.map { .text($0.table) }),
                    .array(.text, rows.map { .text($0.key) }), .int8(from), .int8(to),
                ]))
    }

    func links(of row: ScopedRow, at position: Int64) throws -> Set<RowScope.Link> {
        let result = try connection.execute(
            Statements.scopeLinksOfRowAt, [.int8(datasetID), .text(row.table), .text(row.key), .int8(position)])
        return Set(
            try (0..<result.rowCount).map { index in
                RowScope.Link(
                    kind: try result.string(row: index, column: 0), a: try result.string(row: index, column: 1),
                    b: try result.string(row: index, column: 2))
            })
    }

    private func scopedRows(_ result: PostgresResult) throws -> Set<ScopedRow> {
        Set(
            try (0..<result.rowCount).map {
                ScopedRow(table: try result.string(row: $0, column: 0), key: try result.string(row: $0, column: 1))
            })
    }
}

/// ``ScopeStateReading`` over the PostgreSQL state as it stands.
struct PostgresScopeStateReader: ScopeStateReading {
    let connection: PostgresConnection
    let datasetID: Int64

    func current(_ row: ScopedRow) throws -> (values: [String: WireValue], isLive: Bool)? {
        guard let merged = try PostgresScopeIndex.storedRows(datasetID: datasetID, [row], connection)[row] else {
            return nil
        }
        var values = try ProtocolJSON.decodeValues(Data(row.key.utf8))
        for (name, cell) in merged.cells { values[name] = cell.value }
        return (values, merged.created != nil && !merged.isDeleted)
    }

    func grantedValues(kind: String, member: String) throws -> Set<String> {
        let result = try connection.execute(
            PostgresSyncStorage.Statements.scopeGrantedNow, [.int8(datasetID), .text(kind), .text(member)])
        return Set(try (0..<result.rowCount).map { try result.string(row: $0, column: 0) })
    }
}
