/// Where in a dataset's history a scope is read (``StateScopeIndex``): the state after the change
/// of a log serial, or the same state relinked under rules set after it. Positions order both:
/// twice the serial, plus one for the rules.
///
/// ```swift
/// ScopePosition.afterChange(41) < ScopePosition.afterRules(41)  // and both < afterChange(42)
/// ```
enum ScopePosition {
    static func afterChange(_ serial: Int64) -> Int64 { serial * 2 }
    static func afterRules(_ serial: Int64) -> Int64 { serial * 2 + 1 }
    /// The log serial whose change the state at `position` holds last.
    static func serial(of position: Int64) -> Int64 { position >> 1 }
}
