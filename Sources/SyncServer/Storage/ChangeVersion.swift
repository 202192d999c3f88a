import Foundation

/// A clock and the site that issued it: the order of last-writer-wins, clock first, then the
/// site id's bytes (the rule in `Protocol/README.md`, the same as OfflineStore's client).
struct ChangeVersion: Comparable, Sendable {
    var clock: Int64
    var site: Data

    static func < (lhs: ChangeVersion, rhs: ChangeVersion) -> Bool {
        lhs.clock != rhs.clock ? lhs.clock < rhs.clock : lhs.site.lexicographicallyPrecedes(rhs.site)
    }
}
