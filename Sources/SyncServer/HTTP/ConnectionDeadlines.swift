import CMicroHTTPD
import Foundation
import Synchronization

/// Deadlines for whole requests, which libmicrohttpd 0.9.75 does not have: its
/// `MHD_OPTION_CONNECTION_TIMEOUT` is reset by every byte, so a client sending one header line or
/// one body byte every few seconds holds a connection for ever. Here each connection must deliver
/// a request's complete headers within `headersTimeout` of opening or of its previous answer, and
/// its body at an average of at least `minimumBodyRate` bytes a second once `headersTimeout` has
/// passed after the headers. A connection that falls behind has its socket shut down (from one
/// watcher thread, every quarter of a second), which libmicrohttpd sees as the client going away
/// and closes; it gets no answer, as a client that stopped sending would not read one.
///
/// While a handler runs, or its answer is sent, no deadline applies: the handler bounds its own
/// wait, and libmicrohttpd's idle timeout covers a client that stops reading.
///
/// ```swift
/// let deadlines = ConnectionDeadlines(headersTimeout: .seconds(10), minimumBodyRate: 16 * 1024)
/// let watch = deadlines.opened(socket: descriptor)
/// watch.headersArrived()
/// ```
final class ConnectionDeadlines: Sendable {
    let headersTimeout: Duration
    let minimumBodyRate: Int
    /// Connections open, by identity. A connection is removed in `MHD_CONNECTION_NOTIFY_CLOSED`,
    /// which libmicrohttpd calls before it closes the socket; the watcher shuts sockets down with
    /// this lock held, so it never touches a descriptor that was closed and handed to another
    /// connection meanwhile.
    private let open = Mutex<[ObjectIdentifier: WatchedConnection]>([:])
    private let stopped = Atomic<Bool>(false)
    private let watcherDone = DispatchSemaphore(value: 0)

    init(headersTimeout: Duration, minimumBodyRate: Int, tick: Duration = .milliseconds(250)) {
        self.headersTimeout = headersTimeout
        self.minimumBodyRate = minimumBodyRate
        let thread = Thread { [self] in
            while !stopped.load(ordering: .relaxed) {
                Thread.sleep(forTimeInterval: tick.inSeconds)
                shutDownLateConnections(at: ContinuousClock.now)
            }
            watcherDone.signal()
        }
        thread.name = "ostore-http-deadlines"
        thread.start()
    }

    /// Stops the watcher thread and waits for it.
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        watcherDone.wait()
    }

    /// A connection was accepted (`MHD_CONNECTION_NOTIFY_STARTED`).
    func opened(socket: Int32) -> WatchedConnection {
        let watch = WatchedConnection(socket: socket)
        open.withLock { $0[ObjectIdentifier(watch)] = watch }
        return watch
    }

    /// The connection is closing (`MHD_CONNECTION_NOTIFY_CLOSED`): its socket is not ours to touch
    /// from here on.
    func closed(_ watch: WatchedConnection) {
        _ = open.withLock { $0.removeValue(forKey: ObjectIdentifier(watch)) }
    }

    private func shutDownLateConnections(at now: ContinuousClock.Instant) {
        open.withLock { connections in
            for watch in connections.values where watch.isLate(at: now, in: self) {
                shutdown(watch.socket, Int32(SHUT_RDWR))
            }
        }
    }
}

/// One connection's progress through its current request, updated by libmicrohttpd's callbacks
/// and read by the watcher thread.
final class WatchedConnection: Sendable {
    enum Phase {
        /// Waiting for a request's complete headers since this instant.
        case awaitingHeaders(since: ContinuousClock.Instant)
        /// Headers in at `since`; `received` body bytes since.
        case receivingBody(since: ContinuousClock.Instant, received: Int)
        /// A handler has the request, or its answer is being sent.
        case answering
        /// Shut down for a missed deadline; nothing more to watch.
        case expired
    }

    let socket: Int32
    private let phase = Mutex(Phase.awaitingHeaders(since: .now))

    init(socket: Int32) {
        self.socket = socket
    }

    func headersArrived() { phase.withLock { $0 = .receivingBody(since: .now, received: 0) } }

    func bodyReceived(_ bytes: Int) {
        phase.withLock { phase in
            if case .receivingBody(let since, let received) = phase {
                phase = .receivingBody(since: since, received: received + bytes)
            }
        }
    }

    func answering() { phase.withLock { $0 = .answering } }

    /// The answer was sent: the next request's headers are awaited from now.
    func requestEnded() {
        phase.withLock { phase in
            if case .expired = phase { return }
            phase = .awaitingHeaders(since: .now)
        }
    }

    /// Whether the connection missed its deadline; marks it expired when it did, so it is shut down
    /// once.
    fileprivate func isLate(at now: ContinuousClock.Instant, in deadlines: ConnectionDeadlines) -> Bool {
        phase.withLock { phase in
            let late: Bool
            switch phase {
            case .awaitingHeaders(let since):
                late = now - since > deadlines.headersTimeout
            case .receivingBody(let since, let received):
                let beyondGrace = now - since - deadlines.headersTimeout
                late =
                    beyondGrace > .zero && Double(received) < beyondGrace.inSeconds * Double(deadlines.minimumBodyRate)
            case .answering, .expired:
                late = false
            }
            if late { phase = .expired }
            return late
        }
    }
}
