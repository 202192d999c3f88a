import SyncProtocol

/// The scope moves (``ScopeTransition``) of the latest pulls, so that each page of a move reads
/// the index once for the whole move rather than once per page: a move between two positions of
/// the index's history is the same whenever it is computed. A few moves are kept, the least
/// recently used given up first; a page whose move was given up computes it again.
///
/// ```swift
/// var transition = try cache.transition(key) { try ScopeTransition(index, identity: bob, from: from, to: to) }
/// defer { cache.keep(transition, for: key) }
/// ```
final class ScopeTransitionCache: Sendable {
    struct Key: Hashable, Sendable {
        var datasetID: Int64
        var identity: ScopeIdentity
        var from: Int64?
        var to: Int64
    }

    /// How many moves are kept: each holds the rows that enter or leave its subject's scope.
    static let capacity = 16

    private let moves = LockedState<[(key: Key, transition: ScopeTransition)]>([])

    /// The move `key` names, from the cache, or made by `make` when it is not there.
    func transition(_ key: Key, make: () throws -> ScopeTransition) throws -> ScopeTransition {
        if let known = moves.withLock({ moves in moves.first { $0.key == key }?.transition }) { return known }
        return try make()
    }

    /// Keeps `transition` (with what answering a page added to it) as the most recently used.
    func keep(_ transition: ScopeTransition, for key: Key) {
        moves.withLock { moves in
            moves.removeAll { $0.key == key }
            moves.append((key, transition))
            if moves.count > Self.capacity { moves.removeFirst(moves.count - Self.capacity) }
        }
    }
}
