import Foundation
import OfflineStore
import SyncProtocol
import TestSupport
import Testing

@testable import SyncServer

/// The state lives in `state.sqlite`, beside the log's `server.sqlite`: derived from the log, so it
/// is rebuilt when missing or folded from another log, and a fold never holds up a push.
extension StateFoldTests {
    /// Removes the database `name` in `data` with its `-wal` and `-shm` files.
    private func removeDatabase(_ name: String = ServerStateFile.fileName, in data: URL) throws {
        for suffix in ["", "-wal", "-shm"] {
            let path = data.appendingPathComponent(name).path + suffix
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
        }
    }

    /// A copy of `server.sqlite` as it is now, as `sqlite3 .backup` would make it.
    private func copyOfTheLog(_ storage: SQLiteSyncStorage, to path: String) throws {
        let db = try Database(path: storage.path)
        defer { try? db.close() }
        try db.execute(sql: "VACUUM INTO ?", arguments: [path])
    }

    /// Stores ``history`` in a storage at `data`, folds it when `folded`, and lets the storage go;
    /// returns its snapshot.
    @discardableResult
    private func storeHistory(in data: URL, folded: Bool) throws -> (changes: [Change], startSerial: Int64) {
        let storage = try SQLiteSyncStorage(directory: data)
        try storage.createDataset(named: "family")
        _ = try storage.storeBatch(history, site: site, clientSchema: schema, dataset: "family")
        if folded { storage.waitUntilFolded() }
        return try snapshot(storage)
    }

    @Test func aRemovedStateFileIsFoldedAgainFromTheLog() throws {
        let directory = try TemporaryDirectory()
        let data = URL(fileURLWithPath: directory.path("data"))
        let before = try storeHistory(in: data, folded: true)
        #expect(before.startSerial == 8)
        try removeDatabase(in: data)
        do {
            // Until it is folded again, the snapshot is empty and the log from serial 0 completes it.
            let unfolded = try SQLiteSyncStorage(directory: data, folds: false)
            #expect(try snapshot(unfolded).startSerial == 0)
            #expect(try snapshot(unfolded).changes.isEmpty)
            #expect(titles(try everything(unfolded).log) == expected)
        }
        let rebuilt = try SQLiteSyncStorage(directory: data)
        rebuilt.waitUntilFolded()
        let after = try snapshot(rebuilt)
        #expect(after.startSerial == 8)
        #expect(after.changes == before.changes)
    }

    /// `server.sqlite` put back by hand from an older copy whose log then grew again to the serial
    /// the state was folded through, with other changes: the state is folded again from that log.
    @Test func aStateFoldedFromAnotherLogIsFoldedAgainFromTheLogInPlace() throws {
        let directory = try TemporaryDirectory()
        let data = URL(fileURLWithPath: directory.path("data"))
        let copy = directory.path("server-copy.sqlite")
        do {
            let storage = try SQLiteSyncStorage(directory: data)
            try storage.createDataset(named: "family")
            _ = try storage.storeBatch(Array(history.prefix(4)), site: site, clientSchema: schema, dataset: "family")
            storage.waitUntilFolded()
            try copyOfTheLog(storage, to: copy)
            _ = try storage.storeBatch(history, site: site, clientSchema: schema, dataset: "family")
            storage.waitUntilFolded()
            #expect(try snapshot(storage).startSerial == 8)
        }
        try removeDatabase(SQLiteSyncStorage.fileName, in: data)
        try FileManager.default.copyItem(
            atPath: copy, toPath: data.appendingPathComponent(SQLiteSyncStorage.fileName).path)
        do {
            // Another device's changes take serials 5…8 of the log put back.
            let storage = try SQLiteSyncStorage(directory: data, folds: false)
            let other = SiteID(bytes: Data(repeating: 0xC3, count: 16))!
            let others = (1...4).map { seq in
                Change(
                    table: "notes", key: ["id": .text("c\(seq)")], op: .insert, columns: ["title": .text("c\(seq)")],
                    clock: ChangeClock(milliseconds: 1_764_000_001_000 + seq, counter: 0)!, site: other, seq: Int64(seq)
                )
            }
            #expect(try storage.storeBatch(others, site: other, clientSchema: schema, dataset: "family") == 4)
        }
        let reopened = try SQLiteSyncStorage(directory: data)
        reopened.waitUntilFolded()
        let folded = try snapshot(reopened)
        #expect(folded.startSerial == 8)
        #expect(
            titles(folded.changes)
                == ["n1": "t1", "n2": "t2", "n3": "t3", "n4": "t4", "c1": "c1", "c2": "c2", "c3": "c3", "c4": "c4"])
    }

    @Test func anUpgradeMovesTheStateOutOfTheLogsFile() throws {
        let directory = try TemporaryDirectory()
        let (reference, old) = try upgradeCase(ServerSchemaV1_2.versionIdentifier, in: directory)
        let upgraded = try SQLiteSyncStorage(directory: old, folds: false)
        let log = try Database(path: upgraded.path)
        defer { try? log.close() }
        #expect(try log.fetchValue(Int.self, "SELECT count(*) FROM server_rows") == 0)
        #expect(try log.fetchValue(Int.self, "SELECT max(foldedSerial) FROM server_datasets") == 0)
        let state = try Database(path: upgraded.state.path)
        defer { try? state.close() }
        #expect(
            try state.fetchValue(Int.self, "SELECT count(*) FROM state_rows")
                == reference.state.pool.read { db in try db.fetchValue(Int.self, "SELECT count(*) FROM state_rows") })
        #expect(try state.fetchValue(Int64.self, "SELECT foldedSerial FROM state_datasets") == 11)
    }

    /// A crash after the state file took the rows an earlier release kept in `server.sqlite`, and
    /// before they were emptied there: the next start keeps the state file's and only empties them.
    @Test func rowsLeftInTheLogsFileByACrashDuringTheMoveAreEmptiedNotTakenAgain() throws {
        let directory = try TemporaryDirectory()
        let (reference, old) = try upgradeCase(ServerSchemaV1_2.versionIdentifier, in: directory)
        _ = try SQLiteSyncStorage(directory: old, folds: false)
        let log = try Database(path: old.appendingPathComponent(SQLiteSyncStorage.fileName).path)
        try log.execute(
            """
            INSERT INTO server_rows (datasetID, tableName, key, createdClock, createdSite)
            SELECT id, 'notes', '{"id":"stale"}', 1, \(site.bytes) FROM server_datasets
            """)
        try log.execute("UPDATE server_datasets SET foldedSerial = 3")
        try log.close()

        let restarted = try SQLiteSyncStorage(directory: old, folds: false)
        let served = try snapshot(restarted)
        #expect(served.startSerial == 11)
        #expect(served.changes == (try snapshot(reference)).changes)
        let reread = try Database(path: restarted.path)
        defer { try? reread.close() }
        #expect(try reread.fetchValue(Int.self, "SELECT count(*) FROM server_rows") == 0)
    }

    /// Another program holds the state file's write lock: pushes are still stored and acknowledged,
    /// and the state catches up once the lock is gone.
    @Test func pushesAreAcknowledgedWhileTheStateFileIsLocked() throws {
        let directory = try TemporaryDirectory()
        let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")))
        try storage.createDataset(named: "family")
        let outsider = try Database(path: storage.state.path)
        try outsider.execute(sql: "BEGIN IMMEDIATE")
        #expect(
            try storage.storeBatch(Array(history.prefix(4)), site: site, clientSchema: schema, dataset: "family") == 4)
        #expect(try storage.storeBatch(history, site: site, clientSchema: schema, dataset: "family") == 8)
        #expect(try snapshot(storage).startSerial == 0)
        try outsider.execute(sql: "ROLLBACK")
        try outsider.close()
        storage.waitUntilFolded()
        let folded = try snapshot(storage)
        #expect(folded.startSerial == 8)
        #expect(titles(folded.changes) == expected)
    }

    /// Every connection to both files is closed once the storage is gone, the folder's too (SQLite
    /// then removes each WAL): one closed later, after a restore in the same process put a new
    /// file in place, would remove the new file's WAL.
    @Test func bothFilesAreClosedWhenTheStorageIsGone() throws {
        let directory = try TemporaryDirectory()
        let data = URL(fileURLWithPath: directory.path("data"))
        try storeHistory(in: data, folded: true)
        let left = try FileManager.default.contentsOfDirectory(atPath: data.path).filter {
            $0.hasSuffix("-wal") || $0.hasSuffix("-shm")
        }
        #expect(left.isEmpty)
    }

    @Test func aStateFileThatIsNotADatabaseIsRefusedWithWhatToDo() throws {
        let directory = try TemporaryDirectory()
        let data = URL(fileURLWithPath: directory.path("data"))
        try storeHistory(in: data, folded: false)
        try removeDatabase(in: data)
        try Data(repeating: 0x5A, count: 8_192).write(to: data.appendingPathComponent(ServerStateFile.fileName))
        do {
            _ = try SQLiteSyncStorage(directory: data)
            Issue.record("a state file that is not a database was opened")
        } catch {
            #expect(error.message.contains(ServerStateFile.fileName))
            #expect(error.fix?.contains("remove \(ServerStateFile.fileName)") == true)
        }
        try removeDatabase(in: data)
        let rebuilt = try SQLiteSyncStorage(directory: data)
        rebuilt.waitUntilFolded()
        #expect(titles(try snapshot(rebuilt).changes) == expected)
    }

    /// A storage opened with `folds` false (or restored so) merges nothing, even asked to wait for
    /// the fold, and the administration commands and `restore`, which open it so, work on a directory
    /// with unfolded pushes and leave them unfolded for the server. (Whether a command's storage folds cannot be seen from
    /// outside: a folder waits a second before its first round, and the commands end sooner.)
    @Test func aStorageThatDoesNotFoldLeavesPushesUnfoldedAndTheCommandsOpenItSo() throws {
        let directory = try TemporaryDirectory()
        let data = URL(fileURLWithPath: directory.path("data"))
        do {
            let storage = try SQLiteSyncStorage(directory: data, folds: false)
            try storage.createDataset(named: "family")
            _ = try storage.storeBatch(history, site: site, clientSchema: schema, dataset: "family")
        }
        let backup = directory.path("backup.sqlite")
        try FileManager.default.copyItem(
            atPath: data.appendingPathComponent(SQLiteSyncStorage.fileName).path, toPath: backup)
        do {
            let restored = try SQLiteSyncStorage.restore(
                from: URL(fileURLWithPath: backup), into: data, folds: false)
            restored.waitUntilFolded()
            #expect(try snapshot(restored).startSerial == 0)
        }
        let server = try builtProduct("ostore-server").path
        let commands = [["dataset", "list"], ["dataset", "create", "work"], ["token", "list"], ["restore", backup]]
        for command in commands {
            let result = try run(server, command + ["--data", data.path])
            #expect(result.status == 0, "\(command): \(String(decoding: result.error, as: UTF8.self))")
        }
        let unfolded = try SQLiteSyncStorage(directory: data, folds: false)
        unfolded.waitUntilFolded()
        #expect(try snapshot(unfolded).startSerial == 0)
        let served = try SQLiteSyncStorage(directory: data)
        served.waitUntilFolded()
        #expect(titles(try snapshot(served).changes) == expected)
    }
}
