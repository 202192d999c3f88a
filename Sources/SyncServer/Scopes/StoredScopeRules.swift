import Foundation
import SyncProtocol

/// A dataset's scope rules as storage keeps them: the file's text as it was given, the schema
/// definition it was checked against, and their version (every change makes a higher one), made
/// ready to decide scopes.
///
/// ```swift
/// let rules = try StoredScopeRules.compiled(version: 3, rulesText: file, definitionText: definitionJSON)
/// ```
struct StoredScopeRules: Sendable {
    let version: Int64
    let rulesText: String
    let definitionText: String
    let evaluator: ScopeEvaluator

    init(version: Int64, rulesText: String, definitionText: String) throws {
        self.version = version
        self.rulesText = rulesText
        self.definitionText = definitionText
        let definition = try JSONDecoder().decode(SchemaDefinition.self, from: Data(definitionText.utf8))
        evaluator = try ScopeEvaluator(try ScopeRules.read(from: Data(rulesText.utf8)), definition: definition)
    }
}

extension StoredScopeRules {
    /// How many rules are kept compiled: one per dataset with rules served at once, and the
    /// version before a change for the reads still under it.
    static let compiledCapacity = 16

    private static let compiledRules = LockedState<[StoredScopeRules]>([])

    /// The rules of these texts and version, compiled once: the fold and every scoped push ask for
    /// a dataset's rules, and parsing both texts and checking the rules against the schema cost
    /// more than what they then decide for a batch. Found by the texts themselves, not the version
    /// alone, so rules stored again under a version another storage used are never mistaken.
    static func compiled(version: Int64, rulesText: String, definitionText: String) throws -> StoredScopeRules {
        let known = compiledRules.withLock { compiled in
            compiled.last {
                $0.version == version && $0.rulesText == rulesText && $0.definitionText == definitionText
            }
        }
        if let known { return known }
        let rules = try StoredScopeRules(version: version, rulesText: rulesText, definitionText: definitionText)
        compiledRules.withLock { compiled in
            compiled.append(rules)
            if compiled.count > compiledCapacity { compiled.removeFirst(compiled.count - compiledCapacity) }
        }
        return rules
    }
}
