import Foundation
import SyncProtocol
import Testing

/// Section 5.2: a change pushed under a version with a definition is stored with the names its
/// definition declares, so one row is one row in the merged state whatever case its changes use,
/// and is served in one spelling, on both backends.
@Suite("One spelling of each name in the server's state")
struct StateNameCaseTests {
    static let definition = SchemaDefinition(tables: [
        .init(
            name: "CaseTable", isStrict: true,
            columns: [
                .init(name: "ID", type: "TEXT", isNotNull: true, primaryKeyPosition: 1),
                .init(name: "Title", type: "TEXT"),
            ])
    ])

    static func changes(_ site: SiteID) -> [Change] {
        let clock = { (milliseconds: Int64) in ChangeClock(milliseconds: milliseconds, counter: 0)! }
        return [
            Change(
                table: "casetable", key: ["id": .text("r1")], op: .insert,
                columns: ["id": .text("r1"), "title": .text("first")], clock: clock(1_764_000_000_000),
                site: site, seq: 1),
            Change(
                table: "CASETABLE", key: ["Id": .text("r1")], op: .update, columns: ["TITLE": .text("second")],
                clock: clock(1_764_000_000_001), site: site, seq: 2),
        ]
    }

    @Test(arguments: StorageBackend.allCases)
    func changesSpeltInAnotherCaseAreStoredAsDeclared(backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "cases")
        var writer = TestPeer(server, dataset: "cases", token: token, siteByte: 0x11)
        writer.schema = SchemaDescription(
            version: SchemaVersion(1, 0), fingerprint: Self.definition.fingerprint, tables: [:],
            definition: Self.definition)
        #expect(try writer.hello().verdict == .compatible)
        _ = try writer.push(Self.changes(writer.site))
        var reader = TestPeer(server, dataset: "cases", token: token, siteByte: 0x22)
        reader.schema = writer.schema
        let pulled = try reader.pullAll()
        let snapshot = pulled.changes
        #expect(Set(snapshot.map(\.table)) == ["CaseTable"])
        #expect(Set(snapshot.map(\.key)) == [["ID": .text("r1")]])
        let insert = try #require(snapshot.first { $0.op == .insert })
        // The insert carries the row's current values, the update the version that wrote the title.
        #expect(insert.columns == ["ID": .text("r1"), "Title": .text("second")])
        let update = try #require(snapshot.first { $0.op == .update })
        #expect(update.columns == ["Title": .text("second")])
        #expect(snapshot.count == 2)
        // The log holds them as stored, spelt as declared too.
        _ = try writer.push([
            Change(
                table: "casetable", key: ["id": .text("r2")], op: .insert, columns: ["id": .text("r2")],
                clock: ChangeClock(milliseconds: 1_764_000_000_002, counter: 0)!, site: writer.site, seq: 3)
        ])
        let log = try reader.pullAll(from: pulled.cursor).changes
        #expect(log.map(\.table) == ["CaseTable"] && log.map(\.key) == [["ID": .text("r2")]], "\(log)")
    }
}
