import Foundation

/// A version (Protocol §7.2): the clock of a change, packed (`milliseconds << 16 | counter`), and
/// the site that issued it. Versions order by clock, then by the site id's bytes, so two sites'
/// versions never tie: the order last-writer-wins uses.
///
/// ```swift
/// let site = Data(repeating: 1, count: 16)
/// let older = ChangeVersion(clock: ChangeClock("1764000000000-0")!.packed, site: site)
/// let newer = ChangeVersion(clock: ChangeClock("1764000000000-1")!.packed, site: site)
/// #expect(older < newer)
/// ```
public struct ChangeVersion: Comparable, Hashable, Sendable {
    /// The packed clock (``ChangeClock/packed``).
    public var clock: Int64
    /// The site id's bytes (16 for every real site).
    public var site: Data

    /// Clock 0 and no site: not after any version a site issues, the version a missing one counts as.
    public static let oldest = ChangeVersion(clock: 0, site: Data())

    public init(clock: Int64, site: Data) {
        self.clock = clock
        self.site = site
    }

    /// The clock and site of a change.
    public init(_ clock: ChangeClock, _ site: SiteID) {
        self.init(clock: clock.packed, site: site.bytes)
    }

    public static func < (lhs: ChangeVersion, rhs: ChangeVersion) -> Bool {
        lhs.clock != rhs.clock ? lhs.clock < rhs.clock : lhs.site.lexicographicallyPrecedes(rhs.site)
    }
}
