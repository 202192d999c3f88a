import Foundation
import OfflineStore
import SyncProtocol
import TestSupport
import Testing

@testable import SyncClient

/// Columns declared out of byte order (an uppercase name sorts first, two names share their first
/// eight bytes), and a key of two columns declared out of byte order too.
private enum PushBodyPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [V1.self]
    static let stages: [MigrationStage] = []

    enum V1: VersionedSchema {
        static let versionIdentifier: Schema.Version = "1.0.0"
        static let models: [any Model.Type] = [Widget.self, Pair.self]
    }

    enum Widget: Model {
        static let tableDefinition = TableDefinition("widgets") {
            Column("zeta", .text).primaryKey()
            Column("description_long", .text)
            Column("alpha", .integer)
            Column("description_a", .real)
            Column("Beta", .blob)
            Column("anything", .any)
        }
    }

    enum Pair: Model {
        static let tableDefinition = TableDefinition("pairs") {
            Column("second", .text).notNull()
            Column("first", .text).notNull()
            Column("note", .text)
            PrimaryKey("second", "first")
        }
    }
}

@Suite struct PushBodyTests {
    /// The body written from the queue's entries is, byte for byte, what `JSONEncoder` (the
    /// protocol's definition) and ``CanonicalJSONWriter`` write for the same changes as `Change`s:
    /// inserts, updates and deletes, composite keys, every storage class, escapes, names out of order.
    @Test func theBodyFromTheQueueIsTheEncodersBody() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("store.sqlite"))
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: PushBodyPlan.self))
        let texts = ["plain", "quote \" backslash \\ slash / newline \n tab \t bell \u{7}", "é 😀", ""]
        for (index, text) in texts.enumerated() {
            try db.execute(
                sql: """
                    INSERT INTO widgets (zeta, description_long, alpha, description_a, "Beta", anything)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: StatementArguments([
                    .text("w\(index)"), .text(text), .integer(Int64.min + Int64(index)),
                    [.real(0.1), .real(1e-5), .real(2), .real(-1.5e300)][index],
                    .blob(Data([0, 0xFF, UInt8(index)])), [.null, .integer(-7), .real(3.25), .text("x")][index],
                ]))
            try db.execute(
                sql: "INSERT INTO pairs (second, first, note) VALUES (?, ?, ?)",
                arguments: StatementArguments([.text("s\(index)"), .text("f\(index) \"q\""), .text(text)]))
        }
        try db.execute(sql: "UPDATE widgets SET alpha = 5 WHERE zeta = 'w1'")
        try db.execute(sql: "UPDATE pairs SET note = NULL WHERE second = 's2'")
        try db.execute(sql: "DELETE FROM widgets WHERE zeta = 'w2'")
        try db.execute(sql: "DELETE FROM pairs WHERE second = 's3'")

        let entries = try log.pendingChanges(db, after: nil, limit: 100) { $0 }
        #expect(Set(entries.map(\.operation)) == [.insert, .update, .delete])
        let site = try #require(SiteID(hex: "0123456789abcdef0123456789ABCDEF"))
        let version = SchemaVersion(1, 0)
        let changes = entries.map { Change($0, site: site) }
        let request = PushRequest(
            protocolVersion: ProtocolVersion.current, schemaVersion: version, site: site, changes: changes)

        let body = try PushBody.encode(entries, schemaVersion: version, site: site)
        #expect(
            String(decoding: body, as: UTF8.self) == String(decoding: try ProtocolJSON.encode(request), as: UTF8.self))
        var writer = CanonicalJSONWriter()
        try writer.write(request)
        #expect(body == writer.data)
        #expect(try ProtocolJSON.decodePush(from: body, limits: .standard) == request)
    }
}
