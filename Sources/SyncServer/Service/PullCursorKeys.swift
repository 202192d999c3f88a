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
    /// Log-phase cursors sealed or opened lately: the caught-up devices of a dataset hold the same
    /// cursor, whose MAC and JSON are worked out once rather than on each of their pulls.
    private let recent = LockedState(RecentCursors())

    init(storage: any SyncStorage, refresh: Duration) {
        self.storage = storage
        self.refresh = refresh
    }

    /// `cursor` as clients hold it, signed with the newest key.
    func seal(_ cursor: PullCursor) throws(ServerError) -> String {
        let key = try current()[0]
        if let text = recent.withLock({ $0.texts[.init(keyID: key.id, cursor: cursor)] }) { return text }
        let text = try cursor.signed(with: key)
        recent.withLock { $0.remember(cursor, text: text, keyID: key.id) }
        return text
    }

    /// The cursor `text` stands for, when one of the two newest keys signed it for `dataset`; else
    /// throws `ErrorBody(.invalidCursor)` (or a ``ServerError`` when the keys cannot be read).
    func open(_ text: String, dataset: String) throws -> PullCursor {
        var keys = try current()
        // Known only while its key is one of the two accepted; of another dataset, refused below.
        if let known = recent.withLock({ $0.cursors[text] }), known.cursor.dataset == dataset,
            keys.prefix(2).contains(where: { $0.id == known.keyID })
        {
            return known.cursor
        }
        let signed = try PullCursor.Signed(text)
        if signed.keyID > keys[0].id { keys = try read() }
        guard let key = keys.prefix(2).first(where: { $0.id == signed.keyID }) else {
            throw ErrorBody(
                .invalidCursor,
                signed.keyID < keys[0].id
                    ? "the cursor was signed with a key the server no longer accepts (its cursor keys were rotated "
                        + "since); pull again without a cursor"
                    : "the cursor is not one this server issued; pull again without a cursor")
        }
        let cursor = try signed.open(with: key, dataset: dataset)
        recent.withLock { $0.remember(cursor, text: text, keyID: key.id) }
        return cursor
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

/// Log-phase cursors and their texts, both ways, a few hundred at most: snapshot cursors, which
/// hold a row's key and are each read once, are not kept.
private struct RecentCursors {
    struct Sealed: Hashable {
        let keyID: Int64
        let cursor: PullCursor
    }

    static let most = 256
    private(set) var texts: [Sealed: String] = [:]
    private(set) var cursors: [String: (keyID: Int64, cursor: PullCursor)] = [:]

    mutating func remember(_ cursor: PullCursor, text: String, keyID: Int64) {
        guard cursor.snapshot == nil else { return }
        // Emptied when full: what devices hold now is back after one more pull each.
        if texts.count >= Self.most || cursors.count >= Self.most {
            texts.removeAll(keepingCapacity: true)
            cursors.removeAll(keepingCapacity: true)
        }
        texts[Sealed(keyID: keyID, cursor: cursor)] = text
        cursors[text] = (keyID, cursor)
    }
}
