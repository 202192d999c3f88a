import Foundation
import OfflineStore
import Testing

/// ``ModelRecord``: a record declared by its table's model, its coding keys checked against the
/// table's columns when a migrator is made.
@Suite("Records of a model")
struct ModelRecordTests {
    enum GameV1: VersionedSchema {
        static let versionIdentifier: Schema.Version = "1.0.0"
        static let models: [any Model.Type] = [Players.self]
    }

    enum GameV2: VersionedSchema {
        static let versionIdentifier: Schema.Version = "1.1.0"
        static let models: [any Model.Type] = [Players.self, Teams.self]
    }

    enum Players: Model {
        static let tableDefinition = TableDefinition("players", options: [.strict]) {
            Column("id", .integer).primaryKey()
            Column("name", .text).notNull()
            Column("score", .integer).notNull().defaults(0)
            Column("joinedAt", .text)
            Column("rank", .text)
        }
    }

    enum Teams: Model {
        static let tableDefinition = TableDefinition("teams", options: [.strict]) {
            Column("id", .text).primaryKey()
        }
    }

    enum Rank: String, Codable, CaseIterable {
        case gold, silver
    }

    struct Player: Codable, Equatable, FetchableRecord, PersistableRecord, ModelRecord {
        typealias Model = Players
        var id: Int64
        var name: String
        var score: Int
        var joinedAt: Date?
        var rank: Rank
    }

    /// Keys mapped to the columns by CodingKeys, one in another case.
    struct Scoreboard: Codable, FetchableRecord, ModelRecord {
        typealias Model = Players
        var playerName: String
        var points: Int
        enum CodingKeys: String, CodingKey {
            case playerName = "name"
            case points = "SCORE"
        }
    }

    struct Misspelled: Codable, FetchableRecord, ModelRecord {
        typealias Model = Players
        var id: Int64
        var nmae: String
    }

    struct OfATeam: Codable, FetchableRecord, ModelRecord {
        typealias Model = Teams
        var id: String
    }

    /// An enum of raw values that is not CaseIterable: no placeholder decodes it.
    enum Level: String, Codable {
        case high, low
    }

    struct Leveled: Codable, FetchableRecord, ModelRecord {
        typealias Model = Players
        var id: Int64
        var rank: Level
    }

    enum PlayersPlan: MigrationPlan {
        static let schemas: [any VersionedSchema.Type] = [GameV1.self]
        static let stages: [MigrationStage] = []
        static let records: [any ModelRecord.Type] = [Player.self, Scoreboard.self]
    }

    enum MisspelledPlan: MigrationPlan {
        static let schemas: [any VersionedSchema.Type] = [GameV1.self]
        static let stages: [MigrationStage] = []
        static let records: [any ModelRecord.Type] = [Player.self, Misspelled.self]
    }

    enum TeamsTooEarlyPlan: MigrationPlan {
        static let schemas: [any VersionedSchema.Type] = [GameV1.self]
        static let stages: [MigrationStage] = []
        static let records: [any ModelRecord.Type] = [OfATeam.self]
    }

    enum TeamsPlan: MigrationPlan {
        static let schemas: [any VersionedSchema.Type] = [GameV1.self, GameV2.self]
        static let stages: [MigrationStage] = [.lightweight(fromVersion: GameV1.self, toVersion: GameV2.self)]
        static let records: [any ModelRecord.Type] = [OfATeam.self]
    }

    enum LeveledPlan: MigrationPlan {
        static let schemas: [any VersionedSchema.Type] = [GameV1.self]
        static let stages: [MigrationStage] = []
        static let records: [any ModelRecord.Type] = [Leveled.self]
    }

    static func refusal(_ plan: any MigrationPlan.Type, releasedUpTo: Schema.Version? = nil) -> MigrationError? {
        do {
            _ = try Migrator(plan: plan, releasedUpTo: releasedUpTo)
            return nil
        } catch {
            return error
        }
    }

    @Test func aRecordOfAModelNamesItsTableOnceAndIsStoredThroughIt() throws {
        #expect(Player.databaseTableName == "players")
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("game.sqlite"))
        try Migrator(plan: PlayersPlan.self).migrate(db)
        let player = Player(id: 1, name: "Arthur", score: 100, joinedAt: nil, rank: .silver)
        try player.insert(db)
        #expect(try Player.fetchOne(db, key: 1) == player)
        let board = try Scoreboard.fetchAll(db, "SELECT name, score FROM players")
        #expect(board.map(\.playerName) == ["Arthur"] && board.map(\.points) == [100])
    }

    @Test func aKeyThatIsNotAColumnIsRefusedNamingTheRecordTheKeyAndTheTable() {
        let refusal = Self.refusal(MisspelledPlan.self)
        #expect(refusal?.kind == .invalidPlan)
        #expect(
            refusal?.description.contains(
                #"record Misspelled has the coding key "nmae", which is not a column of table players"#) == true,
            "\(String(describing: refusal))")
        #expect(refusal?.description.contains("id, name, score, joinedAt, rank") == true)
    }

    @Test func aRecordOfAModelOutsideTheSchemaIsRefused() {
        let refusal = Self.refusal(TeamsTooEarlyPlan.self)
        #expect(
            refusal?.description.contains(
                "record OfATeam belongs to model Teams, whose table teams is not in schema 1.0.0") == true,
            "\(String(describing: refusal))")
        #expect(Self.refusal(TeamsPlan.self) == nil)
    }

    /// An older release, simulated, is checked without today's records, which it did not have.
    @Test func aMigratorOfAnOlderReleaseDoesNotCheckTodaysRecords() throws {
        #expect(Self.refusal(TeamsTooEarlyPlan.self) != nil)
        #expect(Self.refusal(TeamsPlan.self, releasedUpTo: "1.0.0") == nil)
    }

    @Test func aPropertyNoPlaceholderDecodesIsNamed() {
        let refusal = Self.refusal(LeveledPlan.self)
        #expect(
            refusal?.description.contains(
                "the coding keys of record Leveled cannot be found: property rank of type Level")
                == true, "\(String(describing: refusal))")
    }
}
