import Foundation
import OfflineStore
import SyncClient
import SyncProtocol
import SyncStoreBridge
import TestSupport

/// One seed of the randomised convergence test: 3–4 devices work offline at random (lists,
/// reminders, tags and the links between them, deletes of parents while another device adds
/// children), sync in a random order through a ``FaultProxy`` that breaks requests at random,
/// then sync without faults until quiet; every device must then hold the same rows, equal to
/// ``MergeModel`` applied to every change the devices' logs recorded.
///
/// In ``Scenario/olderMinorReleases``, the devices start on Reminders 1.0 and 1.1 (at least one of
/// each), so a 1.0 device keeps what 1.1 devices write about tags, priorities and notes in its stash
/// while it syncs; each 1.0 device upgrades to 1.1 at a random moment of the run (the rest at its
/// end), and every device must then hold what the model says a 1.1 device holds.
///
/// In ``Scenario/purgedFiles``, the system now and then purges one file of a device between two
/// steps (its database or its metadatabase). What a device had not pushed is then lost by design
/// (see docs/syncing-and-version-skew.md, "Purged stores"), so the model is the merge of every
/// change the server stored rather than of every change the devices logged: every device must
/// still end with the same rows, those, with nothing left queued or stashed. The deletes a device
/// had queued when its database was purged must reach the server all the same (its metadatabase
/// keeps them), unless its metadatabase was purged later.
///
/// In ``Scenario/olderMajorRelease``, the devices start on Reminders 1.0 or 1.1 (the first one on
/// 2.0 half the time) and each upgrades to 2.0 at a random moment (the rest at the run's end): once
/// a 2.0 device has synced, the dataset is at 2.0 and the older devices are refused
/// (`upgradeRequired`) but keep working offline and keep their queues, which they push once
/// upgraded; their migration gives a reminder whose list is gone a list again, and a 1.0 device's
/// stash fills in what 1.1 added. 2.0 devices write `dueAt` with `dueDate`, as the app does, and
/// derive it after every pulled page (``ReleaseTwoDerivations``); `dueAt` is derived, so the model
/// is compared without it, and every device must hold `dueAt` as its `dueDate` names it.
///
/// In ``Scenario/killedSyncs``, every device is on 2.0 and half of its syncs run in a child process
/// (`ostore-crash-syncer`, the app's sync with its derivations) that kills itself with SIGKILL at a
/// random write on the store's connection (a row written, or a transaction about to commit), or
/// ends first: before or after the server stored a pushed batch, in a pull's apply, between a page
/// and its derivations, at the cursor's save. The device then opens its files as they were left and
/// carries on; nothing may be lost or stored twice, and `dueAt` is compared as for the older major.
/// (The harness folds a device's journal when it reads its log, so a child never folds one.)
///
/// In ``Scenario/syncsBesideTheApp``, every device is on 2.0 and a sync step of a device starts a
/// child sync of its files half of the time (killed at a random write half of those times) and
/// goes on without waiting: the app keeps its store open and writes, and may sync too, while the
/// child pushes, pulls and applies, as an app does beside its daemon. The device's next such step
/// waits for the child.
///
/// ``Scenario/killedSyncsThroughTheMajorUpgrade`` is the older major with those killed syncs: the
/// child is the 2.0 app, so its open upgrades an older device's files, and a kill lands in the
/// migration (its stages, the recovered lists it records for sync, the stash it applies) as
/// often as in the sync; the device carries on at whatever release its files reached.
struct ConvergenceRun {
    let seed: UInt64
    let directory: TemporaryDirectory
    let server: LiveServer
    let proxy: FaultProxy
    let scenario: Scenario

    /// What the devices live through besides random offline work and faults.
    enum Scenario {
        /// Every device on Reminders 2.0.
        case newestRelease
        /// Devices on 1.0 and 1.1, each 1.0 device upgrading to 1.1.
        case olderMinorReleases
        /// Devices' databases and metadatabases purged now and then.
        case purgedFiles
        /// Devices on 1.0 and 1.1 while others move the dataset to 2.0, each upgrading to 2.0.
        case olderMajorRelease
        /// Devices on 2.0 whose syncs run in a child process killed at a random write.
        case killedSyncs
        /// The older major with killed syncs, whose child process upgrades an older device.
        case killedSyncsThroughTheMajorUpgrade
        /// Devices on 2.0 whose syncs run in a child process beside the app's own writes.
        case syncsBesideTheApp

        /// Whether devices start on 1.x while the dataset moves to 2.0.
        var movesToTheNextMajor: Bool { self == .olderMajorRelease || self == .killedSyncsThroughTheMajorUpgrade }
        /// Whether half of the syncs run in a child process killed at a random write.
        var killsSyncs: Bool { self == .killedSyncs || self == .killedSyncsThroughTheMajorUpgrade }
    }

    private var olderReleases: Bool { scenario == .olderMinorReleases }
    private var purges: Bool { scenario == .purgedFiles }
    private var olderMajor: Bool { scenario.movesToTheNextMajor }
    private var killedSyncs: Bool { scenario.killsSyncs }
    /// Whether 2.0 devices derive `dueAt` after every pulled page, as the app does.
    private var besideTheApp: Bool { scenario == .syncsBesideTheApp }
    /// Whether 2.0 devices derive `dueAt` after every pulled page, as the app does.
    private var derives: Bool { olderMajor || killedSyncs || besideTheApp }

    static let releaseOnePointZero: Schema.Version = "1.0.0"
    static let releaseOnePointOne: Schema.Version = "1.1.0"

    /// What a run did, for the summary line.
    struct Outcome {
        var problems: [String] = []
        var operations = 0
        var syncs = 0
        var failedSyncs = 0
        var events = 0
        /// 1.0 devices upgraded before the run's end, and at its end.
        var upgradesMidway = 0
        var upgradesAtEnd = 0
        /// Changes the upgraded devices' stashes held when they upgraded.
        var stashedAtUpgrade = 0
        /// Devices whose database, or whose metadatabase, was purged.
        var databasesPurged = 0
        var metadatabasesPurged = 0
        /// Deletes queued on devices when their databases were purged, which the server must store.
        var deletesQueuedAtPurge = 0
        /// Syncs of 1.x devices the server refused as too old for the dataset, and the changes their
        /// queues held when they upgraded to 2.0.
        var refusedForUpgrade = 0
        var queuedAtMajorUpgrade = 0
        /// Syncs run in a child process: killed at a write, and ended by themselves.
        var killedSyncs = 0
        var childSyncsEnded = 0
        /// Older devices whose files a child sync upgraded to 2.0 (killed or not), and child syncs
        /// of older devices killed before their files reached 2.0.
        var upgradedByAChild = 0
        var killedWhileUpgrading = 0
        /// Child syncs started beside the app's own work on the same files, and the app's operations
        /// on a device while its child sync was running (or had ended, not yet waited for).
        var childSyncsBesideTheApp = 0
        var operationsBesideAChild = 0

        /// Adds another run's counts (its problems are reported on their own).
        mutating func add(_ other: Outcome) {
            operations += other.operations
            syncs += other.syncs
            failedSyncs += other.failedSyncs
            events += other.events
            upgradesMidway += other.upgradesMidway
            upgradesAtEnd += other.upgradesAtEnd
            stashedAtUpgrade += other.stashedAtUpgrade
            databasesPurged += other.databasesPurged
            metadatabasesPurged += other.metadatabasesPurged
            deletesQueuedAtPurge += other.deletesQueuedAtPurge
            refusedForUpgrade += other.refusedForUpgrade
            queuedAtMajorUpgrade += other.queuedAtMajorUpgrade
            killedSyncs += other.killedSyncs
            childSyncsEnded += other.childSyncsEnded
            upgradedByAChild += other.upgradedByAChild
            killedWhileUpgrading += other.killedWhileUpgrading
            childSyncsBesideTheApp += other.childSyncsBesideTheApp
            operationsBesideAChild += other.operationsBesideAChild
        }
    }

    func execute() throws -> Outcome {
        var random = SeededGenerator(seed: seed)
        var outcome = Outcome()
        let dataset = "seed-\(seed)"
        // Release 2.0 may move a dataset its devices on 1.x joined first: its operator allows it.
        let token = try makeDataset(server, dataset, allowingMajor: olderMajor ? 2 : nil)
        // A short total timeout makes a stall cost little; a slow answer is one more fault.
        let transport = HTTPClient.Configuration(connectTimeout: .seconds(2), totalTimeout: .milliseconds(300))
        var peers = try (0..<Int.random(in: 3...4, using: &random)).map { index in
            let batchSize = Int.random(in: 2...12, using: &random)
            let pageSize = Int.random(in: 2...12, using: &random)
            // The first device on 1.0, the second on 1.1, the others either; for the older major,
            // the first on 2.0 half the time, the others on 1.0 or 1.1.
            let release: Schema.Version?
            if olderMajor {
                release =
                    index == 0 && Bool.random(using: &random)
                    ? nil : Bool.random(using: &random) ? Self.releaseOnePointZero : Self.releaseOnePointOne
            } else {
                release =
                    !olderReleases
                    ? nil
                    : index == 0 || (index > 1 && Bool.random(using: &random))
                        ? Self.releaseOnePointZero : Self.releaseOnePointOne
            }
            return try SyncPeer(
                name: "p\(index)", path: directory.path("\(dataset)-p\(index).sqlite"), server: proxy.baseURL,
                dataset: dataset, token: token, transport: transport, batchSize: batchSize, pageSize: pageSize,
                release: release, derivesReleaseTwo: derives)
        }
        /// Whether a device is below the release the run ends on.
        func isOlder(_ peer: SyncPeer) -> Bool {
            olderMajor ? peer.release != nil : peer.release == Self.releaseOnePointZero
        }
        func upgrade(_ index: Int) throws {
            outcome.stashedAtUpgrade +=
                try peers[index].db.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_stash") ?? 0
            if olderMajor { outcome.queuedAtMajorUpgrade += try peers[index].log.pendingCount(peers[index].db) }
            peers[index] = try peers[index].upgraded(to: olderMajor ? nil : Self.releaseOnePointOne)
        }
        let faultRate = Double.random(in: 0.1...0.35, using: &random)
        let faults = Locked(SeededGenerator(seed: seed &* 0x2545_F491_4F6C_DD1D))
        proxy.plan = { _ in faults.withLock { generator in Self.fault(rate: faultRate, using: &generator) } }

        var workload = Workload(dueDatesOnEveryRelease: derives)
        // A child's writes in its last whole sync, per device: kills land anywhere up to twice that.
        var childWrites = peers.map { _ in 40 }
        // The child sync running beside each device's app, if any.
        var running: [ChildSync?] = peers.map { _ in nil }
        /// A child sync of `peer`'s files, killed at its `killAt`th write.
        func childSync(of peer: SyncPeer, killAt: Int) throws -> ChildSync {
            try ChildSync(
                database: peer.databasePath, server: proxy.baseURL, dataset: dataset, token: token,
                batchSize: peer.engine.configuration.pushBatchSize, pageSize: peer.engine.configuration.pullPageSize,
                killAt: killAt)
        }
        /// Counts how device `index`'s child sync ended.
        func count(_ ending: ChildSync.Ending, of index: Int) {
            switch ending {
            case .killed: outcome.killedSyncs += 1
            case .ended(let writes, let synced):
                outcome.childSyncsEnded += 1
                childWrites[index] = max(writes, 10)
                if !synced { outcome.failedSyncs += 1 }
            }
        }
        func finishChild(_ index: Int) throws {
            guard let child = running[index] else { return }
            running[index] = nil
            count(try child.finish(), of: index)
        }
        var events: [ModelEvent] = []
        var queuedDeletes: [QueuedDelete] = []
        for _ in 0..<Int.random(in: 50...90, using: &random) {
            let index = Int.random(in: 0..<peers.count, using: &random)
            if isOlder(peers[index]),
                Double.random(in: 0..<1, using: &random) < (olderMajor ? 0.06 : 0.04)
            {
                try upgrade(index)
                outcome.upgradesMidway += 1
                events += try peers[index].capture()
                continue
            }
            if purges, Double.random(in: 0..<1, using: &random) < 0.04 {
                let file: SyncPeer.PurgedFile = Bool.random(using: &random) ? .database : .metadatabase
                // A lost metadatabase loses the queue by design; a lost database keeps its deletes.
                if file == .database {
                    queuedDeletes += try QueuedDelete.queued(on: peers[index])
                } else {
                    queuedDeletes.removeAll { $0.site == peers[index].site }
                }
                peers[index] = try peers[index].purged(file)
                if file == .database { outcome.databasesPurged += 1 } else { outcome.metadatabasesPurged += 1 }
                events += try peers[index].capture()
                continue
            }
            let peer = peers[index]
            if Double.random(in: 0..<1, using: &random) < 0.3 {
                outcome.syncs += 1
                if besideTheApp && Bool.random(using: &random) {
                    if running[index] != nil {
                        try finishChild(index)
                    } else {
                        let killAt =
                            Bool.random(using: &random)
                            ? Int.random(in: 1...(2 * childWrites[index] + 10), using: &random) : Int.max
                        running[index] = try childSync(of: peer, killAt: killAt)
                        outcome.childSyncsBesideTheApp += 1
                    }
                    events += try peer.capture()
                    continue
                }
                if killedSyncs && Bool.random(using: &random) {
                    let killAt = Int.random(in: 1...(2 * childWrites[index] + 10), using: &random)
                    // The child is the 2.0 app: an older device's files are upgraded by its open.
                    let stashed = try peer.db.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_stash") ?? 0
                    let queued = try peer.log.pendingCount(peer.db)
                    var ending = ChildSync.Ending.killed
                    peers[index] = try peer.reopened { ending = try childSync(of: peer, killAt: killAt).finish() }
                    if isOlder(peer) && !isOlder(peers[index]) {
                        outcome.upgradesMidway += 1
                        outcome.upgradedByAChild += 1
                        outcome.stashedAtUpgrade += stashed
                        outcome.queuedAtMajorUpgrade += queued
                    }
                    count(ending, of: index)
                    // An older device's child opens by migrating: killed before its last stage committed.
                    if case .killed = ending, isOlder(peers[index]) { outcome.killedWhileUpgrading += 1 }
                    events += try peers[index].capture()
                    continue
                }
                do {
                    try peer.engine.sync()
                } catch let error where error.kind == .upgradeRequired {
                    guard olderMajor && isOlder(peer) else {
                        throw ConvergenceFailure(
                            "\(peer.name) on \(peer.release?.description ?? "2.0") was told to upgrade")
                    }
                    outcome.refusedForUpgrade += 1
                } catch {
                    outcome.failedSyncs += 1
                }
            } else {
                if besideTheApp {
                    // A child may be applying on the same files: the operation reads the rows it
                    // writes against (a list to add to) in the transaction that writes, as an app does.
                    try peer.db.transaction(.immediate) { _ in try workload.randomOperation(on: peer, using: &random) }
                } else {
                    try workload.randomOperation(on: peer, using: &random)
                }
                outcome.operations += 1
                if running[index] != nil { outcome.operationsBesideAChild += 1 }
            }
            events += try peer.capture()
        }

        for index in peers.indices where running[index] != nil {
            try finishChild(index)
            events += try peers[index].capture()
        }
        for index in peers.indices where isOlder(peers[index]) {
            try upgrade(index)
            outcome.upgradesAtEnd += 1
            events += try peers[index].capture()
        }
        // Quiet network: sync round after round until a whole round moves nothing.
        proxy.plan = { _ in .pass }
        var quiet = false
        for _ in 0..<8 where !quiet {
            quiet = true
            for peer in peers {
                let report = try peer.patientEngine.sync()
                events += try peer.capture()
                if report.pushed > 0 || report.pulled > 0 { quiet = false }
            }
        }
        outcome.events = events.count
        outcome.deletesQueuedAtPurge = queuedDeletes.count
        if !quiet { outcome.problems.append("the devices still moved changes after 8 quiet rounds") }
        try check(peers, events: events, dataset: dataset, into: &outcome.problems)
        if !queuedDeletes.isEmpty {
            let stored = try server.storedChanges(dataset: dataset)
            for delete in queuedDeletes where !stored.contains(where: delete.matches) {
                outcome.problems.append("the server never got \(delete), queued when its database was purged")
            }
        }
        return outcome
    }

    /// Faults at `rate`; stalls, which cost a timeout each, are rarer than the rest.
    static func fault(rate: Double, using generator: inout SeededGenerator) -> ProxyFault {
        guard Double.random(in: 0..<1, using: &generator) < rate else { return .pass }
        let weighted: [ProxyFault] = [
            .resetBeforeForwarding, .resetBeforeForwarding, .resetBeforeForwarding, .resetAfterForwarding,
            .resetAfterForwarding, .resetAfterForwarding, .resetAfterForwarding, .truncate, .truncate, .truncateHead,
            .replay, .replay, .replay, .replayEarlier, .replayEarlier, .replayEarlier, .stall,
        ]
        return weighted[Int.random(in: 0..<weighted.count, using: &generator)]
    }

    private func check(_ peers: [SyncPeer], events: [ModelEvent], dataset: String, into problems: inout [String])
        throws
    {
        let model = MergeModel.merge(
            purges ? try Self.events(of: server.storedChanges(dataset: dataset)) : events,
            tables: SyncPeer.tables.map(\.name),
            references: olderReleases ? MergeModel.referencesOfReleaseOne : MergeModel.references,
            defaults: olderMajor
                ? MergeModel.columnsReleaseOneLacksOnTheLatest
                : olderReleases ? MergeModel.columnsReleaseOnePointZeroLacks : [:])
        let expected = MergeModel.canonicalText(derives ? Self.withoutDerivedColumns(model) : model)
        var devices: [String: String] = [:]
        for peer in peers {
            let pending = try peer.log.pendingCount(peer.db)
            if pending != 0 { problems.append("\(peer.name) still has \(pending) changes to push") }
            // Nothing left waiting: every parent arrived, every update found its row or its delete.
            let waiting = try peer.db.fetchAll(String.self, "SELECT change FROM ostore_meta.ostore_stash")
            if !waiting.isEmpty {
                problems.append("\(peer.name) still has \(waiting.count) changes in its stash: \(waiting.prefix(3))")
            }
            let contents = try peer.contents()
            devices[peer.name] = MergeModel.canonicalText(contents)
            if derives {
                // 2.0 derives `dueAt` from `dueDate`, also for what older peers wrote or cleared.
                let stray = try peer.db.fetchAll(
                    String.self,
                    """
                    SELECT id || ': dueDate ' || quote(dueDate) || ', dueAt ' || quote(dueAt) FROM reminders
                    WHERE dueAt IS NOT CAST(unixepoch(dueDate) AS REAL) ORDER BY id
                    """)
                if !stray.isEmpty {
                    problems.append("\(peer.name) holds a dueAt its dueDate does not name: \(stray.prefix(3))")
                }
            }
            let actual = MergeModel.canonicalText(derives ? Self.withoutDerivedColumns(contents) : contents)
            if actual != expected {
                problems.append(
                    "\(peer.name) holds \(MergeModel.hash(actual)), the model \(MergeModel.hash(expected)):\n"
                        + Self.difference(expected: expected, actual: actual) + "\n"
                        + (try history(of: Self.difference(expected: expected, actual: actual), peer, events)))
            }
        }
        // The devices hold the same rows, derived columns too.
        if Set(devices.values).count > 1 {
            let first = peers[0].name
            for peer in peers.dropFirst() where devices[peer.name] != devices[first] {
                problems.append(
                    "\(peer.name) and \(first) differ:\n"
                        + Self.difference(expected: devices[first]!, actual: devices[peer.name]!))
            }
        }
        // Nothing stored twice: every (site, seq) once in the server's log.
        for twice in try server.changesStoredTwice(dataset: dataset) {
            problems.append("the server stored \(twice) twice")
        }
    }

    /// `contents` without the columns 2.0 derives (``SyncPeer/derivedColumns``), which the model
    /// does not follow: a device writes them after applying other devices' changes.
    static func withoutDerivedColumns(_ contents: TableContents) -> TableContents {
        var contents = contents
        for (table, columns) in SyncPeer.derivedColumns {
            contents[table] = contents[table]?.mapValues { $0.filter { !columns.contains($0.key) } }
        }
        return contents
    }

    /// The changes a server stored, as the model's events: keys as the devices' change logs key
    /// them (``SyncPeer/tables``), an insert's values with its key's.
    static func events(of changes: [Change]) throws -> [ModelEvent] {
        try changes.map { change in
            func text(_ column: String) throws -> String {
                guard case .text(let value) = change.key[column] else {
                    throw ConvergenceFailure("the server stored a \(change.table) change keyed \(change.key)")
                }
                return value
            }
            func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
            let key =
                change.table == "reminderTags"
                ? quoted(try text("reminderID")) + "," + quoted(try text("tagID")) : try text("id")
            var values = change.columns.mapValues(\.databaseValue)
            let kind: ModelEvent.Kind
            switch change.op {
            case .insert:
                kind = .insert
                for (column, value) in change.key { values[column] = value.databaseValue }
            case .update: kind = .update
            case .delete: kind = .delete
            }
            return ModelEvent(
                table: change.table, key: key, kind: kind, values: values,
                version: ModelVersion(clock: change.clock.packed, site: change.site.bytes))
        }
    }

    /// For each row that differs (and the rows its key names): the changes the sites logged for it
    /// and what the device's log and stash hold, to see which rule went wrong.
    private func history(of difference: String, _ peer: SyncPeer, _ events: [ModelEvent]) throws -> String {
        var keys = Set<String>()
        for line in difference.split(separator: "\n") {
            guard let open = line.firstIndex(of: "["), let close = line.firstIndex(of: "]") else { continue }
            let key = String(line[line.index(after: open)..<close])
            keys.insert(key)
            for part in key.split(separator: ",") { keys.insert(part.trimmingCharacters(in: ["'"])) }
        }
        var lines: [String] = []
        try peer.log.foldJournal(peer.db)
        for key in keys.sorted() {
            for event in events where event.key == key {
                lines.append(
                    "    logged \(event.table)[\(key)] \(event.kind) \(event.values.keys.sorted()) at \(event.version.clock) "
                        + "by \(event.version.site.prefix(2).map { String(format: "%02x", $0) }.joined())")
            }
            for row in try peer.db.fetchAll(
                """
                SELECT c.columnName, c.clock, c.site, c.seq FROM ostore_meta.ostore_changes AS c
                WHERE c.pk = \(key) ORDER BY c.seq
                """)
            {
                lines.append(
                    "    \(peer.name) has version of [\(key)].\(try row.decode(String.self, at: 0)): \(try row.decode(Int64.self, at: 1)) site# \(try row.decode(Int64.self, at: 2)) seq \(try row.decode(Int64.self, at: 3))"
                )
            }
        }
        for row in try peer.db.fetchAll("SELECT reason, change FROM ostore_meta.ostore_stash") {
            lines.append(
                "    \(peer.name) stash: \(try row.decode(String.self, at: 0)) \(try row.decode(String.self, at: 1))")
        }
        return lines.joined(separator: "\n")
    }

    /// The model's lines the device lacks (-) and the device's lines the model lacks (+).
    static func difference(expected: String, actual: String) -> String {
        let expectedLines = Set(expected.split(separator: "\n"))
        let actualLines = Set(actual.split(separator: "\n"))
        let missing = expectedLines.subtracting(actualLines).sorted().map { "  - \($0)" }
        let extra = actualLines.subtracting(expectedLines).sorted().map { "  + \($0)" }
        return (missing + extra).prefix(20).joined(separator: "\n")
    }
}

/// A delete a device had queued (not pushed yet) when its database was purged.
struct QueuedDelete: CustomStringConvertible {
    var table: String
    var key: [String: DatabaseValue]
    var clock: Int64
    var site: Data

    static func queued(on peer: SyncPeer) throws -> [QueuedDelete] {
        try peer.log.pendingChanges(peer.db, limit: 100_000).filter { $0.operation == .delete }.map { change in
            QueuedDelete(table: change.table, key: change.primaryKey, clock: change.clock.packed, site: peer.site)
        }
    }

    func matches(_ change: Change) -> Bool {
        change.op == .delete && change.table == table && change.clock.packed == clock && change.site.bytes == site
            && change.key.mapValues(\.databaseValue) == key
    }

    var description: String { "the delete of \(table) \(key) at \(clock)" }
}
