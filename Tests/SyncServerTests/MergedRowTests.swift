import Foundation
import SyncProtocol
import Testing

@testable import SyncServer

/// A row's cells packed into its state record (`server_rows` from server schema 1.3, `state_rows` since).
@Suite("Reference server: a row's cells packed in its record")
struct MergedRowTests {
    private let creation = ChangeVersion(clock: 1_764_000_000_000 << 16, site: Data(repeating: 0xA1, count: 16))
    private let later = ChangeVersion(clock: (1_764_000_000_001 << 16) | 7, site: Data(repeating: 0xB2, count: 16))

    @Test func everyStorageClassAndVersionComesBackBitForBit() throws {
        let values: [String: WireValue] = [
            "null": .null, "zero": .integer(0), "min": .integer(.min), "max": .integer(.max), "negative": .integer(-1),
            "real": .real(-0.0), "huge": .real(.greatestFiniteMagnitude), "infinite": .real(-.infinity),
            "text": .text("ünïcode ✓ \"quoted\""), "emptyText": .text(""), "blob": .blob(Data([0, 0xFF, 0x80])),
            "emptyBlob": .blob(Data()),
        ]
        var row = MergedRow(created: creation)
        for (index, (name, value)) in values.sorted(by: { $0.key < $1.key }).enumerated() {
            row.cells[name] = MergedRow.Cell(value: value, version: index.isMultiple(of: 2) ? creation : later)
        }
        let packed = try #require(row.packedCells)
        let read = try MergedRow(created: creation, deleted: nil, packedCells: packed)
        #expect(read == row)
        // -0.0 == 0.0, so the bits are compared too.
        if case .real(let real) = read.cells["real"]?.value {
            #expect(real.bitPattern == (-0.0 as Double).bitPattern)
        } else {
            Issue.record("the real came back as \(String(describing: read.cells["real"]))")
        }
        // A cell written by the row's creation does not repeat the version (8 + 17 bytes).
        var allCreated = row
        for (name, _) in allCreated.cells { allCreated.cells[name]!.version = creation }
        #expect(try #require(allCreated.packedCells).count == packed.count - 6 * 25)
    }

    /// Column names are told apart by their bytes, as SQLite tells them apart: "é" composed and
    /// decomposed are two cells, though Swift's `==` takes them for one string.
    @Test func namesThatDifferOnlyInTheirUnicodeSpellingAreTwoCells() throws {
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed)
        var row = MergedRow(created: creation)
        row.cells[decomposed] = MergedRow.Cell(value: .text("decomposed"), version: creation)
        row.cells[composed] = MergedRow.Cell(value: .text("composed"), version: later)
        row.cells["zeta"] = MergedRow.Cell(value: .integer(1), version: creation)
        row.cells[decomposed] = MergedRow.Cell(value: .text("decomposed again"), version: later)
        let names = row.cells.map { Array($0.name.utf8) }
        #expect(names == [Array(decomposed.utf8), Array(composed.utf8), Array("zeta".utf8)])
        #expect(row.cells.map { $0.cell.value } == [.text("decomposed again"), .text("composed"), .integer(1)])
        let read = try MergedRow(created: creation, deleted: nil, packedCells: row.packedCells)
        #expect(read == row)
    }

    @Test func aRowKnownOnlyFromUpdatesKeepsEachCellsVersion() throws {
        var row = MergedRow()
        row.cells["title"] = MergedRow.Cell(value: .text("t"), version: later)
        let read = try MergedRow(created: nil, deleted: nil, packedCells: row.packedCells)
        #expect(read == row)
        #expect(MergedRow(created: creation, deleted: later).packedCells == nil)
    }

    @Test func aDamagedRecordIsRefusedWithAStorageError() throws {
        var row = MergedRow(created: creation)
        row.cells["title"] = MergedRow.Cell(value: .text("a title"), version: later)
        let packed = try #require(row.packedCells)
        for damaged in [packed.dropLast(), Data([9]) + packed.dropFirst(), packed + Data([3, 0x61, 7])] {
            let error = #expect(throws: ServerError.self) {
                try MergedRow(created: creation, deleted: nil, packedCells: damaged)
            }
            #expect(error?.kind == .storage)
        }
        // A cell written by the creation of a row the record says was never inserted.
        let byCreation = try #require(
            MergedRow(created: creation, cells: ["a": .init(value: .null, version: creation)]).packedCells)
        #expect(throws: ServerError.self) { try MergedRow(created: nil, deleted: nil, packedCells: byCreation) }
    }

    @Test func changesOfOneRowMergeInMemoryByTheProtocolsRule() throws {
        let site = SiteID(bytes: Data(repeating: 0xA1, count: 16))!
        func change(_ op: Change.Operation, _ columns: [String: WireValue], at milliseconds: Int64) -> FoldChange {
            FoldChange(
                Change(
                    table: "notes", key: ["id": .text("n1")], op: op, columns: columns,
                    clock: ChangeClock(milliseconds: milliseconds, counter: 0)!, site: site, seq: milliseconds),
                key: #"{"id":{"text":"n1"}}"#)
        }
        func values(_ row: MergedRow) -> [String: WireValue] {
            Dictionary(uniqueKeysWithValues: row.cells.map { ($0.name, $0.cell.value) })
        }
        var row = MergedRow()
        // An update that arrived before its insert keeps its newer value; the older one is dropped.
        row.merge(change(.update, ["title": .text("newer")], at: 3))
        row.merge(change(.insert, ["id": .text("n1"), "title": .text("first"), "done": .integer(0)], at: 2))
        row.merge(change(.update, ["done": .integer(1)], at: 1))
        #expect(values(row) == ["title": .text("newer"), "done": .integer(0)])
        #expect(row.created?.clock == ChangeClock(milliseconds: 2, counter: 0)!.packed)
        // A delete drops the cells and wins over older inserts; a newer insert brings the row back.
        row.merge(change(.delete, [:], at: 4))
        row.merge(change(.insert, ["id": .text("n1"), "title": .text("old")], at: 3))
        #expect(row.isDeleted && row.cells.isEmpty)
        row.merge(change(.insert, ["id": .text("n1"), "title": .text("back")], at: 5))
        #expect(!row.isDeleted)
        #expect(values(row) == ["title": .text("back")])
        let read = try MergedRow(created: row.created, deleted: row.deleted, packedCells: row.packedCells)
        #expect(read == row)
    }

    /// A new row's cells are packed straight from its one insert (the fold's fast path): the
    /// same bytes as merging the insert into an empty row and packing that, for every storage
    /// class, names in byte order, no columns but the key, and a clock below every version.
    @Test func aRowCreatedByOneInsertPacksAsTheMergeWouldPackIt() throws {
        let site = SiteID(bytes: Data(repeating: 0xA1, count: 16))!
        let key: [String: WireValue] = ["id": .text("n1")]
        let columnSets: [[String: WireValue]] = [
            key.merging([
                "title": .text("ünïcode ✓"), "done": .integer(-1), "rank": .real(-0.0), "note": .null,
                "photo": .blob(Data([0, 0xFF])), "caf\u{E9}": .text("composed"), "Zeta": .blob(Data()),
            ]) { $1 },
            key,
        ]
        var scratch: [UInt8] = [9, 9, 9]
        for columns in columnSets {
            // From 2^47 ms on a clock packs below zero, older than every version.
            for clock in [
                ChangeClock(milliseconds: 1_764_000_000_000, counter: 3)!,
                ChangeClock(milliseconds: 1 << 47, counter: 0)!,
            ] {
                let insert = FoldChange(
                    Change(table: "notes", key: key, op: .insert, columns: columns, clock: clock, site: site, seq: 1),
                    key: #"{"id":{"text":"n1"}}"#)
                var merged = MergedRow()
                merged.merge(insert)
                let packed = MergedRow.packCellsOfRow(createdBy: insert, into: &scratch) ? Data(scratch) : nil
                #expect(packed == merged.packedCells, "columns \(columns.keys.sorted()), clock \(clock.packed)")
            }
        }
    }
}
