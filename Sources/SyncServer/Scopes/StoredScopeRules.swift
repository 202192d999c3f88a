import Foundation
import SyncProtocol

/// A dataset's scope rules as storage keeps them: the file's text as it was given, the schema
/// definition it was checked against, and their version (every change makes a higher one), made
/// ready to decide scopes.
///
/// ```swift
/// let rules = try StoredScopeRules(version: 3, rulesText: file, definitionText: definitionJSON)
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
