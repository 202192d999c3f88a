import CommandLineTool
import Foundation
import OfflineStore

/// `ostore check --db PATH`: integrity, foreign keys, and the migration ledger versus the plan the
/// app recorded and the live schema.
enum CheckCommand: Command {
    static let name = "check"
    static let synopsis = "--db PATH"
    static let summary = "Check a database's integrity, foreign keys, and its ledger against the live schema."
    static let options = [CommandOption(name: "--db", valueName: "PATH", help: "the database (opened read-only)")]
    static let details =
        "exit status: 0 all good, 1 problems found (listed one per line), 2 usage error or unreadable database"

    static func run(_ arguments: ParsedArguments) -> ExitStatus {
        guard let path = arguments.values["--db"], arguments.positionals.isEmpty else {
            Console.error(
                "ostore check: give the database with --db PATH and nothing else\nusage: ostore check \(synopsis)")
            return .failure
        }
        let problems: [String]
        do {
            let db = try Database.openReadOnly(path)
            problems = try MigrationStatus.problems(in: db) + (try ChangeLogCoverage.problems(in: db))
        } catch {
            Console.error("ostore check: cannot read \(path): \(error)")
            return .failure
        }
        for problem in problems { Console.output("\(path): \(problem)") }
        Console.error("ostore check: \(problems.isEmpty ? "ok" : "\(problems.count) problem(s)")")
        return problems.isEmpty ? .success : .findings
    }
}
