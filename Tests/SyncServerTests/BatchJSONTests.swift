import Foundation
import SyncProtocol
import Testing

@testable import SyncServer

/// The texts a server keeps for a pushed batch are the same whether they are cut from the body
/// (a client's canonical body) or written again (any other body, or a change the reader could not
/// vouch for).
@Suite struct BatchJSONTests {
    @Test func textsCutFromABodyAreTheTextsWrittenAgain() throws {
        let site = try #require(SiteID(hex: "0f1e2d3c4b5a69788796a5b4c3d2e1f0"))
        var changes: [Change] = []
        for index in 1...12 {
            let key: [String: WireValue] = ["id": .text("t\(index)"), "list": .integer(Int64(index % 3))]
            var columns = key
            columns["title"] = .text(index % 4 == 0 ? "tab\there" : "plain \(index)")
            columns["updatedAt"] = .real(index % 3 == 0 ? 0.5 : 1.7e9 + Double(index))
            let clock = try #require(ChangeClock(milliseconds: 1_764_000_000_000 + Int64(index), counter: 0))
            changes.append(
                Change(
                    table: "todos", key: key, op: index % 6 == 0 ? .delete : .insert,
                    columns: index % 6 == 0 ? [:] : columns, clock: clock, site: site, seq: Int64(index)))
        }
        let canonical = try ProtocolJSON.encode(
            PushRequest(protocolVersion: 1, schemaVersion: SchemaVersion(1, 0), site: site, changes: changes))
        let loose = try JSONSerialization.data(
            withJSONObject: try JSONSerialization.jsonObject(with: canonical), options: [.prettyPrinted])
        let written = try BatchJSON(changes)
        var cutCount = 0
        for body in [canonical, loose] {
            let (push, texts) = try ProtocolJSON.decodePushKeepingText(from: body, limits: .standard)
            let cut = try BatchJSON(push.changes, texts: texts, in: body)
            #expect(cut.bodies == written.bodies)
            #expect(cut.keys == written.keys)
            cutCount += texts.filter { $0 != nil }.count
        }
        // Only the canonical body's changes without a fraction or an escaped tab are cut from it
        // (deletes carry neither).
        let plain = (1...12).filter { $0 % 6 == 0 || ($0 % 3 != 0 && $0 % 4 != 0) }
        #expect(cutCount == plain.count)
        #expect(plain.count == 8)
    }
}
