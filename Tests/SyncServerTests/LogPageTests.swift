import Foundation
import SyncProtocol
import TestSupport
import Testing

@testable import SyncServer

/// A log page keeps its entries as the bytes a pull splices into its `changes` array.
@Suite("Reference server: log pages spliced from the stored bytes")
struct LogPageTests {
    private let site = SiteID(bytes: Data(repeating: 0xA1, count: 16))!
    private let other = SiteID(bytes: Data(repeating: 0xB2, count: 16))!

    /// Texts with the JSON's own separators and non-ASCII in them come back entry by entry, as
    /// stored, and the joined bytes are exactly the entries with commas between them.
    @Test func entriesComeBackAsStoredAndJoinedByCommas() throws {
        let directory = try TemporaryDirectory()
        let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")))
        try storage.createDataset(named: "family")
        let titles = [#"a,b"#, #"],["#, #"quote " and \ back"#, "ünïcode ✓", "", #"{"x":1}"#, "plain"]
        let changes = titles.enumerated().map { index, title in
            Change(
                table: "notes", key: ["id": .text("n\(index)")], op: .insert,
                columns: ["id": .text("n\(index)"), "title": .text(title)],
                clock: ChangeClock(milliseconds: 1_764_000_000_000 + Int64(index), counter: 0)!, site: site,
                seq: Int64(index + 1))
        }
        _ = try storage.storeBatch(changes, site: site, clientSchema: SchemaVersion(1, 0), dataset: "family")
        var read: [Change] = []
        var serial: Int64 = 0
        for limit in [1, 4, 4] {
            let page = try storage.readLog(dataset: "family", after: serial, excluding: other, limit: limit)
            #expect(page.count == min(limit, titles.count - read.count))
            #expect(page.joinedEntries == Array(page.entries.joined(separator: ",").utf8))
            read += try page.entries.map { try JSONDecoder().decode(Change.self, from: Data($0.utf8)) }
            // The bytes a pull splices are a JSON array's members.
            let array = try JSONDecoder().decode([Change].self, from: Data("[".utf8 + page.joinedEntries + "]".utf8))
            #expect(array.map(\.seq) == read.suffix(page.count).map(\.seq))
            serial = page.nextSerial
        }
        #expect(read == changes)
        // Only the excluded site's entries: an empty page that still moves past them.
        let own = try storage.readLog(dataset: "family", after: 0, excluding: site, limit: 10)
        #expect(own.count == 0 && own.joinedEntries.isEmpty && own.entries.isEmpty)
        #expect(own.nextSerial == Int64(titles.count))
    }

    /// A page read excluding no site carries every site's changes and names each site it carries.
    @Test func aPageOfNoSiteInParticularNamesTheSitesItCarries() throws {
        let directory = try TemporaryDirectory()
        let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")))
        try storage.createDataset(named: "family")
        let third = SiteID(bytes: Data(repeating: 0xC3, count: 16))!
        for (index, writer) in [site, site, other].enumerated() {
            let change = Change(
                table: "notes", key: ["id": .text("n\(index)")], op: .insert,
                columns: ["id": .text("n\(index)"), "title": .text("t")],
                clock: ChangeClock(milliseconds: 1_764_000_000_000 + Int64(index), counter: 0)!, site: writer,
                seq: Int64(index + 1))
            _ = try storage.storeBatch([change], site: writer, clientSchema: SchemaVersion(1, 0), dataset: "family")
        }
        let all = try storage.readLog(dataset: "family", after: 0, excluding: nil, limit: 10)
        #expect(all.count == 3 && all.sites == [site, other])
        #expect(all.carriesChanges(of: site) && all.carriesChanges(of: other) && !all.carriesChanges(of: third))
        let first = try storage.readLog(dataset: "family", after: 0, excluding: nil, limit: 2)
        #expect(first.sites == [site] && !first.carriesChanges(of: other))
        // A page without a site's changes is the one that site reads.
        let withoutOther = try storage.readLog(dataset: "family", after: 0, excluding: other, limit: 2)
        #expect(withoutOther == first)
        let withoutSite = try storage.readLog(dataset: "family", after: 0, excluding: site, limit: 10)
        #expect(withoutSite.sites == [other] && withoutSite.count == 1)
    }
}
