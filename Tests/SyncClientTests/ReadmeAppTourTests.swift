import Foundation
import OfflineStore
import SyncClient
import SyncServer
import TestSupport
import Testing

// The README's tour, a complete small app, verbatim between the markers (ReadmeTourTests checks
// that the README shows it), run against a live ostore-server.

// app-tour:begin
enum NotesV1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [NotesTable.self]
    enum NotesTable: Model {
        // Synced (the default): every write to it is recorded and pushed.
        static let tableDefinition = TableDefinition("notes", options: [.strict]) {
            Column("id", .text).primaryKey()  // a UUID: rows are created on many devices
            Column("title", .text).notNull()
        }
    }
}

enum NotesV1_1: VersionedSchema {  // a full snapshot of release 1.1, not a diff
    static let versionIdentifier: Schema.Version = "1.1.0"
    static let models: [any Model.Type] = [NotesTable.self]
    enum NotesTable: Model {
        static let tableDefinition = TableDefinition("notes", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("title", .text).notNull()
            Column("pinned", .integer).notNull().defaults(0)
        }
    }
}

enum NotesPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, NotesV1_1.self]
    static let stages: [MigrationStage] = [.lightweight(fromVersion: NotesV1.self, toVersion: NotesV1_1.self)]
}

struct Note: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "notes"
    var id = UUID().uuidString
    var title: String
    var pinned = false
}

/// One run of the app on one device: open, write a note, sync, list every note.
func notesApp(path: String, server: URL, token: String, newNote: String) throws -> [String] {
    let db = try Database(path: path)
    // Attaches the change log's metadatabase, migrates to 1.1.0, starts recording writes.
    let log = try ChangeLog.open(db, migrator: try Migrator(plan: NotesPlan.self))
    try db.transaction { db in
        try Note(title: newNote).insert(db)
    }
    let engine = SyncEngine(
        db: db, log: log, transport: try HTTPClient(),
        configuration: .init(server: server, dataset: "notes", token: token))
    try engine.sync()  // hello, push the queue, pull and apply the other devices' changes
    return try Note.fetchAll(db, "SELECT * FROM notes ORDER BY title").map(\.title)
}
// app-tour:end

@Suite struct ReadmeAppTourTests {
    @Test func twoDevicesRunTheAppAndSeeEachOthersNotes() throws {
        let directory = try TemporaryDirectory()
        let server = try LiveServer(dataDirectory: directory.url.appendingPathComponent("data"))
        let token = try makeDataset(server, "notes")
        let phone = directory.path("phone.sqlite")
        let laptop = directory.path("laptop.sqlite")
        #expect(try notesApp(path: phone, server: server.baseURL, token: token, newNote: "Buy milk") == ["Buy milk"])
        #expect(
            try notesApp(path: laptop, server: server.baseURL, token: token, newNote: "Call Bob")
                == ["Buy milk", "Call Bob"])
        #expect(
            try notesApp(path: phone, server: server.baseURL, token: token, newNote: "Water plants")
                == ["Buy milk", "Call Bob", "Water plants"])
        #expect(try server.storage().datasets().first?.schemaVersion?.description == "1.1.0")
        #expect(server.stop() == 0)
    }
}
