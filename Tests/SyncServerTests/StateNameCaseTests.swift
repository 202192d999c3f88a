import Foundation
import SyncProtocol
import Testing

/// Section 5.2: table and column names are compared without regard to ASCII case, in the merged
/// state a snapshot serves too, on both backends.
@Suite("Names in the server's state ignore ASCII case")
struct StateNameCaseTests {
    @Test(arguments: StorageBackend.allCases)
    func anInsertAndAnUpdateSpelledInAnotherCaseAreOneRow(backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "cases")
        let writer = TestPeer(server, dataset: "cases", token: token, siteByte: 0x11)
        let clock = { (milliseconds: Int64) in ChangeClock(milliseconds: milliseconds, counter: 0)! }
        _ = try writer.push([
            Change(
                table: "CaseTable", key: ["ID": .text("r1")], op: .insert,
                columns: ["ID": .text("r1"), "Title": .text("first")], clock: clock(1_764_000_000_000),
                site: writer.site, seq: 1),
            Change(
                table: "casetable", key: ["id": .text("r1")], op: .update, columns: ["title": .text("second")],
                clock: clock(1_764_000_000_001), site: writer.site, seq: 2),
        ])
        let reader = TestPeer(server, dataset: "cases", token: token, siteByte: 0x22)
        let snapshot = try reader.pullAll().changes
        #expect(Set(snapshot.map(\.table)) == ["casetable"])
        #expect(Set(snapshot.map(\.key)) == [["id": .text("r1")]])
        let insert = try #require(snapshot.first { $0.op == .insert })
        // The insert carries the row's current values, the update the version that wrote the title.
        #expect(insert.columns == ["id": .text("r1"), "title": .text("second")])
        let update = try #require(snapshot.first { $0.op == .update })
        #expect(update.columns == ["title": .text("second")])
        #expect(snapshot.count == 2)
    }
}
