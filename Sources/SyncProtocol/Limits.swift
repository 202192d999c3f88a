/// The bounds every server states in ``HelloResponse/limits`` and enforces; clients keep within
/// them (the defaults are the reference server's).
///
/// ```swift
/// let batches = pending.chunked(by: hello.limits.maxChangesPerPush)
/// ```
public struct Limits: Codable, Sendable, Hashable {
    /// A request body larger than this (after gzip is undone) is refused with 413 `body_too_large`.
    public var maxBodyBytes: Int
    /// A push carrying more changes is refused with 400 `too_many_changes`.
    public var maxChangesPerPush: Int
    /// A pull asking for more gets at most this many changes per page.
    public var maxChangesPerPull: Int
    /// How far ahead of the server's clock a change's clock may be, in milliseconds.
    public var maxClockDriftMilliseconds: Int64
    /// Longest table or column name, in Unicode scalars.
    public var maxIdentifierLength: Int
    /// Deepest nesting of JSON arrays and objects in a request.
    public var maxNestingDepth: Int
    /// Most pushes of one site the server keeps in order by their ``PushRequest/after``: a client
    /// may have this many batches sent and not yet answered, when the hello chose protocol version 2
    /// or later. Absent (nil) from servers that predate `after`: a client then sends one batch at a
    /// time (``pushesInFlight``).
    public var maxPushesInFlight: Int?
    /// Longest a pull's ``PullRequest/wait`` is honoured, in milliseconds: a larger wait is
    /// capped, never refused. 0 when the server does not hold pulls, and absent (nil) from
    /// servers that predate live pulls: a client then polls.
    public var maxPullWaitMilliseconds: Int?

    public init(
        maxBodyBytes: Int = 8 << 20, maxChangesPerPush: Int = 5_000, maxChangesPerPull: Int = 5_000,
        maxClockDriftMilliseconds: Int64 = 300_000, maxIdentifierLength: Int = 128, maxNestingDepth: Int = 32,
        maxPushesInFlight: Int? = 2, maxPullWaitMilliseconds: Int? = 30_000
    ) {
        self.maxBodyBytes = maxBodyBytes
        self.maxChangesPerPush = maxChangesPerPush
        self.maxChangesPerPull = maxChangesPerPull
        self.maxClockDriftMilliseconds = maxClockDriftMilliseconds
        self.maxIdentifierLength = maxIdentifierLength
        self.maxNestingDepth = maxNestingDepth
        self.maxPushesInFlight = maxPushesInFlight
        self.maxPullWaitMilliseconds = maxPullWaitMilliseconds
    }

    /// How many pushes a client may have in flight with this server: ``maxPushesInFlight``, 1
    /// when the server does not announce it.
    public var pushesInFlight: Int { max(1, maxPushesInFlight ?? 1) }

    /// How long this server holds a pull that asks to wait: ``maxPullWaitMilliseconds``, zero
    /// when it does not say.
    public var pullWait: Duration { .milliseconds(max(0, maxPullWaitMilliseconds ?? 0)) }

    public static let standard = Limits()
}
