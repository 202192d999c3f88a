import CommandLineTool
import Foundation
import OfflineStore
import RemindersModel
import SyncClient

/// `sync`, `daemon` and `status`: the store synced through an `ostore-server`.
enum SyncCommands {
    static func engine(_ target: SyncTarget, release: AppRelease, store: OpenedStore, attempts: Int?) throws
        -> SyncEngine
    {
        var client = HTTPClient.Configuration()
        client.caFile = target.caFile
        let transport: HTTPClient
        do {
            transport = try HTTPClient(configuration: client)
        } catch {
            throw CommandFailure.runtime("cannot set up HTTP: \(error)")
        }
        var configuration = SyncEngine.Configuration(
            server: target.server, dataset: target.dataset, token: target.token)
        configuration.retry.maximumAttempts = attempts
        let engine = SyncEngine(db: store.db, log: store.log, transport: transport, configuration: configuration)
        if release.has(.dueAtAndSearch) { engine.afterApplyingChanges = ReleaseTwoDerivations.apply }
        return engine
    }

    /// One sync; prints what moved. A progress line shows a long pull on a terminal.
    static func sync(_ target: SyncTarget, release: AppRelease, store: OpenedStore) throws -> String {
        let engine = try engine(target, release: release, store: store, attempts: 4)
        let line = StandardError.isTerminal ? SyncProgressLine() : nil
        defer { line?.finish() }
        do {
            let report = try engine.sync { progress in line?.report(progress) }
            var text =
                "synced with \(target.server.absoluteString) (dataset \(target.dataset), \(verdict(report))): "
                + "pushed \(report.pushed), "
            text += "pulled \(report.pulled)"
            if report.refusedOutgoing > 0 { text += ", \(report.refusedOutgoing) refused by the server (see `status`)" }
            if report.refusedIncoming > 0 {
                text += ", \(report.refusedIncoming) from other devices refused here (see `status`)"
            }
            if report.removed > 0 { text += ", \(report.removed) no longer shared with you and removed here" }
            if report.stashed > 0 { text += ", \(report.stashed) kept for a newer schema or a missing parent" }
            if report.requeued > 0 {
                text += "\nnote: the server had lost \(report.requeued) of this device's changes; they were sent again"
            }
            if report.restamped > 0 {
                text +=
                    "\nnote: \(report.restamped) changes written while this machine's clock ran ahead were stamped "
                    + "again and sent"
            }
            if report.redownloaded {
                text +=
                    "\nnote: the server could not resume from where this device left off; "
                    + "the dataset was downloaded again"
            }
            if report.verdict == .newerSchemaAvailable, let newest = report.datasetSchemaVersion {
                text += "\nnote: other devices use schema \(newest); upgrade to see everything they write"
            }
            return text
        } catch {
            throw CommandFailure.runtime(message(for: error, store: store))
        }
    }

    /// The negotiation's outcome as the sync line shows it.
    private static func verdict(_ report: SyncReport) -> String {
        switch report.verdict {
        case .newerSchemaAvailable:
            return "compatible; the dataset has a newer schema, \(report.datasetSchemaVersion?.description ?? "?")"
        case .compatible, nil:
            return "compatible"
        case let other?:
            return other.rawValue
        }
    }

    /// Keeps a live pull open (or, with a server that does not hold pulls, syncs at the interval)
    /// and syncs soon after local changes, until SIGTERM or SIGINT.
    static func daemon(_ target: SyncTarget, interval: Double, release: AppRelease, store: OpenedStore) throws {
        let stop = StopSignals()
        let engine = try engine(target, release: release, store: store, attempts: 1)
        var configuration = SyncDaemon.Configuration()
        configuration.interval = interval
        let daemon = SyncDaemon(engine: engine, db: store.db, log: store.log, configuration: configuration)
        // Written straight to the file descriptor: each line reaches a pipe or a log file at
        // once, not when a buffer fills.
        func line(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
        line(
            "syncing \(store.db.path) with \(target.server.absoluteString): live while the server holds pulls, "
                + "else every \(Int(interval)) s; stop with SIGTERM")
        daemon.run(
            until: { stop.isRaised },
            report: { status in
                let time = ISO8601DateFormatter().string(from: Date())
                if let error = status.lastError {
                    line(
                        "\(time) sync failed (\(status.consecutiveFailures) in a row): \(message(for: error, store: store))"
                    )
                } else if let report = status.lastReport {
                    line(
                        "\(time) synced: pushed \(report.pushed), pulled \(report.pulled), \(status.pendingChanges) pending"
                    )
                }
            })
        line("stopped")
    }

    static func status(asJSON: Bool, release: AppRelease, store: OpenedStore) throws -> String {
        let db = store.db
        let log = store.log
        let states = try db.fetchAll(String.self, "SELECT endpoint FROM ostore_meta.ostore_sync ORDER BY endpoint")
            .map { try log.syncState(db, endpoint: $0) }
        let pending = try log.pendingCount(db)
        let refusedOutgoing = try log.refusedOutgoingChanges(db)
        let stashed = try log.stashedCount(db)
        let refusedHere = try log.refusedIncomingChanges(db)
        if asJSON {
            let formatter = ISO8601DateFormatter()
            let endpoints = states.map { state in
                "{\"endpoint\": \(JSONOutput.string(state.endpoint)), "
                    + "\"lastSyncAt\": \(state.lastSyncAt.map { JSONOutput.string(formatter.string(from: $0)) } ?? "null"), "
                    + "\"lastError\": \(state.lastError.map(JSONOutput.string) ?? "null"), "
                    + "\"protocolVersion\": \(state.protocolVersion.map(String.init) ?? "null"), "
                    + "\"datasetSchemaVersion\": \(state.datasetSchemaVersion.map(JSONOutput.string) ?? "null")}"
            }
            let refused = refusedOutgoing.map { record in
                "{\"code\": \(JSONOutput.string(record.code)), \"reason\": \(JSONOutput.string(record.reason)), "
                    + "\"change\": \(record.change)}"
            }
            let refusedIncoming = refusedHere.map { record in
                "{\"table\": \(JSONOutput.string(record.change.table)), "
                    + "\"operation\": \(JSONOutput.string(record.change.operation.rawValue)), "
                    + "\"reason\": \(JSONOutput.string(record.reason))}"
            }
            return """
                {
                  "schemaVersion": \(JSONOutput.string(release.version.description)),
                  "siteID": \(JSONOutput.string(log.identity.siteID.map { String(format: "%02x", $0) }.joined())),
                  "pendingChanges": \(pending),
                  "servers": [\(endpoints.joined(separator: ", "))],
                  "refusedOutgoingChanges": [\(refused.joined(separator: ", "))],
                  "stashedChanges": \(stashed),
                  "refusedIncomingChanges": [\(refusedIncoming.joined(separator: ", "))]
                }
                """
        }
        var lines = ["schema \(release.version), \(pending) change(s) waiting to be pushed"]
        for state in states {
            let when = state.lastSyncAt.map { ISO8601DateFormatter().string(from: $0) } ?? "never"
            lines.append(
                "\(state.endpoint): last sync \(when), protocol \(state.protocolVersion.map(String.init) ?? "-"), "
                    + "dataset schema \(state.datasetSchemaVersion ?? "-")")
            if let error = state.lastError { lines.append("  last error: \(error)") }
        }
        for record in refusedOutgoing { lines.append("refused by the server (\(record.code)): \(record.reason)") }
        if stashed > 0 {
            lines.append("\(stashed) change(s) from other devices waiting for a newer schema or their parent row")
        }
        for record in refusedHere {
            lines.append(
                "refused here (\(record.change.operation.rawValue) of \(record.change.table) from another device): "
                    + record.reason)
        }
        return lines.joined(separator: "\n")
    }

    /// The error as the user should read it: what happened and what to do.
    static func message(for error: any Error, store: OpenedStore) -> String {
        guard let error = error as? SyncError else { return "sync failed: \(error)" }
        switch error.kind {
        case .upgradeRequired:
            let pending = (try? store.log.pendingCount(store.db)) ?? 0
            return
                "the server's data needs a newer app (schema \(error.requiredMajorVersion.map { "\($0).x" } ?? "newer")); "
                + "upgrade reminders and sync again. Your \(pending) change(s) stay queued until then."
        case .transport:
            return "cannot reach the server: \(error.message) (your changes stay queued; try again later)"
        default:
            return "sync failed: \(error)"
        }
    }
}

/// `pulled 1200 of 5000 changes` on one line, rewritten in place on a terminal.
final class SyncProgressLine {
    private var shown = false

    func report(_ progress: SyncProgress) {
        guard progress.total > 0 else { return }
        StandardError.write("\rpulled \(progress.applied) of \(progress.total) changes")
        shown = true
    }

    func finish() {
        if shown { StandardError.write("\n") }
    }
}
