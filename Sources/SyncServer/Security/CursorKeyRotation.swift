/// What ``SyncStorage/rotateCursorKeys()`` did: the key servers sign pull cursors with from then
/// on, the one before it (whose cursors they still accept), and the keys it dropped (whose cursors
/// they refuse: their devices download the dataset again).
///
/// ```swift
/// let rotation = try storage.rotateCursorKeys()
/// print("signing with key \(rotation.added), dropped \(rotation.dropped)")
/// ```
public struct CursorKeyRotation: Sendable, Hashable {
    public var added: Int64
    /// Nil when the rotation made the storage's first key.
    public var previous: Int64?
    public var dropped: [Int64]

    public init(added: Int64, previous: Int64?, dropped: [Int64]) {
        self.added = added
        self.previous = previous
        self.dropped = dropped
    }
}
