import SyncProtocol

/// How long a sync may wait at the server for other sites' changes once it is caught up, and when
/// to give the wait up (``SyncEngine/sync(waitingForChanges:progress:)``).
///
/// ```swift
/// let stop = Atomic<Bool>(false)
/// while !stop.load(ordering: .relaxed) {
///     let report = try engine.sync(waitingForChanges: LiveWait(timeout: .seconds(20)) { stop.load(ordering: .relaxed) })
///     if report.liveWait != .answered { sleep(30) }  // the server does not hold pulls: poll
/// }
/// ```
///
/// The timeout must stay below the transport's stall detection, which would take the silent wait
/// for a server that hangs: ``HTTPClient``'s default `lowSpeedTime` is 30 s.
public struct LiveWait {
    /// The longest wait asked of the server; it caps it at its `maxPullWaitMilliseconds`.
    public var timeout: Duration
    /// Asked on the syncing thread every ``checkInterval`` while the server holds the pull: true
    /// gives the wait up (within about a second), and the sync returns with
    /// ``LiveWaitOutcome/stopped``. Where a daemon notices a local commit to push.
    public var shouldStop: () -> Bool
    public var checkInterval: Duration

    public init(
        timeout: Duration, checkInterval: Duration = .milliseconds(250), shouldStop: @escaping () -> Bool = { false }
    ) {
        self.timeout = timeout
        self.checkInterval = checkInterval
        self.shouldStop = shouldStop
    }

    /// The wait to ask a server with `limits`, in milliseconds; nil when it does not hold pulls
    /// (`protocolVersion` below ``ProtocolVersion/livePulls`` or no `maxPullWaitMilliseconds`).
    static func milliseconds(_ timeout: Duration, protocolVersion: Int, limits: Limits) -> Int? {
        guard isOffered(protocolVersion: protocolVersion, limits: limits) else { return nil }
        let asked = min(timeout, limits.pullWait)
        let milliseconds = asked.components.seconds * 1000 + asked.components.attoseconds / 1_000_000_000_000_000
        return milliseconds > 0 ? Int(milliseconds) : nil
    }

    /// Whether a server of `limits` whose hello chose `protocolVersion` holds pulls.
    static func isOffered(protocolVersion: Int, limits: Limits) -> Bool {
        protocolVersion >= ProtocolVersion.livePulls && limits.pullWait >= .milliseconds(1)
    }
}
