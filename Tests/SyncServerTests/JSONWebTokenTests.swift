import Foundation
import SyncProtocol
import Testing

@testable import SyncServer

/// JSON Web Tokens of a dataset's identity provider (HS256, RS256, ES256): what is accepted, and
/// each refusal naming the check that failed.
@Suite("JSON Web Tokens")
struct JSONWebTokenTests {
    static let issuer = "https://login.example.com/"
    static let audience = "reminders"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A signed compact token of `header` and `claims`.
    static func token(_ header: [String: Any], _ claims: [String: Any], sign: (Data) throws -> Data) throws -> String {
        func part(_ object: [String: Any]) throws -> String {
            try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]).base64URLEncoded
        }
        let input = try part(header) + "." + part(claims)
        return input + "." + (try sign(Data(input.utf8))).base64URLEncoded
    }

    /// Claims that pass every check, for `subject`, with `changes` on top.
    static func claims(_ subject: String = "bob", _ changes: [String: Any] = [:]) -> [String: Any] {
        var claims: [String: Any] = [
            "sub": subject, "iss": issuer, "aud": audience, "exp": now.timeIntervalSince1970 + 3_600,
            "iat": now.timeIntervalSince1970, "team": "blue", "admin": false,
        ]
        for (name, value) in changes { claims[name] = value }
        return claims.filter { !($0.value is NSNull) }
    }

    /// A dataset "family" whose keys are `keysText` (a PEM or JWKS file) and/or an HS256 secret.
    static func verifier(
        in directory: TemporaryDirectory, keys keysText: String? = nil, secret: String? = nil, leeway: Int? = nil,
        report: @escaping @Sendable (String) -> Void = { _ in }
    ) throws -> JWTVerifier {
        var entry: [String: Any] = ["issuer": issuer, "audience": audience]
        if let keysText {
            try keysText.write(toFile: directory.path("keys"), atomically: true, encoding: .utf8)
            entry["keys"] = "keys"
        }
        if let secret {
            try secret.write(toFile: directory.path("secret"), atomically: true, encoding: .utf8)
            entry["hs256SecretFile"] = "secret"
        }
        var top: [String: Any] = ["datasets": ["family": entry]]
        if let leeway { top["leewaySeconds"] = leeway }
        try JSONSerialization.data(withJSONObject: top).write(to: URL(fileURLWithPath: directory.path("jwt.json")))
        let configuration = try JWTConfiguration.load(from: URL(fileURLWithPath: directory.path("jwt.json")))
        return try JWTVerifier(configuration: configuration, report: report)
    }

    static func jwks(_ keys: [(id: String?, key: AsymmetricKey)]) throws -> String {
        let entries: [[String: String]] = keys.map { id, key in
            var members = key.publicJWK
            members["kid"] = id
            members["use"] = "sig"
            return members
        }
        return String(decoding: try JSONSerialization.data(withJSONObject: ["keys": entries]), as: UTF8.self)
    }

    static func refusal(_ body: () throws -> TokenGrant) -> String? {
        do {
            _ = try body()
            return nil
        } catch let error as JWTRefusal {
            return error.description
        } catch {
            return "\(error)"
        }
    }

    @Test func es256FromAJWKSByKeyIDGrantsTheSubjectAndItsClaims() throws {
        let directory = try TemporaryDirectory()
        let key = try AsymmetricKey.generate(.p256)
        let other = try AsymmetricKey.generate(.p256)
        let verifier = try Self.verifier(in: directory, keys: try Self.jwks([("k1", other), ("k2", key)]))
        let token = try Self.token(["alg": "ES256", "kid": "k2", "typ": "JWT"], Self.claims()) { try key.sign($0) }
        let grant = try verifier.grant(forToken: token, dataset: "family", now: Self.now)
        #expect(grant.subject == "bob" && grant.dataset == "family" && !grant.readOnly)
        #expect(grant.claims["team"] == "blue" && grant.claims["admin"] == "false" && grant.claims["exp"] == nil)
        #expect(grant.tokenID == TokenGrant.subjectTokenID("bob"))
        // The same token again: remembered, still checked for time.
        #expect(try verifier.grant(forToken: token, dataset: "family", now: Self.now) == grant)
        let late = Self.now.addingTimeInterval(3_600 + 61)
        #expect(
            Self.refusal { try verifier.grant(forToken: token, dataset: "family", now: late) }?.contains("expired")
                == true)
        // Signed by the other key under k2's id: the signature does not verify.
        let forged = try Self.token(["alg": "ES256", "kid": "k2"], Self.claims()) { try other.sign($0) }
        #expect(
            Self.refusal { try verifier.grant(forToken: forged, dataset: "family", now: Self.now) }
                == JWTRefusal.signature.description)
    }

    @Test func rs256FromAPEMFileAndHS256FromASecret() throws {
        let directory = try TemporaryDirectory()
        let rsa = try AsymmetricKey.generate(.rsa)
        let secret = String(repeating: "s", count: 40)
        let verifier = try Self.verifier(in: directory, keys: rsa.publicKeyPEM, secret: secret + "\n")
        let signedRSA = try Self.token(["alg": "RS256"], Self.claims("carol")) { try rsa.sign($0) }
        #expect(try verifier.grant(forToken: signedRSA, dataset: "family", now: Self.now).subject == "carol")
        let signedHMAC = try Self.token(["alg": "HS256"], Self.claims("dave")) {
            try Crypto.hmacSHA256(key: Data(secret.utf8), message: $0)
        }
        #expect(try verifier.grant(forToken: signedHMAC, dataset: "family", now: Self.now).subject == "dave")
        // A PEM key has no id: a token naming one finds no key.
        let named = try Self.token(["alg": "RS256", "kid": "x"], Self.claims()) { try rsa.sign($0) }
        #expect(
            Self.refusal { try verifier.grant(forToken: named, dataset: "family", now: Self.now) }?
                .contains("no RS256 key of this dataset has its kid") == true)
    }

    /// Each refusal names the check that failed, and never carries the token.
    @Test func refusalsNameTheFailedCheck() throws {
        let directory = try TemporaryDirectory()
        let rsa = try AsymmetricKey.generate(.rsa)
        let p256 = try AsymmetricKey.generate(.p256)
        let verifier = try Self.verifier(in: directory, keys: rsa.publicKeyPEM)
        func refused(_ header: [String: Any], _ claims: [String: Any], sign: (Data) throws -> Data) throws -> String {
            let token = try Self.token(header, claims, sign: sign)
            let reason = try #require(
                Self.refusal { try verifier.grant(forToken: token, dataset: "family", now: Self.now) })
            #expect(!reason.contains(token) && !reason.contains(token.split(separator: ".")[1]))
            return reason
        }
        let byRSA = { (input: Data) throws -> Data in try rsa.sign(input) }
        #expect(try refused(["alg": "none"], Self.claims()) { _ in Data() }.contains("alg none"))
        // The algorithm confusion: an HS256 token whose secret is the RSA public key's PEM.
        let confused = try refused(["alg": "HS256"], Self.claims()) {
            try Crypto.hmacSHA256(key: Data(rsa.publicKeyPEM.utf8), message: $0)
        }
        #expect(confused.contains("alg HS256 is not accepted here; this dataset accepts RS256"))
        #expect(try refused(["alg": "ES256"], Self.claims()) { try p256.sign($0) }.contains("accepts RS256"))
        #expect(try refused(["alg": "RS256"], Self.claims("bob", ["aud": "other"]), sign: byRSA).contains("audience"))
        #expect(
            try refused(["alg": "RS256"], Self.claims("bob", ["aud": ["a", "b"]]), sign: byRSA).contains("audience"))
        #expect(
            try refused(["alg": "RS256"], Self.claims("bob", ["iss": "https://evil/"]), sign: byRSA).contains("issuer"))
        #expect(
            try refused(
                ["alg": "RS256"], Self.claims("bob", ["exp": Self.now.timeIntervalSince1970 - 61]), sign: byRSA
            ).contains("expired at"))
        #expect(try refused(["alg": "RS256"], Self.claims("bob", ["exp": NSNull()]), sign: byRSA).contains("no expiry"))
        #expect(
            try refused(
                ["alg": "RS256"], Self.claims("bob", ["nbf": Self.now.timeIntervalSince1970 + 120]), sign: byRSA
            ).contains("not valid before"))
        #expect(try refused(["alg": "RS256"], Self.claims("", [:]), sign: byRSA).contains("subject"))
        #expect(try refused(["alg": "RS256", "crit": ["exp"]], Self.claims(), sign: byRSA).contains("critical"))
        // Tampered after signing.
        let good = try Self.token(["alg": "RS256"], Self.claims(), sign: byRSA)
        var parts = good.split(separator: ".").map(String.init)
        parts[1] = try JSONSerialization.data(withJSONObject: Self.claims("mallory"), options: [.sortedKeys])
            .base64URLEncoded
        #expect(
            Self.refusal {
                try verifier.grant(forToken: parts.joined(separator: "."), dataset: "family", now: Self.now)
            }
                == JWTRefusal.signature.description)
        // Within the leeway: accepted.
        let recent = try Self.token(
            ["alg": "RS256"], Self.claims("bob", ["exp": Self.now.timeIntervalSince1970 - 30]), sign: byRSA)
        #expect(try verifier.grant(forToken: recent, dataset: "family", now: Self.now).subject == "bob")
        #expect(Self.refusal { try verifier.grant(forToken: "a.b.c", dataset: "family", now: Self.now) } != nil)
        // A claim given twice, deep nesting, a token too long: refused before any key is tried.
        let twice = Data(#"{"sub":"bob","sub":"admin","exp":1,"iss":"i","aud":"a"}"#.utf8).base64URLEncoded
        let header = Data(#"{"alg":"RS256"}"#.utf8).base64URLEncoded
        let deep = Data((String(repeating: "[", count: 2_000) + String(repeating: "]", count: 2_000)).utf8)
            .base64URLEncoded
        for (token, reason) in [
            ("\(header).\(twice).AAAA", "payload is not strict JSON"),
            ("\(deep).\(twice).AAAA", "header is not strict JSON"),
            (String(repeating: "a", count: 9_000) + ".b.c", "longer than"),
        ] {
            #expect(
                Self.refusal { try verifier.grant(forToken: token, dataset: "family", now: Self.now) }?.contains(reason)
                    == true, "\(reason)")
        }
        #expect(
            Self.refusal { try verifier.grant(forToken: good, dataset: "work", now: Self.now) }
                == JWTRefusal.notConfigured.description)
    }

    @Test func aKeyFileThatChangesIsReadAgainAndABrokenOneKeepsTheKeysBefore() throws {
        let directory = try TemporaryDirectory()
        let first = try AsymmetricKey.generate(.p256)
        let second = try AsymmetricKey.generate(.p256)
        let reports = Locked<[String]>([])
        let verifier = try Self.verifier(in: directory, keys: try Self.jwks([("one", first)])) { message in
            reports.withLock { $0.append(message) }
        }
        let byFirst = try Self.token(["alg": "ES256", "kid": "one"], Self.claims()) { try first.sign($0) }
        let bySecond = try Self.token(["alg": "ES256", "kid": "two"], Self.claims()) { try second.sign($0) }
        #expect(try verifier.grant(forToken: byFirst, dataset: "family", now: Self.now).subject == "bob")
        #expect(Self.refusal { try verifier.grant(forToken: bySecond, dataset: "family", now: Self.now) } != nil)

        // Rotated: the second key in, the first one out.
        try Self.jwks([("two", second)]).write(toFile: directory.path("keys"), atomically: true, encoding: .utf8)
        Thread.sleep(forTimeInterval: 1.1)
        #expect(try verifier.grant(forToken: bySecond, dataset: "family", now: Self.now).subject == "bob")
        #expect(
            Self.refusal { try verifier.grant(forToken: byFirst, dataset: "family", now: Self.now) }?
                .contains("no ES256 key of this dataset has its kid") == true)
        #expect(reports.value.count == 1 && reports.value[0].contains("again"))

        try "{not json".write(toFile: directory.path("keys"), atomically: true, encoding: .utf8)
        Thread.sleep(forTimeInterval: 1.1)
        #expect(try verifier.grant(forToken: bySecond, dataset: "family", now: Self.now).subject == "bob")
        #expect(reports.value.count == 2 && reports.value[1].contains("stay in use"))
    }

    /// The file's JSON Schema lists exactly the members the server reads.
    @Test func theSchemaOfTheConfigurationFileListsWhatTheServerReads() throws {
        let url = DocumentedCode.packageRoot.appendingPathComponent("docs/schemas/jwt-config.schema.json")
        let schema = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let top = try #require(schema["properties"] as? [String: Any])
        #expect(Set(top.keys) == Set(JWTConfiguration.fields))
        let datasets = try #require(top["datasets"] as? [String: Any])
        let entry = try #require(datasets["additionalProperties"] as? [String: Any])
        let members = try #require(entry["properties"] as? [String: Any])
        #expect(Set(members.keys) == Set(JWTConfiguration.datasetFields))
        #expect((top["leewaySeconds"] as? [String: Any])?["maximum"] as? Int == JWTConfiguration.maximumLeewaySeconds)
        #expect((top["leewaySeconds"] as? [String: Any])?["default"] as? Int == JWTConfiguration.defaultLeewaySeconds)
    }

    @Test func configurationAndKeyFilesAreRefusedNamingTheFileAndTheField() throws {
        let directory = try TemporaryDirectory()
        let url = URL(fileURLWithPath: directory.path("jwt.json"))
        func refusal(_ json: String) -> String? {
            do {
                try json.write(to: url, atomically: true, encoding: .utf8)
                let configuration = try JWTConfiguration.load(from: url)
                _ = try JWTVerifier(configuration: configuration) { _ in }
                return nil
            } catch {
                return "\(error)"
            }
        }
        let entry = #""issuer":"i","audience":"a""#
        #expect(
            refusal(#"{"datasets":{"family":{\#(entry),"keys":"k","extra":1}}}"#)?.contains("datasets.family.extra")
                == true)
        #expect(
            refusal(#"{"datasets":{"family":{"audience":"a","keys":"k"}}}"#)?.contains(
                "datasets.family.issuer is missing") == true)
        #expect(refusal(#"{"datasets":{"family":{\#(entry)}}}"#)?.contains("neither keys") == true)
        #expect(
            refusal(#"{"leewaySeconds":9000,"datasets":{"family":{\#(entry),"keys":"k"}}}"#)?.contains("leewaySeconds")
                == true)
        #expect(refusal(#"{"datasets":{"family":{\#(entry),"keys":"missing.pem"}}}"#)?.contains("missing.pem") == true)
        try "short".write(toFile: directory.path("secret"), atomically: true, encoding: .utf8)
        #expect(
            refusal(#"{"datasets":{"family":{\#(entry),"hs256SecretFile":"secret"}}}"#)?.contains("32 or more") == true)
        let privateKey = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
        try privateKey.write(toFile: directory.path("private.pem"), atomically: true, encoding: .utf8)
        #expect(refusal(#"{"datasets":{"family":{\#(entry),"keys":"private.pem"}}}"#)?.contains("PRIVATE KEY") == true)
        #expect(refusal(#"{"datasets":{}}"#)?.contains(url.path) == true)
    }
}

/// `ostore-server serve --jwt-config`: devices sync with their identity provider's tokens, and a
/// site belongs to the subject that first used it.
@Suite("JSON Web Tokens on a live server")
struct JSONWebTokenServerTests {
    @Test(arguments: StorageBackend.allCases)
    func devicesSyncWithTheirProvidersTokensAndASiteBelongsToItsSubject(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let key = try AsymmetricKey.generate(.p256)
        try JSONWebTokenTests.jwks([("k", key)]).write(
            toFile: directory.path("keys.json"), atomically: true, encoding: .utf8)
        let configuration =
            #"{"datasets":{"family":{"issuer":"\#(JSONWebTokenTests.issuer)","audience":"\#(JSONWebTokenTests.audience)","#
            + #""keys":"keys.json"}}}"#
        try configuration.write(toFile: directory.path("jwt.json"), atomically: true, encoding: .utf8)
        let server = try LiveServer(
            dataDirectory: URL(fileURLWithPath: directory.path("data")), backend: backend,
            arguments: ["--jwt-config", directory.path("jwt.json")])
        _ = try makeDataset(server, "family")
        func token(_ subject: String, expiresIn seconds: Double = 3_600, issuedAt: Double = 0) throws -> String {
            let now = Date().timeIntervalSince1970
            return try JSONWebTokenTests.token(
                ["alg": "ES256", "kid": "k"],
                JSONWebTokenTests.claims(subject, ["exp": now + seconds, "iat": now - issuedAt])
            ) { try key.sign($0) }
        }

        let bob = TestPeer(server, dataset: "family", token: try token("bob"), siteByte: 1)
        #expect(try bob.hello().protocolVersion != nil)
        _ = try bob.push([bob.change(.insert, "a", ["id": .text("a"), "title": .text("milk")], seq: 1)])
        let carol = TestPeer(server, dataset: "family", token: try token("carol"), siteByte: 2)
        _ = try carol.hello()
        #expect(try carol.pullAll().changes.map { $0.columns["title"] } == [.text("milk")])

        // Another subject cannot take Bob's site; Bob's next token (issued later) keeps it.
        let eve = TestPeer(server, dataset: "family", token: try token("eve"), siteByte: 1)
        #expect(throws: UnexpectedAnswer.self) { try eve.hello() }
        let refused = try server.request(
            "POST", "/v1/datasets/family/hello", token: eve.token,
            json: try ProtocolJSON.encode(HelloRequest(site: eve.site, schema: eve.schema)))
        #expect(refused.status == 403 && refused.errorCode == "site_forbidden")
        let renewed = TestPeer(server, dataset: "family", token: try token("bob", issuedAt: 10), siteByte: 1)
        _ = try renewed.push([renewed.change(.update, "a", ["title": .text("oat milk")], seq: 2)])

        // An expired token: 401, with the check that failed and without the token.
        let expired = try token("bob", expiresIn: -600)
        let answer = try server.request(
            "POST", "/v1/datasets/family/hello", token: expired,
            json: try ProtocolJSON.encode(HelloRequest(site: bob.site, schema: bob.schema)))
        #expect(answer.status == 401 && answer.errorCode == "unauthorized")
        #expect(answer.text.contains("expired") && !answer.text.contains(expired.split(separator: ".")[2]))
        // Tokens of `ostore-server token create` keep working beside them.
        let stored = TestPeer(server, dataset: "family", token: try makeDataset(server, "family"), siteByte: 3)
        #expect(try stored.pullAll().changes.last?.columns["title"] == .text("oat milk"))
    }

    @Test func aServerWithoutJWTConfigurationRefusesThemSayingSo() throws {
        let server = try LiveServer(backend: .sqlite)
        _ = try makeDataset(server, "family")
        let key = try AsymmetricKey.generate(.p256)
        let token = try JSONWebTokenTests.token(["alg": "ES256"], JSONWebTokenTests.claims()) { try key.sign($0) }
        let answer = try server.request(
            "POST", "/v1/datasets/family/pull", token: token,
            json: try ProtocolJSON.encode(
                PullRequest(
                    protocolVersion: 1, schemaVersion: SchemaVersion(1, 0), site: SiteID(bytes: Data(count: 16))!,
                    cursor: nil)))
        #expect(answer.status == 401 && answer.text.contains("accepts no JSON Web Tokens"))
    }
}
