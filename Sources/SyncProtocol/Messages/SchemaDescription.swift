/// What a client tells the server about its schema when it negotiates: the version, the
/// fingerprint of the synced tables' structure, the synced tables with their columns and, from
/// clients that send it, the ``SchemaDefinition`` the fingerprint is the digest of.
///
/// ```swift
/// let schema = SchemaDescription(
///     version: SchemaVersion(1, 1), fingerprint: definition.fingerprint,
///     tables: ["reminders": ["id", "title", "priority"]], definition: definition)
/// ```
public struct SchemaDescription: Codable, Sendable, Hashable {
    public var version: SchemaVersion
    /// With a ``definition``, its ``SchemaDefinition/fingerprint`` (a server refuses any other);
    /// from a client that sends none, a digest of its own (OfflineStore releases before definitions
    /// sent `SchemaSnapshot.fingerprint`). Two clients claiming one version must agree on it.
    public var fingerprint: String
    public var tables: [String: [String]]
    /// The synced tables' columns and constraints (Protocol/README.md, section 5.1); nil from a
    /// client that predates it.
    public var definition: SchemaDefinition?

    public init(
        version: SchemaVersion, fingerprint: String, tables: [String: [String]], definition: SchemaDefinition? = nil
    ) {
        self.version = version
        self.fingerprint = fingerprint
        self.tables = tables
        self.definition = definition
    }

    /// Why the hello cannot be taken as it is (`400 invalid_message`): a definition that describes
    /// no schema (``SchemaDefinition/problem(maximumIdentifierLength:)``), or a fingerprint that is
    /// not its digest. Nil without a definition.
    ///
    /// ```swift
    /// if let problem = hello.schema.definitionProblem(limits: limits) { throw ErrorBody(.invalidMessage, problem) }
    /// ```
    public func definitionProblem(limits: Limits) -> String? {
        guard let definition else { return nil }
        if let problem = definition.problem(maximumIdentifierLength: limits.maxIdentifierLength) {
            return "schema.definition: \(problem)"
        }
        let digest = definition.fingerprint
        guard digest == fingerprint else {
            return "schema.fingerprint is \(fingerprint.prefix(16))…, but the SHA-256 of the definition's canonical "
                + "text is \(digest.prefix(16))… (Protocol/README.md, section 5.1): compute the fingerprint from the "
                + "definition sent"
        }
        return nil
    }
}
