import Foundation
import OfflineStore
import SyncProtocol
import SyncStoreBridge
import TestSupport
import Testing

@testable import SyncClient

/// The change log's apply against the table of `Protocol/vectors/merge/` (Protocol §8.2): each
/// change applied as a pulled batch of its own, in the given order and, where the table says so,
/// in every order, and the row read back from the table and the log.
@Suite("The merge rule's vectors: the client")
struct MergeVectorClientTests {
    private enum ItemsPlan: MigrationPlan {
        static let schemas: [any VersionedSchema.Type] = [V1.self]
        static let stages: [MigrationStage] = []

        enum V1: VersionedSchema {
            static let versionIdentifier: Schema.Version = "1.0.0"
            static let models: [any Model.Type] = [Item.self]
        }

        enum Item: Model {
            static let tableDefinition = TableDefinition("items") {
                Column("id", .text).primaryKey()
                Column("a", .integer)
                Column("b", .integer)
            }
        }
    }

    private struct Store {
        let db: Database
        let log: ChangeLog

        init(_ path: String) throws {
            db = try Database(path: path)
            log = try ChangeLog.open(db, migrator: try Migrator(plan: ItemsPlan.self))
        }

        /// What applying `change` alone did: applied, superseded or stashed.
        func apply(_ change: Change) throws -> MergeVector.Outcome? {
            let outcome = try log.apply([IncomingChange(change)], to: db)
            #expect(outcome.refused.isEmpty, "\(outcome.refused)")
            switch (outcome.applied, outcome.superseded, outcome.stashed) {
            case (1, 0, _): return .applied
            case (0, 1, _): return .superseded
            case (0, 0, 1): return .waiting
            default: return nil
            }
        }

        /// The row as the table and the log hold it; the columns' versions as the log holds them.
        func state() throws -> MergedRowState {
            let versions = Dictionary(
                uniqueKeysWithValues: try db.fetchAll(
                    """
                    SELECT c.columnName, c.clock, s.siteID FROM ostore_meta.ostore_changes AS c
                    JOIN ostore_meta.ostore_tables AS t ON t.id = c.tableID
                    JOIN ostore_meta.ostore_sites AS s ON s.id = c.site
                    WHERE t.name = 'items' AND c.pk = 'r1'
                    """
                ).map { row in
                    (
                        try row.decode(String.self, at: 0),
                        ChangeVersion(clock: try row.decode(at: 1), site: try row.decode(at: 2))
                    )
                })
            let created = versions[""]
            let deleted = versions["-"]
            guard let row = try db.fetchOne("SELECT a, b FROM items WHERE id = 'r1'") else {
                if let deleted, created.map({ deleted > $0 }) ?? true {
                    return MergedRowState(.deleted, created: created, deleted: deleted, columns: [:])
                }
                // A row known only from updates waits in the stash, whole changes by version.
                var columns: [String: MergedRowState.Cell] = [:]
                for text in try db.fetchAll(String.self, "SELECT change FROM ostore_meta.ostore_stash") {
                    let change = try JSONDecoder().decode(IncomingChange.self, from: Data(text.utf8))
                    let version = ChangeVersion(clock: change.clock.packed, site: change.siteID)
                    for (name, value) in change.columns where columns[name]?.version.map({ version > $0 }) ?? true {
                        columns[name] = MergedRowState.Cell(WireValue(value), version)
                    }
                }
                return MergedRowState(.waiting, created: nil, deleted: nil, columns: columns)
            }
            var columns: [String: MergedRowState.Cell] = [:]
            for (index, name) in ["a", "b"].enumerated() {
                let value = try row.decode(DatabaseValue.self, at: index)
                // A column no change named holds the table's default (NULL) and no version.
                guard value != .null || versions[name] != nil else { continue }
                columns[name] = MergedRowState.Cell(WireValue(value), versions[name])
            }
            return MergedRowState(.live, created: created, deleted: deleted, columns: columns)
        }
    }

    @Test(arguments: try MergeVector.all())
    func theChangeLogAppliesEachVectorAsTheRuleSays(vector: MergeVector) throws {
        let directory = try TemporaryDirectory()
        for (number, order) in vector.orders.enumerated() {
            let store = try Store(directory.path("\(number).sqlite"))
            let outcomes = try order.map { try store.apply($0) }
            if number == 0 {
                // The stash is retried after each batch: a batch after a waiting change counts its retry too.
                let firstWaiting = vector.outcomes.firstIndex(of: .waiting) ?? vector.outcomes.count
                #expect(Array(outcomes.prefix(firstWaiting + 1)) == Array(vector.outcomes.prefix(firstWaiting + 1)))
            }
            #expect(try store.state() == vector.final, "in the order \(order.map { "\($0.op) \($0.clock)" })")
        }
    }
}
