import CReferenceBench
import Foundation
import OfflineStore
import RemindersModel

/// The migrator's costs on `rows` reminders: lightweight stages at two sizes (they must not grow
/// with rows), the table rebuild against the same SQL in C, and the open of an up-to-date
/// database against a bare `sqlite3_open_v2`.
struct MigrationWorkloads {
    let options: BenchmarkOptions
    let rows: Int
    /// The lightweight stages are also timed at this size; their growth is the ratio.
    let smallRows: Int

    init(options: BenchmarkOptions) {
        self.options = options
        rows = options.rows ?? 1_000_000
        smallRows = min(10_000, rows)
    }

    func run() throws -> [MigrationResult] {
        let fixtures = try MigrationFixtures()
        defer { fixtures.removeAll() }
        var results: [MigrationResult] = []
        let lightweight: [(name: String, plan: any MigrationPlan.Type, upTo: Schema.Version?, judged: Bool)] = [
            ("lightweight stage 1.0.0 → 1.1.0 of Reminders", RemindersMigrationPlan.self, "1.1.0", false),
            ("  its 2 columns alone (CHECK on priority)", ReminderColumnsBenchPlan.self, nil, false),
            ("add-column stage: nullable + NOT NULL DEFAULT", PlainColumnsBenchPlan.self, nil, true),
        ]
        let rebuildName = "12-step rebuild adding a foreign key"
        let needsV1 = lightweight.contains { options.includes($0.name) } || options.includes(rebuildName)
        let largeV1 = needsV1 ? try fixtures.remindersAtFirstRelease(rows: rows) : ""
        let needsSmallV1 = smallRows < rows && lightweight.contains { options.includes($0.name) }
        let smallV1 = needsSmallV1 ? try fixtures.remindersAtFirstRelease(rows: smallRows) : largeV1
        for stage in lightweight where options.includes(stage.name) {
            let migrator = try Migrator(plan: stage.plan, releasedUpTo: stage.upTo)
            let timings = try sampleAlternating(
                runs: options.runs,
                [
                    migrationSide(migrator, source: smallV1, work: "small.sqlite", fixtures: fixtures),
                    migrationSide(migrator, source: largeV1, work: "large.sqlite", fixtures: fixtures),
                ])
            let growth = timings[1].median / timings[0].median
            results.append(
                MigrationResult(
                    workload: stage.name, rows: rows, ours: timings[1], baselineName: "\(smallRows) rows",
                    baseline: timings[0], target: stage.judged ? "flat (≤ 1.5x)" : "—",
                    met: stage.judged ? growth <= 1.5 : nil))
        }
        if options.includes(rebuildName) {
            let input = try fixtures.remindersAtSecondRelease(from: largeV1, rows: rows)
            results.append(try rebuild(name: rebuildName, input: input, fixtures: fixtures))
        }
        let openName = "no-op open, 20 tables: Database(path:) + migrate"
        let openWithPlanName = "  the same, Migrator(plan:) built each time"
        if options.includes(openName) || options.includes(openWithPlanName) {
            results += try noOpOpen(names: (openName, openWithPlanName), fixtures: fixtures)
        }
        return results
    }

    /// Copies `source`, opens it (untimed), times `migrate`, checks the result and closes (untimed).
    private func migrationSide(
        _ migrator: Migrator, source: String, work: String, fixtures: MigrationFixtures
    ) -> TimedSide {
        var db: Database?
        return TimedSide(
            setUp: { db = try Database(path: fixtures.copy(source, to: work)) },
            body: { try migrator.migrate(db!) },
            tearDown: {
                guard try migrator.hasCompletedMigrations(db!) else {
                    throw BenchmarkFailure(description: "\(work) is not at \(migrator.latestVersion) after migrating")
                }
                try db?.close()
                db = nil
            })
    }

    /// Ours: the rebuild plan's last stage through the migrator (ledger, checks and all). The C
    /// reference: the statements of the rebuild itself, taken from what a dry run of ours executes,
    /// so both sides always run the same SQL.
    private func rebuild(name: String, input: String, fixtures: MigrationFixtures) throws -> MigrationResult {
        let migrator = try Migrator(plan: RebuildBenchPlan.self)
        let table = RebuildBenchPlan.ForeignKeySchema.Reminder.tableDefinition.name
        let newTable = "ostore_rebuild_" + table
        let dryRun = try Database(path: fixtures.copy(input, to: "dry-run.sqlite"))
        let executed = try migrator.dryRun(dryRun).flatMap(\.statements)
        try dryRun.close()
        let quotedNewTable = quoteIdentifier(newTable)
        guard let createSQL = executed.first(where: { $0.hasPrefix("CREATE TABLE IF NOT EXISTS \(quotedNewTable)") }),
            let copySQL = executed.first(where: { $0.hasPrefix("INSERT INTO \(quotedNewTable)") }),
            let rename = executed.firstIndex(where: { $0.hasPrefix("ALTER TABLE \(quotedNewTable) RENAME") })
        else {
            throw BenchmarkFailure(
                description: "the dry run shows no rebuild of \(table):\n\(executed.joined(separator: "\n"))")
        }
        let indexSQL = executed[rename...].filter {
            $0.hasPrefix("CREATE INDEX") || $0.hasPrefix("CREATE UNIQUE INDEX")
        }

        var reference: OpaquePointer?
        let timings = try sampleAlternating(
            runs: options.runs,
            [
                migrationSide(migrator, source: input, work: "rebuild-ours.sqlite", fixtures: fixtures),
                TimedSide(
                    setUp: {
                        try check(openReferenceDatabase(fixtures.copy(input, to: "rebuild-c.sqlite"), &reference))
                    },
                    body: {
                        try check(
                            ref_rebuild_table(
                                reference, table, newTable, createSQL, copySQL, indexSQL.joined(separator: ";\n")))
                    },
                    tearDown: {
                        ref_close(reference)
                        reference = nil
                    }),
            ])
        try verifySameResult(fixtures.path("rebuild-ours.sqlite"), fixtures.path("rebuild-c.sqlite"))
        return MigrationResult(
            workload: name, rows: rows, ours: timings[0], baselineName: "C reference", baseline: timings[1],
            target: "≤ 1.1x", met: timings[0].median <= 1.1 * timings[1].median)
    }

    /// Both rebuilt files must hold the same rows under the same declaration, foreign key included.
    private func verifySameResult(_ ours: String, _ reference: String) throws {
        func describe(_ path: String) throws -> [String] {
            let db = try Database(path: path)
            defer { try? db.close() }
            let objects = try db.fetchAll(
                String.self,
                "SELECT sql FROM sqlite_schema WHERE tbl_name = 'reminders' AND sql IS NOT NULL ORDER BY name")
            let count = try db.fetchValue(Int.self, "SELECT count(*) FROM reminders") ?? -1
            let keys = try db.fetchValue(Int.self, "SELECT count(*) FROM pragma_foreign_key_list('reminders')") ?? -1
            return objects + ["\(count) rows", "\(keys) foreign keys"]
        }
        let oursDescription = try describe(ours)
        let referenceDescription = try describe(reference)
        guard oursDescription == referenceDescription, oursDescription.last == "1 foreign keys" else {
            throw BenchmarkFailure(
                description: "the rebuilds differ:\nours \(oursDescription)\nC    \(referenceDescription)")
        }
    }

    /// Opening the up-to-date twenty-table database, many times: the migrator built once (as an
    /// app does), the migrator built each time, and C's bare open plus one query. Closing is
    /// outside the clock for all three.
    private func noOpOpen(names: (String, String), fixtures: MigrationFixtures) throws -> [MigrationResult] {
        let path = try fixtures.wide()
        let migrator = try Migrator(plan: WideBenchPlan.self)
        var db: Database?
        var reference: OpaquePointer?
        func close() throws {
            try db?.close()
            db = nil
        }
        let timings = try sampleAlternating(
            runs: max(200, options.runs * 40),
            [
                TimedSide(
                    body: {
                        db = try Database(path: path)
                        try migrator.migrate(db!)
                    }, tearDown: close),
                TimedSide(
                    body: {
                        db = try Database(path: path)
                        try Migrator(plan: WideBenchPlan.self).migrate(db!)
                    }, tearDown: close),
                TimedSide(
                    body: { try check(ref_open_bare(path, &reference)) },
                    tearDown: {
                        ref_close(reference)
                        reference = nil
                    }),
            ])
        let checked = try Database(path: path)
        defer { try? checked.close() }
        guard try migrator.appliedStages(checked).count == 3 else {
            throw BenchmarkFailure(description: "the twenty-table database is not at its last stage")
        }
        // The target is for the open alone: an app builds its migrator once.
        return [
            MigrationResult(
                workload: names.0, rows: WideBenchPlan.tableCount * 100, ours: timings[0],
                baselineName: "C open + 1 query", baseline: timings[2], target: "< 2 ms", met: timings[0].median < 2),
            MigrationResult(
                workload: names.1, rows: WideBenchPlan.tableCount * 100, ours: timings[1],
                baselineName: "C open + 1 query", baseline: timings[2], target: "—", met: nil),
        ]
    }

    private func check(_ code: Int32) throws {
        guard code == 0 else { throw BenchmarkFailure(description: "the C reference failed with SQLite code \(code)") }
    }
}
