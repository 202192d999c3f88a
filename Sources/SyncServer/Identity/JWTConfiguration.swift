import Foundation

/// Which JSON Web Tokens the server accepts, per dataset: those an identity provider of the app's
/// signed (HS256 with a shared secret, RS256 or ES256 with the public keys of a PEM or JWKS file),
/// for its issuer and audience. Read from a JSON file (`ostore-server serve --jwt-config FILE`,
/// documented by `docs/schemas/jwt-config.schema.json`):
///
/// ```json
/// {
///   "leewaySeconds": 60,
///   "datasets": {
///     "family": {"issuer": "https://login.example.com/", "audience": "reminders", "keys": "family-keys.json"}
///   }
/// }
/// ```
///
/// ```swift
/// let configuration = try JWTConfiguration.load(from: URL(fileURLWithPath: "/etc/ostore/jwt.json"))
/// ```
public struct JWTConfiguration: Sendable, Hashable {
    /// What one dataset accepts.
    public struct Dataset: Sendable, Hashable {
        /// The `iss` every token must carry.
        public var issuer: String
        /// A value the token's `aud` must be or include.
        public var audience: String
        /// A PEM file of `PUBLIC KEY` blocks or a JWKS file (RFC 7517) of RSA and P-256 keys.
        public var keysFile: URL?
        /// A file whose bytes (32 or more) are the HS256 secret.
        public var secretFile: URL?

        public init(issuer: String, audience: String, keysFile: URL? = nil, secretFile: URL? = nil) {
            self.issuer = issuer
            self.audience = audience
            self.keysFile = keysFile
            self.secretFile = secretFile
        }
    }

    /// How far `exp` and `nbf` may be passed, for clocks that differ a little.
    public var leewaySeconds: Int
    public var datasets: [String: Dataset]

    /// The members a file may have at its top and in each dataset's entry, as
    /// `docs/schemas/jwt-config.schema.json` lists them.
    static let fields = ["leewaySeconds", "datasets"]
    static let datasetFields = ["issuer", "audience", "keys", "hs256SecretFile"]

    public static let defaultLeewaySeconds = 60
    /// The most leeway a file may ask for.
    public static let maximumLeewaySeconds = 300

    public init(leewaySeconds: Int = defaultLeewaySeconds, datasets: [String: Dataset]) {
        self.leewaySeconds = leewaySeconds
        self.datasets = datasets
    }

    /// The configuration in the file at `url`; key files are found relative to its directory.
    /// Refuses, naming the file and the field, anything the schema does not allow.
    public static func load(from url: URL) throws(ServerError) -> JWTConfiguration {
        let path = url.path
        func refuse(_ problem: String) -> ServerError {
            ServerError(.invalidArgument, "\(path): \(problem)", fix: "see docs/scoped-sync.md for the file's form")
        }
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw ServerError(.invalidArgument, "\(path) cannot be read: \(error.localizedDescription)")
        }
        guard let top = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw refuse("it is not a JSON object")
        }
        if let unknown = top.keys.sorted().first(where: { !fields.contains($0) }) {
            throw refuse("unknown field \"\(unknown)\"")
        }
        var leeway = defaultLeewaySeconds
        if let value = top["leewaySeconds"] {
            guard let number = value as? Int, !(value is Bool), (0...maximumLeewaySeconds).contains(number) else {
                throw refuse("leewaySeconds must be a whole number from 0 to \(maximumLeewaySeconds)")
            }
            leeway = number
        }
        guard let entries = top["datasets"] as? [String: Any], !entries.isEmpty else {
            throw refuse("datasets must be an object naming at least one dataset")
        }
        let directory = url.deletingLastPathComponent()
        var datasets: [String: Dataset] = [:]
        for name in entries.keys.sorted() {
            let field = "datasets.\(name)"
            guard let entry = entries[name] as? [String: Any] else { throw refuse("\(field) must be an object") }
            if let unknown = entry.keys.sorted().first(where: { !datasetFields.contains($0) }) {
                throw refuse("unknown field \"\(field).\(unknown)\"")
            }
            func text(_ member: String) throws(ServerError) -> String? {
                guard let value = entry[member] else { return nil }
                guard let string = value as? String, !string.isEmpty else {
                    throw refuse("\(field).\(member) must be a non-empty string")
                }
                return string
            }
            guard let issuer = try text("issuer") else { throw refuse("\(field).issuer is missing") }
            guard let audience = try text("audience") else { throw refuse("\(field).audience is missing") }
            let keys = try text("keys").map { URL(fileURLWithPath: $0, relativeTo: directory).standardizedFileURL }
            let secret = try text("hs256SecretFile").map {
                URL(fileURLWithPath: $0, relativeTo: directory).standardizedFileURL
            }
            guard keys != nil || secret != nil else {
                throw refuse("\(field) names neither keys (a PEM or JWKS file) nor hs256SecretFile")
            }
            datasets[name] = Dataset(issuer: issuer, audience: audience, keysFile: keys, secretFile: secret)
        }
        return JWTConfiguration(leewaySeconds: leeway, datasets: datasets)
    }
}
