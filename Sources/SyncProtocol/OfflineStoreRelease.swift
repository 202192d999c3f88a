/// The OfflineStore release this build belongs to: what the tools print for `--version` and the
/// client sends in `User-Agent`.
///
/// ```swift
/// print(OfflineStoreRelease.versionLine(tool: "ostore-server"))  // ostore-server 0.1.0 (sync protocol 1, 2, 3)
/// ```
public enum OfflineStoreRelease {
    /// The release, as `MAJOR.MINOR.PATCH`.
    public static let version = "0.1.0"

    /// One line naming `tool`, this release and the protocol versions it speaks
    /// (``ProtocolVersion/supported``).
    public static func versionLine(tool: String) -> String {
        "\(tool) \(version) (sync protocol \(ProtocolVersion.supported.map(String.init).joined(separator: ", ")))"
    }
}
