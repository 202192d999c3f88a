import Foundation
import OfflineStore
import SyncClient
import SyncProtocol
import TestSupport

/// One seed of the randomised convergence test: 3–4 devices work offline at random (lists,
/// reminders, tags and the links between them, deletes of parents while another device adds
/// children), sync in a random order through a ``FaultProxy`` that breaks requests at random,
/// then sync without faults until quiet; every device must then hold the same rows, equal to
/// ``MergeModel`` applied to every change the devices' logs recorded.
struct ConvergenceRun {
    let seed: UInt64
    let directory: TemporaryDirectory
    let server: LiveServer
    let proxy: FaultProxy

    /// What a run did, for the summary line.
    struct Outcome {
        var problems: [String] = []
        var operations = 0
        var syncs = 0
        var failedSyncs = 0
        var events = 0
    }

    func execute() throws -> Outcome {
        var random = SeededGenerator(seed: seed)
        var outcome = Outcome()
        let dataset = "seed-\(seed)"
        let token = try makeDataset(server, dataset)
        // A short total timeout makes a stall cost little; a slow answer is one more fault.
        let transport = HTTPClient.Configuration(connectTimeout: .seconds(2), totalTimeout: .milliseconds(300))
        let peers = try (0..<Int.random(in: 3...4, using: &random)).map { index in
            try SyncPeer(
                name: "p\(index)", path: directory.path("\(dataset)-p\(index).sqlite"), server: proxy.baseURL,
                dataset: dataset, token: token, transport: transport,
                batchSize: Int.random(in: 2...12, using: &random), pageSize: Int.random(in: 2...12, using: &random))
        }
        let faultRate = Double.random(in: 0.1...0.35, using: &random)
        let faults = Locked(SeededGenerator(seed: seed &* 0x2545_F491_4F6C_DD1D))
        proxy.plan = { _ in faults.withLock { generator in Self.fault(rate: faultRate, using: &generator) } }

        var workload = Workload()
        var events: [ModelEvent] = []
        for _ in 0..<Int.random(in: 50...90, using: &random) {
            let peer = peers[Int.random(in: 0..<peers.count, using: &random)]
            if Double.random(in: 0..<1, using: &random) < 0.3 {
                outcome.syncs += 1
                do { try peer.engine.sync() } catch { outcome.failedSyncs += 1 }
            } else {
                try workload.randomOperation(on: peer, using: &random)
                outcome.operations += 1
            }
            events += try peer.capture()
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
        if !quiet { outcome.problems.append("the devices still moved changes after 8 quiet rounds") }
        try check(peers, events: events, dataset: dataset, into: &outcome.problems)
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
        let model = MergeModel.merge(events, tables: SyncPeer.tables.map(\.name))
        let expected = MergeModel.canonicalText(model)
        for peer in peers {
            let pending = try peer.log.pendingCount(peer.db)
            if pending != 0 { problems.append("\(peer.name) still has \(pending) changes to push") }
            // Nothing left waiting: every parent arrived, every update found its row or its delete.
            let waiting = try peer.db.fetchAll(String.self, "SELECT change FROM ostore_meta.ostore_stash")
            if !waiting.isEmpty {
                problems.append("\(peer.name) still has \(waiting.count) changes in its stash: \(waiting.prefix(3))")
            }
            let actual = MergeModel.canonicalText(try peer.contents())
            if actual != expected {
                problems.append(
                    "\(peer.name) holds \(MergeModel.hash(actual)), the model \(MergeModel.hash(expected)):\n"
                        + Self.difference(expected: expected, actual: actual) + "\n"
                        + (try history(of: Self.difference(expected: expected, actual: actual), peer, events)))
            }
        }
        // Nothing stored twice: every (site, seq) once in the server's log.
        for twice in try server.changesStoredTwice(dataset: dataset) {
            problems.append("the server stored \(twice) twice")
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

/// The random offline work: fresh ids from a run-wide counter, and a reminder–tag pair is never
/// linked twice (a deleted key inserted again is the protocol's known gap, §8.5).
struct Workload {
    private var counter = 0
    private var linked = Set<String>()
    private let words = ["milk", "bread", "call mum", "taxes", "gym", "books", "plants", "car"]

    private mutating func freshID(_ peer: SyncPeer, _ kind: String) -> String {
        counter += 1
        return "\(kind)\(counter)-\(peer.name)"
    }

    mutating func randomOperation(on peer: SyncPeer, using random: inout SeededGenerator) throws {
        let db = peer.db
        let lists = try db.fetchAll(String.self, "SELECT id FROM remindersLists ORDER BY id")
        let reminders = try db.fetchAll(String.self, "SELECT id FROM reminders ORDER BY id")
        let tags = try db.fetchAll(String.self, "SELECT id FROM tags ORDER BY id")
        let links = try db.fetchAll(String.self, "SELECT reminderID || '|' || tagID FROM reminderTags ORDER BY 1")
        let word =
            words[Int.random(in: 0..<words.count, using: &random)] + " \(Int.random(in: 0..<100, using: &random))"
        var choice = Int.random(in: 0..<100, using: &random)
        if lists.isEmpty { choice = 0 } else if reminders.isEmpty && choice >= 26 { choice = 26 }
        switch choice {
        case 0..<10:
            try db.execute("INSERT INTO remindersLists (id, name) VALUES (\(freshID(peer, "L")), \(word))")
        case 10..<18:
            let list = lists.randomElement(using: &random)!
            try db.execute("UPDATE remindersLists SET name = \(word) WHERE id = \(list)")
        case 18..<24:
            // Its reminders (and their tags) go with it, by ON DELETE CASCADE, logged as deletes.
            let list = lists.randomElement(using: &random)!
            try db.execute("DELETE FROM remindersLists WHERE id = \(list)")
        case 24..<44:
            let list = lists.randomElement(using: &random)!
            try db.execute(
                """
                INSERT INTO reminders (id, title, listID, priority)
                VALUES (\(freshID(peer, "R")), \(word), \(list), \(Int64.random(in: 0...9, using: &random)))
                """)
        case 44..<70:
            let reminder = reminders.randomElement(using: &random)!
            switch Int.random(in: 0..<6, using: &random) {
            case 0: try db.execute("UPDATE reminders SET title = \(word) WHERE id = \(reminder)")
            case 1: try db.execute("UPDATE reminders SET isDone = 1 - isDone WHERE id = \(reminder)")
            case 2:
                try db.execute(
                    "UPDATE reminders SET priority = \(Int64.random(in: 0...9, using: &random)) WHERE id = \(reminder)")
            case 3: try db.execute("UPDATE reminders SET notes = \(word) WHERE id = \(reminder)")
            case 4:
                try db.execute(
                    "UPDATE reminders SET title = \(word), notes = \(word + "!") WHERE id = \(reminder)")
            default:
                // Moved to another list, which another device may be deleting.
                let list = lists.randomElement(using: &random)!
                try db.execute("UPDATE reminders SET listID = \(list) WHERE id = \(reminder)")
            }
        case 70..<78:
            try db.execute("DELETE FROM reminders WHERE id = \(reminders.randomElement(using: &random)!)")
        case 78..<84:
            let id = freshID(peer, "T")
            try db.execute("INSERT INTO tags (id, name) VALUES (\(id), \("tag " + id))")
        case 84..<93:
            guard let tag = tags.randomElement(using: &random) else {
                let id = freshID(peer, "T")
                return try db.execute("INSERT INTO tags (id, name) VALUES (\(id), \("tag " + id))")
            }
            let reminder = reminders.randomElement(using: &random)!
            guard linked.insert(reminder + "|" + tag).inserted else { return }
            try db.execute("INSERT INTO reminderTags (reminderID, tagID) VALUES (\(reminder), \(tag))")
        case 93..<97:
            guard let link = links.randomElement(using: &random) else { return }
            let parts = link.split(separator: "|").map(String.init)
            try db.execute("DELETE FROM reminderTags WHERE reminderID = \(parts[0]) AND tagID = \(parts[1])")
        default:
            guard let tag = tags.randomElement(using: &random) else { return }
            try db.execute("DELETE FROM tags WHERE id = \(tag)")
        }
    }
}
