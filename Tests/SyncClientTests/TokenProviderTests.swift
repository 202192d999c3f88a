import Foundation
import OfflineStore
import RemindersModel
import SyncClient
import SyncProtocol
import TestSupport
import Testing

/// `SyncEngine.Configuration.tokenProvider`: each request sends the token the app holds now, so
/// a token renewed meanwhile (a JSON Web Token's, say) is the one the next sync uses.
@Suite("The engine's token provider")
struct TokenProviderTests {
    @Test func eachRequestSendsTheTokenTheProviderGivesNow() throws {
        let server = try LiveServer(backend: .sqlite)
        _ = try makeDataset(server, "family")
        let storage = try server.storage()
        let first = try storage.createToken(dataset: "family", readOnly: false)
        let second = try storage.createToken(dataset: "family", readOnly: false)
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("store.sqlite"))
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self, releasedUpTo: nil))
        let current = Locked(first.secret)
        let asked = Locked(0)
        var configuration = SyncEngine.Configuration(server: server.baseURL, dataset: "family", token: "ost_unused")
        configuration.retry.maximumAttempts = 1
        configuration.tokenProvider = {
            asked.withLock { $0 += 1 }
            return current.value
        }
        let engine = SyncEngine(db: db, log: log, transport: try HTTPClient(), configuration: configuration)
        _ = try engine.sync()
        let requests = asked.value
        #expect(requests >= 2)

        // The token it held is revoked: refused. Renewed: the next sync goes through with the new one.
        try storage.revokeToken(id: first.id)
        #expect(throws: SyncError.self) { try engine.sync() }
        current.withLock { $0 = second.secret }
        _ = try engine.sync()
        #expect(asked.value > requests + 1)
    }
}
