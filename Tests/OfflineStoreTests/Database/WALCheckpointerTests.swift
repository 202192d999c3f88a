import Foundation
import OfflineStore
import Testing

/// ``Database/withBackgroundCheckpoints(walBoundPages:_:)``: the WAL of `main` and of an attached
/// file reach their database files through the thread's checkpoints while the writer's own wait
/// for the bound; the thread is gone and the writer's threshold back when the method returns.
@Suite("Background checkpoints of a connection")
struct WALCheckpointerTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    @Test func theThreadCopiesBothFilesWhileTheBodyRunsAndIsGoneAfterIt() throws {
        let db = try Database(path: directory.path("store.sqlite"))
        try db.execute("ATTACH DATABASE \(directory.path("side.sqlite")) AS side")
        try db.execute("PRAGMA side.journal_mode = WAL")
        try db.execute("CREATE TABLE main.items (id INTEGER PRIMARY KEY, body BLOB)")
        try db.execute("CREATE TABLE side.notes (id INTEGER PRIMARY KEY, body BLOB)")
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let sizesBefore = try [fileSize("store.sqlite"), fileSize("side.sqlite")]
        #expect(try db.fetchValue(Int.self, "PRAGMA wal_autocheckpoint") == 1_000)

        var name = ""
        let threadsDuring = try db.withBackgroundCheckpoints(walBoundPages: 100_000) { checkpointer in
            let checkpointer = try #require(checkpointer)
            name = checkpointer.threadName
            // 20 transactions of about 100 pages in each file: no automatic checkpoint at the bound.
            for round in 0..<20 {
                try db.transaction { db in
                    for index in 0..<100 {
                        let id = round * 100 + index
                        try db.execute("INSERT INTO main.items VALUES (\(id), zeroblob(4000))")
                        try db.execute("INSERT INTO side.notes VALUES (\(id), zeroblob(4000))")
                    }
                }
                checkpointer.walGrew()
            }
            #expect(try db.fetchValue(Int.self, "PRAGMA wal_autocheckpoint") == 100_000)
            // Copied by the thread alone: nothing on this connection checkpoints at this size.
            let deadline = Date().addingTimeInterval(20)
            while try fileSize("store.sqlite") < sizesBefore[0] + 4_000_000
                || fileSize("side.sqlite") < sizesBefore[1] + 4_000_000,
                Date() < deadline
            {
                checkpointer.walGrew()
                usleep(20_000)
            }
            return threadCount(named: name)
        }
        #expect(threadsDuring == 1)
        #expect(try fileSize("store.sqlite") >= sizesBefore[0] + 4_000_000, "main's WAL was not copied")
        #expect(try fileSize("side.sqlite") >= sizesBefore[1] + 4_000_000, "the attached file's WAL was not copied")
        // The thread's last act is to signal that it closed its connection; the OS removes it a
        // moment later (a loaded CI machine saw it still listed right after the return).
        let exitDeadline = Date().addingTimeInterval(5)
        while threadCount(named: name) > 0, Date() < exitDeadline { usleep(10_000) }
        #expect(threadCount(named: name) == 0)
        #expect(try db.fetchValue(Int.self, "PRAGMA wal_autocheckpoint") == 1_000)
        #expect(try db.count("items") == 2_000)
    }

    @Test func theBoundStillCheckpointsOnTheWritersConnection() throws {
        let db = try Database(path: directory.path("store.sqlite"))
        try db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, body BLOB)")
        // Below the bound, so that the writer's threshold is raised to it.
        try db.execute("PRAGMA wal_autocheckpoint = 100")
        let bound = 200
        var largestWAL = 0
        try db.withBackgroundCheckpoints(walBoundPages: bound) { checkpointer in
            #expect(checkpointer != nil)
            // The thread is never asked for a round: only the writer's automatic checkpoint,
            // at the bound, keeps the WAL from growing.
            for round in 0..<40 {
                try db.transaction { db in
                    for index in 0..<50 {
                        try db.execute("INSERT INTO items VALUES (\(round * 50 + index), zeroblob(4000))")
                    }
                }
                largestWAL = max(largestWAL, try fileSize("store.sqlite-wal"))
            }
        }
        // 2,000 pages written; the WAL holds at most the bound and one transaction of about 50.
        #expect(largestWAL > 0)
        #expect(largestWAL < (bound + 100) * 4_120)
        #expect(try db.fetchValue(Int.self, "PRAGMA wal_autocheckpoint") == 100)
    }

    @Test func aConnectionWithoutAWALRunsTheBodyAsItIs() throws {
        let db = try Database.inMemory()
        let checkpointer = db.withBackgroundCheckpoints { $0 }
        #expect(checkpointer == nil)
    }

    private func fileSize(_ name: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: directory.path(name))[.size] as? Int) ?? 0
    }
}
