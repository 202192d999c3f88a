import Foundation
import OfflineStoreSQLite
import SyncProtocol

/// The scope index's writes of one fold (``StateScopeIndex/fold(_:serials:datasetID:rules:stored:writes:_:)``):
/// each link and grant a row's moves open is written once, with the position it was closed at
/// when a later move of the same fold closed it, ``rowsPerInsert`` by one statement bound in place
/// from one reused buffer (``BulkArguments``); a link or grant the index held before the fold is
/// closed by an update at once. A push's rows are new, so a fold of them only inserts: a
/// statement per link, its SQL text found in the connection's cache and its values boxed, cost
/// more than SQLite's work.
///
/// Nothing reads the index between the fold's rows (each row is folded once, from what the index
/// held before the fold), so the inserts may wait for the statement to fill. `OR FAIL`: a
/// statement of many rows that may abort keeps a statement journal, a copy of every page it
/// changes, written out once it outgrows memory; a failure here fails the fold's transaction,
/// which rolls back whole.
///
/// ```swift
/// var writes = try StateScopeIndexWrites(db)
/// try writes.write(datasetID: id, table: "lists", key: key, moves: moves)
/// try writes.flush()
/// ```
struct StateScopeIndexWrites {
    static let rowsPerInsert = 64

    private let db: Database
    private let insertLinks: Statement
    private let insertGrants: Statement
    private var links: [Entry] = []
    private var grants: [Entry] = []
    private var arguments = BulkArguments()

    init(_ db: Database) throws {
        self.db = db
        insertLinks = try db.cachedStatement(Self.insertSQL(table: "state_scope_links", rows: Self.rowsPerInsert))
        insertGrants = try db.cachedStatement(Self.insertSQL(table: "state_scope_grants", rows: Self.rowsPerInsert))
    }

    /// The insert of `rows` rows into `table` (the links' or the grants' table: both have eight
    /// columns, the row, the link's or grant's three parts and the two positions).
    private static func insertSQL(table: String, rows: Int) -> String {
        let columns =
            table == "state_scope_links"
            ? "datasetID, tableName, key, kind, a, b, addedAt, removedAt"
            : "datasetID, tableName, key, bucketKind, member, value, addedAt, removedAt"
        return """
            INSERT OR FAIL INTO \(table) (\(columns))
            VALUES \(Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?)", count: rows).joined(separator: ", "))
            """
    }

    /// Writes one row's moves, in log order, the first from what the index held of the row before
    /// the fold.
    mutating func write(datasetID: Int64, table: String, key: String, moves: [RowScope.Move]) throws {
        guard !moves.isEmpty else { return }
        var openLinks: [RowScope.Link: Int64] = [:]
        var openGrants: [MembershipGrant: Int64] = [:]
        for move in moves {
            for link in move.from.links.subtracting(move.to.links) {
                if let added = openLinks.removeValue(forKey: link) {
                    appendLink(datasetID, table, key, link, added: added, removed: move.position)
                } else {
                    try db.execute(
                        """
                        UPDATE state_scope_links SET removedAt = \(move.position)
                        WHERE datasetID = \(datasetID) AND tableName = \(table) AND key = \(key)
                            AND kind = \(link.kind) AND a = \(link.a) AND b = \(link.b) AND removedAt IS NULL
                        """)
                }
            }
            for link in move.to.links.subtracting(move.from.links) { openLinks[link] = move.position }
            for grant in move.from.grants.subtracting(move.to.grants) {
                if let added = openGrants.removeValue(forKey: grant) {
                    appendGrant(datasetID, table, key, grant, added: added, removed: move.position)
                } else {
                    try db.execute(
                        """
                        UPDATE state_scope_grants SET removedAt = \(move.position)
                        WHERE datasetID = \(datasetID) AND tableName = \(table) AND key = \(key)
                            AND bucketKind = \(grant.kind) AND member = \(grant.member) AND value = \(grant.value)
                            AND removedAt IS NULL
                        """)
                }
            }
            for grant in move.to.grants.subtracting(move.from.grants) { openGrants[grant] = move.position }
        }
        for (link, added) in openLinks { appendLink(datasetID, table, key, link, added: added, removed: nil) }
        for (grant, added) in openGrants { appendGrant(datasetID, table, key, grant, added: added, removed: nil) }
        try insertFull()
    }

    /// Inserts what is kept, one statement per row.
    mutating func flush() throws {
        if !links.isEmpty {
            let statement = try db.cachedStatement(Self.insertSQL(table: "state_scope_links", rows: 1))
            for index in links.indices {
                let entry = links[index...index]
                try insert(entry, by: statement)
            }
            links.removeAll()
        }
        if !grants.isEmpty {
            let statement = try db.cachedStatement(Self.insertSQL(table: "state_scope_grants", rows: 1))
            for index in grants.indices {
                let entry = grants[index...index]
                try insert(entry, by: statement)
            }
            grants.removeAll()
        }
    }

    /// A link or grant to insert: its row, its three parts and the positions it held between.
    private struct Entry {
        var datasetID: Int64
        var table: String
        var key: String
        var parts: (String, String, String)
        var added: Int64
        var removed: Int64?
    }

    private mutating func appendLink(
        _ datasetID: Int64, _ table: String, _ key: String, _ link: RowScope.Link, added: Int64, removed: Int64?
    ) {
        links.append(
            Entry(
                datasetID: datasetID, table: table, key: key, parts: (link.kind, link.a, link.b), added: added,
                removed: removed))
    }

    private mutating func appendGrant(
        _ datasetID: Int64, _ table: String, _ key: String, _ grant: MembershipGrant, added: Int64, removed: Int64?
    ) {
        grants.append(
            Entry(
                datasetID: datasetID, table: table, key: key, parts: (grant.kind, grant.member, grant.value),
                added: added, removed: removed))
    }

    /// Inserts the links and grants kept once there are ``rowsPerInsert`` of them.
    private mutating func insertFull() throws {
        while links.count >= Self.rowsPerInsert {
            let batch = links.prefix(Self.rowsPerInsert)
            try insert(batch, by: insertLinks)
            links.removeFirst(Self.rowsPerInsert)
        }
        while grants.count >= Self.rowsPerInsert {
            let batch = grants.prefix(Self.rowsPerInsert)
            try insert(batch, by: insertGrants)
            grants.removeFirst(Self.rowsPerInsert)
        }
    }

    private mutating func insert(_ entries: ArraySlice<Entry>, by statement: Statement) throws {
        arguments.removeAll()
        for entry in entries {
            arguments.append(entry.datasetID)
            arguments.append(text: entry.table)
            arguments.append(text: entry.key)
            arguments.append(text: entry.parts.0)
            arguments.append(text: entry.parts.1)
            arguments.append(text: entry.parts.2)
            arguments.append(entry.added)
            arguments.append(entry.removed)
        }
        try statement.execute(arguments)
    }
}
