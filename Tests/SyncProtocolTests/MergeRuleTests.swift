import Foundation
import SyncProtocol
import TestSupport
import Testing

/// `MergeRule` against the table of `Protocol/vectors/merge/`, written from Protocol §8.2: each
/// change's verdict and the row it leaves, in the given order and, where the table says so, in
/// every order. The row here is kept as a server keeps it (versions and cells, no stash), the
/// least a receiver can keep; the client and both server backends are checked against the same
/// table by their own suites.
@Suite("The merge rule")
struct MergeRuleTests {
    /// A row as the rule's caller keeps it: versions, and each column's value and version.
    private struct Row {
        var versions = MergeRule.Row(created: nil, deleted: nil)
        var cells: [String: (value: WireValue, version: ChangeVersion)] = [:]

        mutating func apply(_ change: Change) -> MergeVector.Outcome {
            let incoming = ChangeVersion(change.clock, change.site)
            let before = versions
            let verdict = MergeRule.verdict(
                of: change.op, at: incoming, row: before, isPresent: before.created != nil && !before.isDeleted)
            switch verdict {
            case .superseded:
                return .superseded
            case .delete:
                versions.deleted = incoming
                cells = [:]
                return .applied
            case .create:
                versions.created = incoming
                cells = cells.filter { MergeRule.waitingColumnStays($0.value.version, afterCreationAt: incoming) }
            case .merge(let newCreation):
                if newCreation { versions.created = incoming }
            case .waitForRow:
                break
            }
            var wrote = false
            for (name, value) in change.columns where change.key[name] == nil {
                guard MergeRule.writesColumn(at: incoming, over: cells[name]?.version, row: before) else { continue }
                cells[name] = (value, incoming)
                wrote = true
            }
            if verdict == .merge(newCreation: true) {
                for (name, cell) in cells where MergeRule.isDatedByCreation(cell.version, row: before) {
                    cells[name] = (cell.value, incoming)
                }
            }
            switch verdict {
            case .waitForRow: return .waiting
            case .create: return .applied
            default: return wrote ? .applied : .superseded
            }
        }

        var state: MergedRowState {
            let kind: MergedRowState.Kind =
                versions.isDeleted ? .deleted : versions.created == nil ? .waiting : .live
            return MergedRowState(
                kind, created: versions.created, deleted: versions.deleted,
                columns: cells.mapValues { MergedRowState.Cell($0.value, $0.version) })
        }
    }

    @Test(arguments: try MergeVector.all())
    func theRuleGivesEachVectorsVerdictsAndRow(vector: MergeVector) {
        var row = Row()
        #expect(vector.changes.map { row.apply($0) } == vector.outcomes)
        for order in vector.orders {
            var row = Row()
            for change in order { _ = row.apply(change) }
            #expect(row.state == vector.final, "in the order \(order.map { "\($0.op) \($0.clock)" })")
        }
    }

    @Test func theTableCoversEveryVerdictAndEveryRuleOfSection8_2() throws {
        let vectors = try MergeVector.all()
        #expect(vectors.count >= 20)
        let rules = Set(vectors.flatMap { $0.rule.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init) })
        for rule in ["4", "5", "6", "7", "8", "9"] { #expect(rules.contains(rule), "no vector of rule \(rule)") }
        let outcomes = Set(vectors.flatMap(\.outcomes))
        #expect(outcomes == [.applied, .superseded, .waiting])
    }
}
