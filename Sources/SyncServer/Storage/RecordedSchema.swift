import Foundation
import SyncProtocol

/// What a dataset has recorded of one schema version, and the one rule both backends decide a
/// hello's schema by (Protocol/README.md, section 11.1): the fingerprint of hellos without a
/// definition, and the fingerprint and definition of hellos with one, are two kinds, each
/// compared only with its own kind and recorded the first time a read-write hello brings it. A
/// client that predates definitions sends a digest of its own, which no definition's digest could
/// be compared with.
///
/// ```swift
/// let recorded = RecordedSchema(fingerprint: legacy, definitionFingerprint: nil)
/// if try recorded.check(hello.schema) == .definition { /* store the definition */ }
/// ```
struct RecordedSchema: Sendable, Hashable {
    /// From hellos without a definition.
    var fingerprint: String?
    /// From hellos with a definition: its digest.
    var definitionFingerprint: String?

    enum Kind: Sendable, Hashable {
        /// A fingerprint from a hello without a definition.
        case fingerprint
        /// A definition and its digest.
        case definition
    }

    /// Throws `409 schema_conflict` when the version is recorded with another fingerprint of the
    /// schema's kind; returns the kind to record when none of it is recorded yet, else nil.
    func check(_ schema: SchemaDescription) throws(ErrorBody) -> Kind? {
        let kind: Kind = schema.definition == nil ? .fingerprint : .definition
        guard let known = kind == .fingerprint ? fingerprint : definitionFingerprint else { return kind }
        guard known == schema.fingerprint else {
            let what = kind == .definition ? "a definition with fingerprint" : "fingerprint"
            throw ErrorBody(
                .schemaConflict,
                "schema \(schema.version) was announced with \(what) \(known.prefix(16))…, this client has "
                    + "\(schema.fingerprint.prefix(16))…: two builds claim the same version; give the changed schema "
                    + "a new version number")
        }
        return nil
    }

    /// Throws `409 schema_conflict` when `schema`'s definition is not a minor step after, or
    /// before, a definition of its major the dataset records (``SchemaDefinition/minorStepProblem(from:)``):
    /// recorded, it would let pushes under its version past the rules clients of the others keep.
    ///
    /// ```swift
    /// try RecordedSchema.checkMinorSteps(hello.schema, among: try storage.schemaDefinitions(of: "family"))
    /// ```
    static func checkMinorSteps(_ schema: SchemaDescription, among recorded: [SchemaVersion: SchemaDefinition])
        throws(ErrorBody)
    {
        guard let definition = schema.definition else { return }
        for (version, other) in recorded.sorted(by: { $0.key < $1.key })
        where version.major == schema.version.major && version != schema.version {
            let isOlder = version < schema.version
            guard
                let problem = isOlder
                    ? definition.minorStepProblem(from: other) : other.minorStepProblem(from: definition)
            else { continue }
            throw ErrorBody(
                .schemaConflict,
                "schema \(schema.version)'s definition is not a minor step \(isOlder ? "after" : "before") "
                    + "\(version)'s, which this dataset knows: \(problem) (Protocol/README.md, section 7.3); a "
                    + "change like this needs a new major version")
        }
    }

    /// A definition as kept in storage: its canonical JSON.
    static func storedText(_ definition: SchemaDefinition) throws -> String {
        String(decoding: try ProtocolJSON.encode(definition), as: UTF8.self)
    }

    /// A stored version read back.
    static func version(fromStored text: String) throws(ServerError) -> SchemaVersion {
        guard let version = SchemaVersion(text) else {
            throw ServerError(.storage, "a recorded schema version reads \(text.prefix(40).debugDescription)")
        }
        return version
    }

    /// A stored definition read back.
    static func definition(fromStored text: String) throws -> SchemaDefinition {
        try JSONDecoder().decode(SchemaDefinition.self, from: Data(text.utf8))
    }
}
