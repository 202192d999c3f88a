import Foundation
import SyncProtocol
import Testing

@testable import SyncServer

/// The order a fold merges its changes in: the state's primary key in SQLite's byte order, and
/// one row's changes in log order whatever run handed them over.
@Suite("Reference server: the order of a fold")
struct FoldWorkTests {
    private let site = SiteID(bytes: Data(repeating: 0xA1, count: 16))!

    private func change(_ table: String, _ id: String, seq: Int64) throws -> FoldChange {
        let change = Change(
            table: table, key: ["id": .text(id)], op: .update, columns: ["title": .text("v\(seq)")],
            clock: ChangeClock(milliseconds: 1_764_000_000_000 + seq, counter: 0)!, site: site, seq: seq)
        return FoldChange(change, key: try change.canonicalKeyJSON())
    }

    @Test func rowsComeInKeyByteOrderAndEachRowsChangesInSerialOrder() throws {
        var work = FoldWork()
        // Handed over out of serial order, as pushes committed in one group may hand over.
        try work.add(
            [change("notes", "b", seq: 4), change("Notes", "a", seq: 5), change("notes", "a", seq: 6)],
            firstSerial: 4, datasetID: 1)
        try work.add(
            [
                change("notes", "a", seq: 1), change("notes", "ab", seq: 2), change("notes", "é", seq: 3),
                change("notes", "B", seq: 7),
            ], firstSerial: 1, datasetID: 1)
        try work.add([change("notes", "a", seq: 8)], firstSerial: 1, datasetID: 0)
        var rows: [(datasetID: Int64, table: String, key: String, clocks: [Int64])] = []
        try work.forEachRow { datasetID, changes, serials in
            #expect(serials.count == changes.count && serials == serials.sorted())
            rows.append(
                (
                    datasetID, changes[0].table, changes[0].key,
                    changes.map { ChangeClock(packed: $0.version.clock)!.milliseconds - 1_764_000_000_000 }
                ))
            #expect(changes.allSatisfy { $0.table == changes[0].table && $0.key == changes[0].key })
        }
        let order = rows.map { "\($0.datasetID) \($0.table) \($0.key) \($0.clocks)" }
        #expect(
            order == [
                #"0 notes {"id":{"text":"a"}} [8]"#,
                #"1 Notes {"id":{"text":"a"}} [5]"#,
                #"1 notes {"id":{"text":"B"}} [7]"#,
                #"1 notes {"id":{"text":"a"}} [1, 6]"#,
                #"1 notes {"id":{"text":"ab"}} [2]"#,
                #"1 notes {"id":{"text":"b"}} [4]"#,
                #"1 notes {"id":{"text":"é"}} [3]"#,
            ])
    }

    /// Keys are rows by their bytes, as the state's primary key compares them: two spellings of
    /// "é" (composed, decomposed) with the same first eight bytes past the common prefix are two
    /// rows, though Swift's `==` takes them for one string.
    @Test func keysThatDifferOnlyInTheirUnicodeSpellingAreTwoRows() throws {
        var work = FoldWork()
        try work.add(
            [
                change("notes", "document-e\u{301}", seq: 1), change("notes", "document-\u{E9}", seq: 2),
                change("notes", "x", seq: 3),
            ], firstSerial: 1, datasetID: 1)
        var rows: [[UInt8]] = []
        try work.forEachRow { _, changes, _ in
            #expect(changes.count == 1)
            rows.append(Array(changes[0].key.utf8))
        }
        #expect(rows.count == 3)
        #expect(Set(rows).count == 3)
    }

    @Test func aRunAfterASerialKeepsOnlyWhatFollowsIt() throws {
        let run = try StateFolder.Run(
            firstSerial: 10, changes: [change("notes", "a", seq: 1), change("notes", "b", seq: 2)])
        #expect(run.after(9)?.firstSerial == 10)
        #expect(run.after(9)?.changes.count == 2)
        #expect(run.after(10)?.firstSerial == 11)
        #expect(run.after(10)?.changes.map(\.key) == [#"{"id":{"text":"b"}}"#])
        #expect(run.after(11) == nil)
    }
}
