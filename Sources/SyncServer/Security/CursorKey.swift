import Foundation

/// One of the secret keys that authenticate pull cursors (HMAC-SHA256, ``PullCursor``), kept in the
/// storage so that every server of a deployment signs and checks the same way. Keys are numbered
/// from 1 up; servers sign with the newest and accept the newest and the one before it, and
/// `ostore-server cursor-keys rotate` (``SyncStorage/rotateCursorKeys()``) adds one.
///
/// Its description, debug description and mirror name the id alone: the secret is never printed or
/// logged, even by a `print(key)` or a `dump(keys)` left in by mistake.
///
/// ```swift
/// let newest = try storage.cursorKeys()[0]
/// print(newest)  // cursor key 3
/// ```
public struct CursorKey: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// Numbers the keys in the order they were made; a cursor names the one it was signed with.
    public let id: Int64
    let secret: Data

    /// Bytes of a key's secret: as many as SHA-256's block takes without hashing the key first.
    static let secretLength = 32

    public init(id: Int64, secret: Data) {
        self.id = id
        self.secret = secret
    }

    /// A new key's secret, from the system's random number generator.
    static func newSecret() throws(ServerError) -> Data {
        try Crypto.randomBytes(secretLength)
    }

    public var description: String { "cursor key \(id)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["id": id]) }
}
