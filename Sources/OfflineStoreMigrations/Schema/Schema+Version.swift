import SyncProtocol

extension Schema {
    /// A schema's version, `major.minor.patch`: the protocol's ``SchemaVersion``, so the version a
    /// store declares is the one it announces, parsed by the same rules.
    ///
    /// ```swift
    /// static let versionIdentifier: Schema.Version = "1.0.0"
    /// ```
    public typealias Version = SchemaVersion
}
