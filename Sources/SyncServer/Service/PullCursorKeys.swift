import Foundation
import SyncProtocol

/// The keys a server signs pull cursors with and checks them against (``CursorKey``): what
/// ``SyncStorage/cursorKeys()`` returned, kept in memory, so a pull reads no key from storage. They
/// are read again when a cursor names a key newer than the newest kept (another server of the
/// deployment read a rotation first: its cursors reach this one), and once `refresh` has passed
/// since the last read, so a rotation reaches a server that no such cursor reaches, and a dropped
/// key stops being accepted there within `refresh`.
///
/// ```swift
/// let keys = PullCursorKeys(storage: storage, refresh: .seconds(60))
/// let text = try keys.seal(cursor)
/// let same = try keys.open(text, dataset: "family")
/// ```
final class PullCursorKeys: Sendable {
    private let storage: any SyncStorage
    private let refresh: Duration
    /// The keys as last read, newest first, and when.
    private let kept = LockedState<(keys: [CursorKey], readAt: ContinuousClock.Instant)?>(nil)

    init(storage: any SyncStorage, refresh: Duration) {
        self.storage = storage
        self.refresh = refresh
    }

    /// `cursor` as clients hold it, signed with the newest key.
    func seal(_ cursor: PullCursor) throws(ServerError) -> String {
        try cursor.signed(with: try current()[0])
    }

    /// The cursor `text` stands for, when one of the two newest keys signed it for `dataset`; else
    /// throws `ErrorBody(.invalidCursor)` (or a ``ServerError`` when the keys cannot be read).
    func open(_ text: String, dataset: String) throws -> PullCursor {
        let signed = try PullCursor.Signed(text)
        var keys = try current()
        if signed.keyID > keys[0].id { keys = try read() }
        guard let key = keys.prefix(2).first(where: { $0.id == signed.keyID }) else {
            throw ErrorBody(
                .invalidCursor,
                signed.keyID < keys[0].id
                    ? "the cursor was signed with a key the server no longer accepts (its cursor keys were rotated "
                        + "since); pull again without a cursor"
                    : "the cursor is not one this server issued; pull again without a cursor")
        }
        return try signed.open(with: key, dataset: dataset)
    }

    private func current() throws(ServerError) -> [CursorKey] {
        if let kept = kept.withLock({ $0 }), ContinuousClock.now - kept.readAt < refresh { return kept.keys }
        return try read()
    }

    private func read() throws(ServerError) -> [CursorKey] {
        let keys = try storage.cursorKeys()
        guard !keys.isEmpty else {
            throw ServerError(
                .storage, "the storage returned no pull cursor key",
                fix: "run `ostore-server cursor-keys rotate` to add one")
        }
        kept.withLock { $0 = (keys, .now) }
        return keys
    }
}
