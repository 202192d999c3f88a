/// Where in a dataset's history a scope is read (``StateScopeIndex``): the state after the change
/// of a log serial, or the same state relinked under rules set after it, however many times rules
/// were set before the next change. A position is the serial shifted left by ``rulesBits``, plus
/// how many rule changes followed that serial's change.
///
/// ```swift
/// let rules = try ScopePosition.rules(after: ScopePosition.afterChange(41))  // then rules(after: rules)
/// ScopePosition.afterChange(41) < rules && rules < ScopePosition.afterChange(42)
/// ```
enum ScopePosition {
    /// Room for 65,535 rule changes between two changes of the log.
    static let rulesBits = 16

    static func afterChange(_ serial: Int64) -> Int64 { serial << Int64(rulesBits) }

    /// The position of rules set when the index stands at `end`.
    static func rules(after end: Int64) throws(ServerError) -> Int64 {
        let next = end + 1
        guard serial(of: next) == serial(of: end) else {
            throw ServerError(
                .conflict,
                "the rules of this dataset were set \((1 << rulesBits) - 1) times since its last change, as many as "
                    + "the scope index records between two changes",
                fix: "let a device push a change before setting the rules again")
        }
        return next
    }

    /// The log serial whose change the state at `position` holds last.
    static func serial(of position: Int64) -> Int64 { position >> Int64(rulesBits) }
}
