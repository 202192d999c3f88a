import SyncProtocol

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
    /// Computed once here: every open compares it with the ledger, and hashing the canonical
    /// text of a whole schema cost more than the rest of an up-to-date open.
    let checksum: String
    /// `target.fingerprint`, which the ledger records beside the checksum.
    let fingerprint: String

    init(
        position: Int, kind: Kind, fromVersion: Schema.Version?, toVersion: Schema.Version, stage: MigrationStage?,
        target: SchemaSnapshot
    ) {
        self.position = position
        self.kind = kind
        self.fromVersion = fromVersion
        self.toVersion = toVersion
        self.stage = stage
        self.target = target
        fingerprint = target.fingerprint
        checksum = SHA256.hexDigest(
            "offline-store-stage 1|\(position)|\(kind.rawValue)|\(fromVersion?.description ?? "-")|\(toVersion)|"
                + fingerprint)
    }

    var label: String {
        "\(fromVersion.map { "\($0) → " } ?? "create ")\(toVersion) (\(kind.rawValue))"
    }
}
