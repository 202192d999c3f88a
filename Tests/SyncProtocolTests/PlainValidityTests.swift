import Foundation
import TestSupport
import Testing

@testable import SyncProtocol

/// `ChangeValidation.problem` answers nil straight away for a change `isPlainlyValid` vouches
/// for; that shortcut must never vouch for a change the full rules refuse.
@Suite("Change validation shortcut")
struct PlainValidityTests {
    static let site = SiteID(hex: "9a0c6c1e5b2f4d7a8e3b1c0d2f4a6b8c")!
    static let now: Int64 = 1_764_000_000_000

    @Test func theShortcutVouchesOnlyForChangesTheFullRulesAccept() {
        var random = SeededGenerator(seed: 0x7a11d)
        let names = [
            "id", "ID", "Id", "title", "TITLE", "done", "_x", "a1", "1a", "a b", "é", "x;y", "",
            String(repeating: "n", count: 129),
        ]
        let values: [WireValue] = [
            .null, .text("r1"), .text("r2"), .integer(1), .real(0), .real(-0.0), .blob(Data([1])),
        ]
        let sites = [Self.site, SiteID(bytes: Data(count: 16))!]
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        var vouched = 0
        var accepted = 0
        for _ in 0..<20_000 {
            var key: [String: WireValue] = [:]
            for _ in 0..<Int(random.next() % 3) { key[random.next() % 2 == 0 ? "id" : pick(names)] = pick(values) }
            var columns: [String: WireValue] = [:]
            for _ in 0..<Int(random.next() % 4) {
                columns[random.next() % 2 == 0 ? "title" : pick(names)] = pick(values)
            }
            if random.next() % 3 == 0, let (name, value) = key.first {
                columns[name] = random.next() % 2 == 0 ? value : pick(values)
            }
            let change = Change(
                table: random.next() % 8 == 0 ? pick(names) : "items", key: key, op: pick(Change.Operation.allCases),
                columns: columns,
                clock: ChangeClock(
                    milliseconds: Self.now + Int64(random.next() % 600_000) - 100_000, counter: 0)!,
                site: random.next() % 8 == 0 ? pick(sites) : Self.site,
                seq: pick([1, 2, 0, -1, (1 << 53) - 1, 1 << 53]))
            var limits = Limits.standard
            if random.next() % 8 == 0 { limits.maxIdentifierLength = 2 }
            let full = ChangeValidation.firstProblem(in: change, batchSite: Self.site, limits: limits, now: Self.now)
            if full == nil { accepted += 1 }
            if ChangeValidation.isPlainlyValid(change, batchSite: Self.site, limits: limits, now: Self.now) {
                vouched += 1
                #expect(full == nil, "\(change)")
            }
        }
        // It vouches for most of what the full rules accept (not for a key column repeated in
        // another case, which they accept).
        #expect(vouched > 300)
        #expect(vouched * 10 >= accepted * 8, "\(vouched) of \(accepted)")
    }
}
