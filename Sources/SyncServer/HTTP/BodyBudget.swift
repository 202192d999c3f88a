import Synchronization

/// The memory request bodies in flight may take, server-wide and per share (the requests of one
/// token, as ``HTTPAdmission/admit(note:budgetShare:)`` names them): each request reserves what it
/// buffers (its declared `Content-Length` when the headers arrive, more as a compressed body grows)
/// and gives it back when its answer is sent. A request that does not fit is answered
/// `503 unavailable` with `Retry-After`, so a crowd of large uploads costs the server at most the
/// budget however many connections it accepts, and one token's uploads, however slow, leave the
/// rest of it to others.
///
/// ```swift
/// let budget = BodyBudget(bytes: 256 << 20, perShare: 64 << 20)
/// guard budget.reserve(8 << 20, share: grant.tokenID) else { return .error(.unavailable, "…") }
/// defer { budget.release(8 << 20, share: grant.tokenID) }
/// ```
final class BodyBudget: Sendable {
    let capacity: Int
    let perShare: Int
    /// Bytes reserved in all, and by each share holding any.
    private let reserved = Mutex<(total: Int, byShare: [String: Int])>((0, [:]))

    init(bytes: Int, perShare: Int) {
        capacity = bytes
        self.perShare = perShare
    }

    /// Takes `bytes` from the budget (and from `share`'s part of it); `false`, and nothing taken,
    /// when they do not fit.
    func reserve(_ bytes: Int, share: String?) -> Bool {
        guard bytes > 0 else { return true }
        return reserved.withLock { reserved in
            guard reserved.total + bytes <= capacity else { return false }
            if let share {
                let held = reserved.byShare[share, default: 0]
                guard held + bytes <= perShare else { return false }
                reserved.byShare[share] = held + bytes
            }
            reserved.total += bytes
            return true
        }
    }

    func release(_ bytes: Int, share: String?) {
        guard bytes > 0 else { return }
        reserved.withLock { reserved in
            reserved.total -= bytes
            guard let share, let held = reserved.byShare[share] else { return }
            reserved.byShare[share] = held > bytes ? held - bytes : nil
        }
    }
}
