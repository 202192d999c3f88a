/// The protocol versions this build speaks, newest last. A client announces its list in
/// ``HelloRequest``; the server picks the highest version both speak.
///
/// ```swift
/// let chosen = ProtocolVersion.highestCommon(client: [1, 2], server: ProtocolVersion.supported)  // 1
/// ```
///
/// See `Protocol/README.md`, "Versions and negotiation".
public enum ProtocolVersion {
    public static let current = 1
    public static let supported = [1]

    /// The highest version in both lists; nil when they share none.
    public static func highestCommon(client: [Int], server: [Int]) -> Int? {
        Set(client).intersection(server).max()
    }
}
