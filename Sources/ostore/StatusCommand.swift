import CommandLineTool
import Foundation
import OfflineStore

/// `ostore status --db PATH [--json]`: the schema version, applied and pending stages with their
/// checksums, and the fingerprints, read from the migration ledger without the app's code; and the
/// store and site ids and the count of changes waiting to be pushed, read from the metadatabase.
enum StatusCommand: Command {
    static let name = "status"
    static let synopsis = "--db PATH [--json]"
    static let summary =
        "Show a database's schema version, migration stages, fingerprint, and change-log identity and queue."
    static let options = [
        CommandOption(name: "--db", valueName: "PATH", help: "the database (opened read-only)"),
        CommandOption(name: "--json", valueName: nil, help: "print one JSON object instead of text"),
    ]
    static let details = """
        fingerprint identifies the declared schema (sync modes included); structureFingerprint is the
        declared schema as SQLite stores it, liveStructureFingerprint the same for this file: they are
        equal when the file matches its version.

        JSON keys: schemaVersion (null for a database without ledger), fingerprint, structureFingerprint,
        liveStructureFingerprint, appliedStages, pendingStages, storeID, siteID (hex), pendingChanges
        (the last three null for a database without metadatabase, PATH-ostore-meta). Pending stages come
        from the plan the app last migrated with; pending changes are local changes not yet pushed.

        exit status: 0 ok, 2 usage error or unreadable database
        """

    static func run(_ arguments: ParsedArguments) -> ExitStatus {
        guard let path = arguments.values["--db"], arguments.positionals.isEmpty else {
            Console.error(
                "ostore status: give the database with --db PATH and nothing else\nusage: ostore status \(synopsis)")
            return .failure
        }
        let status: MigrationStatus
        let changeLog: ChangeLogSummary?
        do {
            let db = try Database.openReadOnly(path)
            status = try MigrationStatus.read(from: db)
            changeLog = try ChangeLogReader.summary(in: db)
        } catch {
            Console.error("ostore status: cannot read \(path): \(error)")
            return .failure
        }
        if arguments.flags.contains("--json") {
            Console.output(json(status, changeLog))
        } else {
            Console.output(text(status, changeLog, path: path))
        }
        return .success
    }

    private static func text(_ status: MigrationStatus, _ changeLog: ChangeLogSummary?, path: String) -> String {
        var lines = [
            "database:         \(path)",
            "schema version:   \(status.schemaVersion?.description ?? "none (no migration ledger)")",
            "fingerprint:      \(status.fingerprint ?? "-")",
            "structure:        \(status.structureFingerprint ?? "-") (declared)",
            "                  \(status.liveStructureFingerprint) (this file"
                + (status.structureFingerprint == nil
                    ? ")"
                    : status.structureFingerprint == status.liveStructureFingerprint
                        ? ": matches)" : ": DIFFERS, run ostore check)"),
            "applied stages:\(status.appliedStages.isEmpty ? " none" : "")",
        ]
        let dateFormatter = ISO8601DateFormatter()
        for stage in status.appliedStages {
            let notes = [stage.adopted ? "adopted" : nil, stage.runs > 1 ? "ran \(stage.runs) times" : nil]
                .compactMap { $0 }.joined(separator: ", ")
            lines.append(
                "  \(stage.position)  \(label(stage.fromVersion, stage.toVersion, stage.kind))  "
                    + "checksum \(stage.checksum.prefix(16))…  applied \(dateFormatter.string(from: stage.appliedAt))  "
                    + String(format: "%.3f s", stage.duration) + (notes.isEmpty ? "" : "  (\(notes))"))
        }
        lines.append("pending stages:\(status.pendingStages.isEmpty ? " none" : "")")
        for stage in status.pendingStages {
            lines.append(
                "  \(stage.position)  \(label(stage.fromVersion, stage.toVersion, stage.kind))  "
                    + "checksum \(stage.checksum.prefix(16))…")
        }
        if let changeLog {
            lines += [
                "store id:         \(changeLog.storeID)",
                "site id:          \(changeLog.siteID)",
                "pending changes:  \(changeLog.pendingChanges)",
            ]
        } else {
            lines.append("store id:         none (no metadatabase: the change log was never opened)")
        }
        return lines.joined(separator: "\n")
    }

    private static func label(_ from: Schema.Version?, _ to: Schema.Version, _ kind: String) -> String {
        "\(from.map { "\($0) → " } ?? "create ")\(to) (\(kind))"
    }

    private static func json(_ status: MigrationStatus, _ changeLog: ChangeLogSummary?) -> String {
        let dateFormatter = ISO8601DateFormatter()
        let object: [String: Any] = [
            "schemaVersion": status.schemaVersion?.description ?? NSNull(),
            "fingerprint": status.fingerprint ?? NSNull(),
            "structureFingerprint": status.structureFingerprint ?? NSNull(),
            "liveStructureFingerprint": status.liveStructureFingerprint,
            "appliedStages": status.appliedStages.map { stage -> [String: Any] in
                [
                    "position": stage.position, "kind": stage.kind,
                    "fromVersion": stage.fromVersion?.description ?? NSNull(),
                    "toVersion": stage.toVersion.description, "checksum": stage.checksum,
                    "appliedAt": dateFormatter.string(from: stage.appliedAt), "durationSeconds": stage.duration,
                    "runs": stage.runs, "adopted": stage.adopted,
                ]
            },
            "pendingStages": status.pendingStages.map { stage -> [String: Any] in
                [
                    "position": stage.position, "kind": stage.kind,
                    "fromVersion": stage.fromVersion?.description ?? NSNull(),
                    "toVersion": stage.toVersion.description, "checksum": stage.checksum,
                ]
            },
            "storeID": changeLog?.storeID ?? NSNull(),
            "siteID": changeLog?.siteID ?? NSNull(),
            "pendingChanges": changeLog?.pendingChanges ?? NSNull(),
        ]
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
