import SyncProtocol

/// What one sync did.
public struct SyncReport: Sendable, Hashable {
    /// Local changes the server acknowledged.
    public var pushed = 0
    /// Outgoing changes the server refused, kept with the server's reason in
    /// ``ChangeLog/refusedOutgoingChanges(_:)``.
    public var refusedOutgoing = 0
    /// Changes pulled and applied (or found already known). A change can come twice in a first
    /// sync, in its snapshot page and from the log, when its row changed while the snapshot was
    /// read; it counts each time.
    public var pulled = 0
    /// Changes from other sites waiting in the stash when the sync ended, pulled by this sync or
    /// an earlier one: for a schema that knows their tables or columns, or for their parent row
    /// (``ChangeLog/stashedCount(_:)``).
    public var stashed = 0
    /// Incoming changes this store refused to apply (a value of the wrong type for a STRICT column, a
    /// name that is not an identifier…), kept with the reason in ``ChangeLog/refusedIncomingChanges(_:)``.
    public var refusedIncoming = 0
    /// Rows removed from this store because they left the token's read scope (the user was taken
    /// off a shared list, the rules changed): gone without a delete, never pushed, and back whole
    /// if they enter the scope again. This store's changes of them that had not been pushed are
    /// kept in ``ChangeLog/refusedOutgoingChanges(_:)`` with the code `out_of_scope`.
    public var removed = 0
    /// The server could no longer serve the pull cursor (`invalid_cursor`), or had lost changes it
    /// had acknowledged, so the cursor was dropped and the dataset downloaded again in this sync.
    public var redownloaded = false
    /// Local changes queued again because the server had lost them after acknowledging them
    /// (restored from a backup); this sync pushed them again.
    public var requeued = 0
    /// Local changes stamped while this machine's clock ran ahead, which the server would have
    /// refused: stamped again and pushed by this sync (``ChangeLog/restampClocksAhead(_:)``).
    public var restamped = 0
    public var verdict: Verdict?
    public var protocolVersion: Int?
    public var datasetSchemaVersion: SchemaVersion?
    /// Whether the server holds pulls until a change arrives (protocol version 3, a
    /// `maxPullWaitMilliseconds` above 0): ``SyncEngine/sync(waitingForChanges:progress:)`` waits there.
    public var livePullsOffered = false
    /// How the live pull of ``SyncEngine/sync(waitingForChanges:progress:)`` ended; nil for a
    /// sync that did not ask to wait.
    public var liveWait: LiveWaitOutcome?

    public init() {}
}

/// How a sync that asked to wait for changes ended its wait.
public enum LiveWaitOutcome: Sendable, Hashable {
    /// The server answered: other sites' changes arrived (``SyncReport/pulled``), or the wait
    /// passed with none.
    case answered
    /// The server does not hold pulls (``SyncReport/livePullsOffered`` is false): the sync pulled
    /// without waiting; poll instead.
    case notOffered
    /// The server holds as many waiting pulls as it allows (`too_many_waiting_pulls`): the sync
    /// pulled without waiting; poll for a while before waiting again.
    case refused
    /// ``LiveWait/shouldStop`` said so: the wait was given up with nothing applied.
    case stopped
}

extension SyncReport {
    /// The name the syncing guide used for ``refusedOutgoing``.
    @available(*, deprecated, renamed: "refusedOutgoing")
    public var rejected: Int {
        get { refusedOutgoing }
        set { refusedOutgoing = newValue }
    }

    /// The name the syncing guide used for ``refusedIncoming``.
    @available(*, deprecated, renamed: "refusedIncoming")
    public var refused: Int {
        get { refusedIncoming }
        set { refusedIncoming = newValue }
    }
}

/// Progress of a pull, for a progress line: changes applied of the total the server announced.
public struct SyncProgress: Sendable, Hashable {
    public var applied: Int
    /// At least this many in all (the server's `remaining` after the first page, plus what came).
    public var total: Int
}
