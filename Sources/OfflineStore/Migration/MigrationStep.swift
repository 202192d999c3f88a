/// One unit the migrator applies and records: the creation of the first schema version
/// (position 0), or stage *n* of the plan (position *n* + 1).
struct MigrationStep: Sendable {
    enum Kind: String, Sendable {
        case create
        case lightweight
        case custom
    }

    let position: Int
    let kind: Kind
    let fromVersion: Schema.Version?
    let toVersion: Schema.Version
    let stage: MigrationStage?
    let target: SchemaSnapshot

    /// The stage's identity plus the fingerprint of the schema it produces: any edit to a
    /// shipped version's declaration, or to which kind of stage produces it, changes it.
    var checksum: String {
        SHA256.hexDigest(
            "offline-store-stage 1|\(position)|\(kind.rawValue)|\(fromVersion?.description ?? "-")|\(toVersion)|\(target.fingerprint)")
    }

    var label: String {
        "\(fromVersion.map { "\($0) → " } ?? "create ")\(toVersion) (\(kind.rawValue))"
    }
}
