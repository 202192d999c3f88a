import Foundation
import SyncProtocol
import Testing

@testable import SyncServer

/// Tokens of `ostore-server token create` that name their user (`--subject`, `--claim`) and expire
/// (`--expires`).
@Suite("Token subjects, claims and expiry")
struct TokenIdentityTests {
    @Test(arguments: StorageBackend.allCases)
    func aTokenKeepsItsSubjectClaimsAndExpiryAndIsRefusedOnceExpired(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let (storage, _) = try LogChainTests.open(backend, in: directory)
        try storage.createDataset(named: "family")
        let expiry = Date(timeIntervalSince1970: 2_000_000_000)
        let bob = try storage.createToken(
            dataset: "family", readOnly: false,
            identity: TokenIdentity(subject: "bob", claims: ["team": "blue", "role": "parent"], expiresAt: expiry))
        let anyone = try storage.createToken(dataset: "family", readOnly: true)
        let grant = try #require(try storage.grant(forTokenDigest: AccessToken.digest(of: bob.secret)))
        #expect(grant.subject == "bob" && grant.claims == ["team": "blue", "role": "parent"])
        #expect(grant.expiresAt.map { abs($0.timeIntervalSince(expiry)) < 0.001 } == true)
        let plain = try #require(try storage.grant(forTokenDigest: AccessToken.digest(of: anyone.secret)))
        #expect(plain.subject == nil && plain.claims.isEmpty && plain.expiresAt == nil)
        let listed = try storage.tokens()
        #expect(listed.first { $0.id == bob.id }?.subject == "bob")
        #expect(
            listed.first { $0.id == bob.id }?.expiresAt != nil && listed.first { $0.id == anyone.id }?.expiresAt == nil)

        // Before its expiry it syncs; from it on, 401 saying so.
        func status(at milliseconds: Int64) -> (Int, String) {
            let service = SyncService(storage: storage, now: { milliseconds })
            let answer = (try? service.pull(family: bob.secret, cursor: nil)).map {
                (Int($0.status.rawValue), String(decoding: $0.body, as: UTF8.self))
            }
            return answer ?? (0, "")
        }
        #expect(status(at: 1_999_999_999_000).0 == 200)
        let (code, body) = status(at: 2_000_000_000_000)
        #expect(code == 401 && body.contains("expired at 2033-05-18T03:33:20Z"), "\(body)")
    }

    @Test(arguments: [
        TokenIdentity(subject: ""), TokenIdentity(subject: String(repeating: "x", count: 257)),
        TokenIdentity(claims: ["sub": "x"]), TokenIdentity(claims: ["exp": "1"]), TokenIdentity(claims: ["a b": "x"]),
        TokenIdentity(claims: ["a": String(repeating: "v", count: 1_025)]),
        TokenIdentity(claims: Dictionary(uniqueKeysWithValues: (0..<33).map { ("c\($0)", "v") })),
        TokenIdentity(expiresAt: Date(timeIntervalSinceNow: -1)),
    ])
    func anIdentityOutOfBoundsIsRefused(_ identity: TokenIdentity) throws {
        let directory = try TemporaryDirectory()
        let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")))
        try storage.createDataset(named: "family")
        #expect(throws: ServerError.self) {
            try storage.createToken(dataset: "family", readOnly: false, identity: identity)
        }
        #expect(try storage.tokens().isEmpty)
    }

    /// Storage of the release before tokens named subjects: its tokens keep working, as tokens of
    /// anyone that never expire, and new ones carry subjects.
    @Test(arguments: StorageBackend.allCases)
    func tokensOfTheReleaseBeforeKeepWorkingAfterTheUpgrade(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let digest = AccessToken.digest(of: "ost_old")
        let hex = digest.map { String(format: "%02x", $0) }.joined()
        let storage = try storageOfAnEarlierRelease(
            backend, in: directory, sqliteVersion: ServerSchemaV1_7.versionIdentifier, postgresMigration: 7,
            sqlite: [
                "INSERT INTO server_datasets (id, name, createdAt) VALUES (1, 'family', 0)",
                "INSERT INTO server_tokens (id, datasetID, digest, readOnly, createdAt) VALUES ('tok_old', 1, \(digest), 0, 0)",
            ],
            postgres: """
                INSERT INTO server_datasets (name) VALUES ('family');
                INSERT INTO server_tokens (id, dataset_id, digest, read_only)
                    SELECT 'tok_old', id, '\\x\(hex)'::bytea, false FROM server_datasets;
                """)
        let old = try #require(try storage.grant(forTokenDigest: digest))
        #expect(old.tokenID == "tok_old" && old.subject == nil && old.claims.isEmpty && old.expiresAt == nil)
        let new = try storage.createToken(dataset: "family", readOnly: false, identity: TokenIdentity(subject: "bob"))
        #expect(try storage.grant(forTokenDigest: AccessToken.digest(of: new.secret))?.subject == "bob")
    }

    @Test func tokenCreateTakesSubjectClaimsAndExpiryAndListShowsThem() throws {
        let directory = try TemporaryDirectory()
        let server = try builtProduct("ostore-server").path
        let data = ["--data", directory.path("data")]
        #expect(try run(server, ["dataset", "create", "family"] + data).status == 0)
        let created = try run(
            server,
            [
                "token", "create", "--dataset", "family", "--subject", "bob", "--claim", "team=blue",
                "--claim=role=a=b",
                "--expires", "30d",
            ] + data)
        #expect(created.status == 0, "\(String(decoding: created.error, as: UTF8.self))")
        let secret = String(decoding: created.output, as: UTF8.self).trimmingCharacters(in: .newlines)
        let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")))
        let grant = try #require(try storage.grant(forTokenDigest: AccessToken.digest(of: secret)))
        #expect(grant.subject == "bob" && grant.claims == ["team": "blue", "role": "a=b"])
        let days = (grant.expiresAt?.timeIntervalSinceNow ?? 0) / 86_400
        #expect(days > 29.9 && days <= 30)
        let dated = try run(
            server, ["token", "create", "--dataset", "family", "--expires", "2099-01-31T00:00:00Z"] + data)
        #expect(dated.status == 0)
        let list = String(decoding: try run(server, ["token", "list"] + data).output, as: UTF8.self)
        #expect(list.contains("\tsubject bob\texpires ") && list.contains("\texpires 2099-01-31T00:00:00Z"), "\(list)")

        for (arguments, message) in [
            (["--claim", "team"], "NAME=VALUE"), (["--claim", "a=1", "--claim", "a=2"], "twice"),
            (["--expires", "soon"], "--expires takes"), (["--expires", "2001-01-01T00:00:00Z"], "has passed"),
            (["--claim", "sub=x"], "registered"),
        ] {
            let refused = try run(server, ["token", "create", "--dataset", "family"] + arguments + data)
            #expect(
                refused.status == 2 && String(decoding: refused.error, as: UTF8.self).contains(message), "\(arguments)")
        }
        #expect(try storage.tokens().count == 2)
    }
}
