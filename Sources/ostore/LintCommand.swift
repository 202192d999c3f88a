import CommandLineTool
import Foundation
import OfflineStore

/// `ostore lint [--db PATH] FILE.sql...`: checks migration SQL files against the migration lint rules.
///
/// Each file is linted as one stage. Findings go to standard output as `file:line: rule-id: message` with a
/// `  fix: ...` line; the summary goes to standard error.
enum LintCommand: Command {
    static let name = "lint"
    static let synopsis = "[--db PATH] FILE.sql..."
    static let summary = "Check migration SQL files for statements that lose data or break upgrades."
    static let options = [
        CommandOption(
            name: "--db", valueName: "PATH",
            help: "read row counts from this database (opened read-only) instead of assuming every table has rows")
    ]

    static var details: String {
        let rules = LintRule.all.map { "  \($0.id) (\($0.severity.rawValue)): \($0.reason)" }
        return """
            Each finding is printed as FILE:LINE: RULE-ID: MESSAGE, then "  fix: ..." with what to do instead.
            Suppress a rule for one statement with a comment on the lines before it (or inside it):
              -- ostore-lint: allow RULE-ID[, RULE-ID]

            exit status: 0 no findings, 1 findings, 2 usage error or unreadable file or database

            rules ("never" fails a migration stage unless the stage acknowledges it):
            """ + "\n" + rules.joined(separator: "\n")
    }

    static func run(_ arguments: ParsedArguments) -> ExitStatus {
        guard !arguments.positionals.isEmpty else {
            Console.error("ostore lint: no files to lint\nusage: ostore lint \(synopsis)")
            return .failure
        }
        let environment: any LintEnvironment
        if let path = arguments.values["--db"] {
            do {
                environment = DatabaseLintEnvironment(try Database.openReadOnly(path))
            } catch {
                Console.error("ostore lint: cannot open database \(path): \(error)")
                return .failure
            }
        } else {
            environment = StandaloneLintEnvironment()
        }

        var findings: [LintFinding] = []
        var failed = false
        for path in arguments.positionals {
            guard let data = FileManager.default.contents(atPath: path),
                let script = String(data: data, encoding: .utf8)
            else {
                Console.error("ostore lint: cannot read \(path) (missing, unreadable or not UTF-8)")
                failed = true
                continue
            }
            // A fresh linter per file: each file is one stage.
            var linter = SQLLinter()
            do {
                let fileFindings = try linter.lint(script: script, environment: environment)
                for finding in fileFindings {
                    Console.output("\(path):\(finding.line): \(finding.rule.id): \(finding.message)")
                    Console.output("  fix: \(finding.rule.fix)")
                }
                findings += fileFindings
            } catch {
                Console.error("\(path):\(error.line): error: \(error.message)")
                failed = true
            }
        }
        Console.error("ostore lint: \(summary(of: findings, files: arguments.positionals.count))")
        if failed { return .failure }
        return findings.isEmpty ? .success : .findings
    }

    private static func summary(of findings: [LintFinding], files: Int) -> String {
        let fileCount = files == 1 ? "1 file" : "\(files) files"
        guard !findings.isEmpty else { return "no findings in \(fileCount)" }
        let never = findings.filter { $0.rule.severity == .never }.count
        let warnings = findings.count - never
        let count = findings.count == 1 ? "1 finding" : "\(findings.count) findings"
        return "\(count) (\(never) never, \(warnings) \(warnings == 1 ? "warning" : "warnings")) in \(fileCount)"
    }
}
