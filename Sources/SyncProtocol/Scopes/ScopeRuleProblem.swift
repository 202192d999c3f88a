/// What is wrong with a rules file (``ScopeRules``): where, as a path into the file
/// (`tables.reminders.read[0].parent`), and what, with what to do about it.
///
/// ```swift
/// do { _ = try ScopeRules.read(from: data) } catch { print(error) }  // tables.lists.read[1]: …
/// ```
public struct ScopeRuleProblem: Error, Sendable, Hashable, CustomStringConvertible {
    /// The member of the file the problem is in: `tables`, `tables.lists.read[1].in.select`.
    public var path: String
    public var message: String

    public init(_ path: String, _ message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { path.isEmpty ? message : "\(path): \(message)" }
}
