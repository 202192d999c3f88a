/// What a client tells the server about its schema when it negotiates: the version, the
/// fingerprint of the synced tables' structure, and the synced tables with their columns.
///
/// ```swift
/// let schema = SchemaDescription(
///     version: SchemaVersion(1, 1), fingerprint: "4c1f…", tables: ["reminders": ["id", "title", "priority"]])
/// ```
public struct SchemaDescription: Codable, Sendable, Hashable {
    public var version: SchemaVersion
    /// Lowercase hexadecimal SHA-256 of the schema's canonical text (OfflineStore's
    /// `SchemaSnapshot.fingerprint`); two clients claiming one version must agree on it.
    public var fingerprint: String
    public var tables: [String: [String]]

    public init(version: SchemaVersion, fingerprint: String, tables: [String: [String]]) {
        self.version = version
        self.fingerprint = fingerprint
        self.tables = tables
    }
}
