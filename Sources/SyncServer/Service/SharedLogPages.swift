/// The log pages read once for many woken live pulls at once (``WaitingPulls``): caught-up devices
/// of a dataset hold the same cursor and ask for the same page, which differs between them only
/// when it carries a change of one of them (a site never receives its own). One page is read per
/// cursor, limit and dataset, excluding no site, and is the answer of every pull whose site it
/// does not carry; the others read their own.
///
/// A page is shared only by pulls woken together: each was waiting when the change that woke
/// them was stored, so a page read after that is an answer to each.
///
/// ```swift
/// let pages = SharedLogPages()
/// let page = try pages.page(for: .init(dataset: "family", cursor: cursor, limit: 1_000)) {
///     try readPage(excluding: nil)
/// }
/// ```
final class SharedLogPages: Sendable {
    struct Key: Hashable, Sendable {
        let dataset: String
        /// The cursor's text as the pulls sent it: equal texts are equal cursors.
        let cursor: String
        let limit: Int
    }

    /// A page read for no site in particular, as the answer it makes.
    struct Page: Sendable {
        let answer: SyncService.PullAnswer
        let log: LogPage
    }

    /// One key's page, read by the first pull that asks while the others with the same key wait.
    private final class Slot: Sendable {
        let page = LockedState<Result<Page?, any Error>?>(nil)
    }

    private let slots = LockedState<[Key: Slot]>([:])

    /// The page for `key`, read with `read` by the first caller; every later caller receives the
    /// same page (nil: the cursor is not one of the log phase), or the same error.
    func page(for key: Key, read: () throws -> Page?) throws -> Page? {
        let slot = slots.withLock { slots in
            if let slot = slots[key] { return slot }
            let slot = Slot()
            slots[key] = slot
            return slot
        }
        let result = slot.page.withLock { page in
            if let page { return page }
            let result = Result { try read() }
            page = result
            return result
        }
        return try result.get()
    }
}
