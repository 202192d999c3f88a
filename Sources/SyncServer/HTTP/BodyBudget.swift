import Synchronization

/// The memory every request body in flight may take together, server-wide: each request reserves
/// what it buffers (its declared `Content-Length` when the headers arrive, more as a chunked or
/// compressed body grows) and gives it back when its answer is sent. A request that does not fit
/// is answered `503 unavailable` with `Retry-After`, so a crowd of large uploads costs the server
/// at most the budget however many connections it accepts.
///
/// ```swift
/// let budget = BodyBudget(bytes: 256 << 20)
/// guard budget.reserve(8 << 20) else { return .error(.unavailable, "…") }
/// defer { budget.release(8 << 20) }
/// ```
final class BodyBudget: Sendable {
    let capacity: Int
    private let reserved = Atomic<Int>(0)

    init(bytes: Int) {
        capacity = bytes
    }

    /// Bytes reserved now.
    var inUse: Int { reserved.load(ordering: .relaxed) }

    /// Takes `bytes` from the budget; `false` (and nothing taken) when they do not fit.
    func reserve(_ bytes: Int) -> Bool {
        guard bytes > 0 else { return true }
        var current = reserved.load(ordering: .relaxed)
        while true {
            guard current + bytes <= capacity else { return false }
            let (exchanged, original) = reserved.compareExchange(
                expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    func release(_ bytes: Int) {
        guard bytes > 0 else { return }
        reserved.subtract(bytes, ordering: .relaxed)
    }
}
