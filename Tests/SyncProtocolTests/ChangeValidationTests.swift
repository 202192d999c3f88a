import Foundation
import SyncProtocol
import Testing

/// The checks a server makes on every change before storing a batch: names that could carry SQL
/// never pass, clocks from the future are bounded, and a batch is refused whole, naming the
/// first offending change.
@Suite("Change validation")
struct ChangeValidationTests {
    static let site = SiteID(hex: "9a0c6c1e5b2f4d7a8e3b1c0d2f4a6b8c")!
    static let otherSite = SiteID(hex: "3f1e2d4c5b6a79880716253443526170")!
    static let now: Int64 = 1_764_000_000_000

    func change(
        table: String = "reminders", key: [String: WireValue] = ["id": .text("r1")], op: Change.Operation = .update,
        columns: [String: WireValue] = ["title": .text("Oat milk")], milliseconds: Int64 = now, site: SiteID = site,
        seq: Int64 = 1
    ) -> Change {
        Change(
            table: table, key: key, op: op, columns: columns,
            clock: ChangeClock(milliseconds: milliseconds, counter: 0)!, site: site, seq: seq)
    }

    func problem(_ change: Change, limits: Limits = .standard) -> ChangeValidation.Problem? {
        ChangeValidation.problem(in: change, batchSite: Self.site, limits: limits, now: Self.now)
    }

    @Test func aPlainChangePasses() {
        #expect(problem(change()) == nil)
        #expect(problem(change(op: .delete, columns: [:])) == nil)
        #expect(problem(change(op: .insert, columns: ["id": .text("r1"), "title": .text("a")])) == nil)
        #expect(problem(change(op: .insert, columns: [:])) == nil, "a table with only key columns")
    }

    @Test(arguments: [
        #"reminders""#, "reminders;", "x; DROP TABLE reminders", "due at", "title ", " title", "ti-tle", "a.b", "a`b",
        "a'b", "a[b]", "títle", "тема", "标题", "1st", "9", "", "a\u{0}b", "a\nb", "a\u{200B}b", "ｔitle",
    ])
    func oddIdentifiersAreRefusedWherever(_ name: String) {
        #expect(!ChangeValidation.isPlainIdentifier(name))
        #expect(problem(change(table: name))?.code == .invalidChange, "as a table")
        #expect(problem(change(key: [name: .text("r1")]))?.code == .invalidChange, "as a key column")
        #expect(problem(change(columns: [name: .null]))?.code == .invalidChange, "as a column")
    }

    @Test(arguments: ["a", "A", "_", "_1", "reminders", "dueAt", "due_at", "x9", "T_2_z"])
    func plainIdentifiersPass(_ name: String) {
        #expect(ChangeValidation.isPlainIdentifier(name))
        #expect(problem(change(table: name)) == nil)
    }

    @Test func identifiersMayBeAsLongAsTheLimitAndNoLonger() {
        let longest = String(repeating: "a", count: Limits.standard.maxIdentifierLength)
        #expect(problem(change(table: longest)) == nil)
        #expect(problem(change(table: longest + "a"))?.code == .invalidChange)
        #expect(problem(change(columns: [longest + "a": .null]))?.code == .invalidChange)
        var short = Limits.standard
        short.maxIdentifierLength = 4
        #expect(problem(change(table: "abcd", columns: ["note": .null]), limits: short) == nil)
        #expect(problem(change(table: "abcde", columns: ["note": .null]), limits: short)?.code == .invalidChange)
        #expect(problem(change(table: "abcd", columns: ["notes": .null]), limits: short)?.code == .invalidChange)
    }

    /// SQLite names ignore ASCII case, so "title" and "TITLE" are one column; a change naming it
    /// twice would be applied by whichever a receiver met first.
    @Test func aColumnNamedTwiceInDifferentCaseIsRefused() {
        #expect(problem(change(columns: ["title": .text("a"), "TITLE": .text("b")]))?.code == .invalidChange)
        #expect(
            problem(change(key: ["id": .text("a"), "Id": .text("a")], op: .delete, columns: [:]))?.code
                == .invalidChange)
    }

    @Test func theKeyNamesAColumnAndHoldsNoNull() {
        #expect(problem(change(key: [:]))?.code == .invalidChange)
        #expect(problem(change(key: ["id": .null]))?.code == .invalidChange)
        #expect(problem(change(key: ["list": .text("l"), "member": .null]))?.code == .invalidChange)
        #expect(problem(change(key: ["list": .text("l"), "member": .blob(Data([1, 2]))])) == nil)
        #expect(problem(change(key: ["n": .integer(0)])) == nil)
    }

    @Test func operationsCarryTheColumnsTheySay() {
        #expect(problem(change(op: .delete, columns: ["title": .null]))?.code == .invalidChange, "delete with columns")
        #expect(problem(change(op: .update, columns: [:]))?.code == .invalidChange, "update without columns")
        #expect(problem(change(op: .update, columns: ["id": .text("r2")]))?.code == .invalidChange, "update of the key")
        #expect(
            problem(change(op: .update, columns: ["ID": .text("r1")]))?.code == .invalidChange, "key in another case")
        #expect(problem(change(op: .delete, columns: ["id": .text("r1")]))?.code == .invalidChange)
    }

    /// An insert carries the whole row, key included, and the two must agree.
    @Test func anInsertRepeatsItsKeyColumnsWithTheSameValues() {
        #expect(problem(change(op: .insert, columns: ["id": .text("r1"), "title": .null])) == nil)
        #expect(problem(change(op: .insert, columns: ["ID": .text("r1")])) == nil)
        #expect(problem(change(op: .insert, columns: ["id": .text("r2")]))?.code == .invalidChange)
        #expect(problem(change(op: .insert, columns: ["id": .blob(Data("r1".utf8))]))?.code == .invalidChange)
    }

    @Test func theChangeIsOfTheBatchSite() {
        #expect(problem(change(site: Self.otherSite))?.code == .invalidChange)
    }

    @Test func seqIsBetweenOneAndTwoToTheFiftyThreeMinusOne() {
        #expect(problem(change(seq: 1)) == nil)
        #expect(problem(change(seq: (1 << 53) - 1)) == nil)
        for seq: Int64 in [0, -1, .min, 1 << 53, .max] {
            #expect(problem(change(seq: seq))?.code == .invalidChange, "seq \(seq)")
        }
    }

    /// A clock may be ahead of the server's by the drift limit, not one millisecond more; any
    /// amount behind is fine (offline devices push old changes).
    @Test func clocksAheadByTheDriftLimitPassAndOneMillisecondMoreDoesNot() {
        let drift = Limits.standard.maxClockDriftMilliseconds
        #expect(problem(change(milliseconds: Self.now + drift - 1)) == nil)
        #expect(problem(change(milliseconds: Self.now + drift)) == nil)
        #expect(problem(change(milliseconds: Self.now + drift + 1))?.code == .clockOutOfRange)
        #expect(problem(change(milliseconds: 0)) == nil)
        var strict = Limits.standard
        strict.maxClockDriftMilliseconds = 0
        #expect(problem(change(milliseconds: Self.now), limits: strict) == nil)
        #expect(problem(change(milliseconds: Self.now + 1), limits: strict)?.code == .clockOutOfRange)
    }

    @Test func aBatchIsRefusedWholeAtItsFirstOffendingChange() {
        func push(_ changes: [Change]) -> PushRequest {
            PushRequest(protocolVersion: 1, schemaVersion: SchemaVersion(1, 1), site: Self.site, changes: changes)
        }
        func failure(_ request: PushRequest, limits: Limits = .standard) -> ErrorBody.Detail? {
            do {
                try ChangeValidation.validate(request, limits: limits, now: Self.now)
                return nil
            } catch {
                return error.error
            }
        }
        #expect(failure(push([])) == nil)
        #expect(failure(push([change(seq: 1), change(seq: 3), change(seq: 10)])) == nil, "gaps are fine")
        let repeated = failure(push([change(seq: 1), change(seq: 2), change(seq: 2)]))
        #expect(repeated?.code == .invalidChange)
        #expect(repeated?.changeIndex == 2)
        #expect(failure(push([change(seq: 5), change(seq: 4)]))?.changeIndex == 1)
        let odd = failure(push([change(seq: 1), change(table: "a b", seq: 2), change(site: Self.otherSite, seq: 3)]))
        #expect(odd?.code == .invalidChange)
        #expect(odd?.changeIndex == 1)
        #expect(odd?.message.hasPrefix("change 1: ") == true)
        let future = failure(push([change(seq: 1), change(milliseconds: Self.now + 3_600_000, seq: 2)]))
        #expect(future?.code == .clockOutOfRange)
        #expect(future?.changeIndex == 1)
        var small = Limits.standard
        small.maxChangesPerPush = 2
        #expect(failure(push([change(seq: 1), change(seq: 2)]), limits: small) == nil)
        let tooMany = failure(push([change(seq: 1), change(seq: 2), change(seq: 3)]), limits: small)
        #expect(tooMany?.code == .tooManyChanges)
        #expect(tooMany?.changeIndex == nil)
    }
}
