import OfflineStore
import RemindersModel

/// The release of the Reminders app this run simulates (`--schema`): which schema version the
/// migrator may bring the database to, and so which columns and tables the commands may use.
struct AppRelease {
    let version: Schema.Version

    /// Every release the plan declares, oldest first.
    static let versions: [Schema.Version] = RemindersMigrationPlan.schemas.map { $0.versionIdentifier }
    static let latest = AppRelease(version: versions[versions.count - 1])

    private init(version: Schema.Version) {
        self.version = version
    }

    /// Accepts the plan's versions as `1.0` or `1.0.0`.
    init(schemaArgument: String) throws(CommandFailure) {
        guard
            let version = Self.versions.first(where: { [Self.shortForm($0), $0.description].contains(schemaArgument) })
        else {
            throw .usage(
                "--schema must be one of \(Self.versions.map(Self.shortForm).joined(separator: ", ")), "
                    + "not \"\(schemaArgument)\"")
        }
        self.version = version
    }

    /// `1.1`: how the user writes it on the command line.
    static func shortForm(_ version: Schema.Version) -> String {
        version.patch == 0 ? "\(version.major).\(version.minor)" : version.description
    }

    /// What a release's schema has beyond 1.0.0, and the version that added it.
    enum Feature {
        /// `priority` and `notes` on reminders (and tags).
        case priorityAndNotes
        /// `dueAt` and the `reminderSearch` full-text table.
        case dueAtAndSearch
        /// A list's `ownerID` and its members (`listMembers`).
        case sharedLists

        var since: Schema.Version {
            switch self {
            case .priorityAndNotes: RemindersSchemaV1_1.versionIdentifier
            case .dueAtAndSearch: RemindersSchemaV2.versionIdentifier
            case .sharedLists: RemindersSchemaV2_1.versionIdentifier
            }
        }
    }

    func has(_ feature: Feature) -> Bool { version >= feature.since }

    /// Refuses an option the release's schema has no column or table for.
    func require(_ feature: Feature, for option: String) throws(CommandFailure) {
        guard has(feature) else {
            throw .usage("\(option) needs schema \(Self.shortForm(feature.since)) or later")
        }
    }

    /// The columns of `reminders` as this release declares them, in declaration order: what
    /// `list --json` prints, whatever else a newer tool may one day add to the table.
    var reminderColumns: [String] {
        guard let schema = RemindersMigrationPlan.schemas.first(where: { $0.versionIdentifier == version }),
            let table = schema.models.map({ $0.tableDefinition }).first(where: { $0.name == "reminders" })
        else { preconditionFailure("every Reminders schema declares a reminders table") }
        return table.columns.map(\.name)
    }
}
