/// The protocol versions this build speaks, newest last. A client announces its list in
/// ``HelloRequest``; the server picks the highest version both speak. Version 2 is version 1 with
/// ``PushRequest/after`` (a push stored only after the batch it follows): a server of version 1
/// would ignore that member, so it refuses a push naming version 2 (`protocol_unsupported`) instead
/// of storing it out of order. Version 3 is version 2 with ``PullRequest/wait`` (a pull that
/// waits at the server for the next change): a version-2 server would answer such a pull at once,
/// and a client waiting in a loop would poll it without pause.
///
/// ```swift
/// let chosen = ProtocolVersion.highestCommon(client: [1], server: ProtocolVersion.supported)  // 1
/// ```
///
/// See `Protocol/README.md`, "Versions and negotiation".
public enum ProtocolVersion {
    public static let current = 3
    public static let supported = [1, 2, 3]
    /// The first version whose pushes may carry ``PushRequest/after``.
    public static let pushesInOrder = 2
    /// The first version whose pulls may carry ``PullRequest/wait``.
    public static let livePulls = 3

    /// The highest version in both lists; nil when they share none.
    public static func highestCommon(client: [Int], server: [Int]) -> Int? {
        Set(client).intersection(server).max()
    }
}
