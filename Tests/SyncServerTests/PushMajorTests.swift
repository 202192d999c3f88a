import Foundation
import SyncProtocol
import Testing

/// Section 11.2: only a hello moves a dataset to a new major, so a push naming a major above the
/// dataset's is refused (`409 major_not_allowed`) and stores nothing, on both backends.
@Suite("A push of a newer major needs a hello")
struct PushMajorTests {
    @Test(arguments: StorageBackend.allCases)
    func aPushOfAMajorAboveTheDatasetsIsRefusedUntilAHelloMovesIt(backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "majors", allowingMajor: 2)
        var peer = TestPeer(server, dataset: "majors", token: token, siteByte: 0x33)
        _ = try peer.hello()
        peer.schema = SchemaDescription(version: SchemaVersion(2, 0), fingerprint: "f2", tables: ["notes": ["id"]])
        let refused = #expect(throws: UnexpectedAnswer.self) { try peer.push([peer.change(.insert, "n1", seq: 1)]) }
        #expect(refused?.status == 409)
        #expect(refused?.body.contains("major_not_allowed") == true)
        #expect(try server.storage().schemaVersion(of: "majors") == SchemaVersion(1, 0))
        #expect(try peer.hello().verdict == .compatible)
        #expect(try peer.push([peer.change(.insert, "n1", seq: 1)]).acknowledgedThrough == 1)
    }
}
