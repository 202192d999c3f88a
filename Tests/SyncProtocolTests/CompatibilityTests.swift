import SyncProtocol
import Testing

/// The negotiation rules decide whether two app versions may exchange data, so they are checked
/// over every pair of a grid of versions and protocol lists against an oracle written here from
/// the specification's wording (Protocol/README.md, "Versions and negotiation"), not from the code.
@Suite("Negotiation rules")
struct CompatibilityTests {
    /// major 0…3 × minor 0…3 × patch 0…1: 32 versions.
    static let versions: [SchemaVersion] = (0...3).flatMap { major in
        (0...3).flatMap { minor in (0...1).map { patch in SchemaVersion(major, minor, patch) } }
    }
    static let clientProtocolLists: [[Int]] = [[], [1], [2], [1, 2], [2, 1], [1, 1], [3, 1], [0], [2, 3]]
    static let serverProtocolLists: [[Int]] = [[1], [1, 2], [2], [1, 2, 3]]

    /// What the specification says, rule by rule.
    static func oracle(_ input: Compatibility.Input) -> OracleAnswer {
        // 1. The protocol: the highest version both lists name.
        let shared = input.clientProtocols.filter { input.serverProtocols.contains($0) }
        guard let chosen = shared.max() else {
            return expectedOutcome(.protocolUnsupported, protocolVersion: nil, required: nil, after: input.dataset)
        }
        // 2. A dataset nobody has joined takes the client's version.
        guard let dataset = input.dataset else {
            return expectedOutcome(.compatible, protocolVersion: chosen, required: nil, after: input.client)
        }
        let client = input.client
        // 3. An older major must upgrade to the dataset's major.
        if client.major < dataset.major {
            return expectedOutcome(.upgradeRequired, protocolVersion: chosen, required: dataset.major, after: dataset)
        }
        // 4. A newer major moves the dataset.
        if client.major > dataset.major {
            return expectedOutcome(.compatible, protocolVersion: chosen, required: nil, after: client)
        }
        // 5. and 6. Same major: older (by minor, then patch) is told a newer schema exists;
        // the same or newer is compatible and the newest version seen is kept.
        let clientIsOlder =
            client.minor < dataset.minor || (client.minor == dataset.minor && client.patch < dataset.patch)
        return clientIsOlder
            ? expectedOutcome(.newerSchemaAvailable, protocolVersion: chosen, required: nil, after: dataset)
            : expectedOutcome(.compatible, protocolVersion: chosen, required: nil, after: client)
    }

    private static func expectedOutcome(
        _ verdict: Verdict, protocolVersion: Int?, required: Int?, after: SchemaVersion?
    ) -> OracleAnswer {
        OracleAnswer(
            verdict: verdict, protocolVersion: protocolVersion, requiredMajorVersion: required,
            datasetVersionAfter: after)
    }

    @Test func everyVersionPairAndProtocolListAgreesWithTheOracle() {
        var checked = 0
        for clientProtocols in Self.clientProtocolLists {
            for serverProtocols in Self.serverProtocolLists {
                for client in Self.versions {
                    for dataset in [nil] + Self.versions.map(Optional.some) {
                        let input = Compatibility.Input(
                            clientProtocols: clientProtocols, serverProtocols: serverProtocols, client: client,
                            dataset: dataset)
                        let actual = Compatibility.negotiate(input)
                        let expected = Self.oracle(input)
                        #expect(actual.verdict == expected.verdict, "\(input)")
                        #expect(actual.protocolVersion == expected.protocolVersion, "\(input)")
                        #expect(actual.requiredMajorVersion == expected.requiredMajorVersion, "\(input)")
                        #expect(actual.datasetVersionAfter == expected.datasetVersionAfter, "\(input)")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == Self.clientProtocolLists.count * Self.serverProtocolLists.count * 32 * 33)
    }

    /// The check every push and pull repeats agrees with the hello: a client may sync exactly when
    /// its hello would not be told to upgrade, against the dataset as the hello left it.
    @Test func maySyncAgreesWithTheHelloVerdict() {
        for client in Self.versions {
            for dataset in [nil] + Self.versions.map(Optional.some) {
                let outcome = Compatibility.negotiate(
                    .init(clientProtocols: [1], serverProtocols: [1], client: client, dataset: dataset))
                #expect(
                    Compatibility.maySync(client: client, dataset: dataset) == (outcome.verdict != .upgradeRequired),
                    "client \(client), dataset \(dataset?.description ?? "new")")
                if outcome.verdict != .upgradeRequired {
                    // The hello that let it in leaves the dataset where the client may sync.
                    #expect(Compatibility.maySync(client: client, dataset: outcome.datasetVersionAfter))
                }
            }
        }
    }

    /// The dataset's recorded version never goes backwards, whoever says hello.
    @Test func theDatasetVersionNeverMovesBackwards() {
        for client in Self.versions {
            for dataset in Self.versions {
                let after = Compatibility.negotiate(
                    .init(clientProtocols: [1], serverProtocols: [1], client: client, dataset: dataset)
                ).datasetVersionAfter
                #expect(after.map { $0 >= dataset } == true, "client \(client), dataset \(dataset)")
            }
        }
    }

    /// The upgrade path of the specification, step by step: a read-write client of a new major
    /// moves the dataset; an old client is then refused until it upgrades; once upgraded it syncs.
    @Test func aNewMajorMovesTheDatasetAndOldClientsMustUpgrade() {
        let v1 = SchemaVersion(1, 3, 0)
        let v2 = SchemaVersion(2, 0, 0)
        let moved = Compatibility.negotiate(.init(clientProtocols: [1], serverProtocols: [1], client: v2, dataset: v1))
        #expect(moved.verdict == .compatible)
        #expect(moved.datasetVersionAfter == v2)
        let old = Compatibility.negotiate(
            .init(clientProtocols: [1], serverProtocols: [1], client: v1, dataset: moved.datasetVersionAfter))
        #expect(old.verdict == .upgradeRequired)
        #expect(old.requiredMajorVersion == 2)
        #expect(old.datasetVersionAfter == v2)
        #expect(!Compatibility.maySync(client: v1, dataset: v2))
        #expect(Compatibility.maySync(client: SchemaVersion(2, 0, 0), dataset: v2))
    }

    @Test func theHighestCommonProtocolVersionIsChosen() {
        #expect(ProtocolVersion.highestCommon(client: [1, 2, 3], server: [2, 3, 4]) == 3)
        #expect(ProtocolVersion.highestCommon(client: [3, 1], server: [1, 3]) == 3)
        #expect(ProtocolVersion.highestCommon(client: [], server: [1]) == nil)
        #expect(ProtocolVersion.highestCommon(client: [2], server: [1]) == nil)
        #expect(ProtocolVersion.supported.contains(ProtocolVersion.current))
        #expect(ProtocolVersion.supported == ProtocolVersion.supported.sorted(), "newest last")
    }
}

/// The oracle's answer (``Compatibility/Outcome`` has no public initialiser); tests compare it
/// with the real outcome field by field.
struct OracleAnswer {
    var verdict: Verdict
    var protocolVersion: Int?
    var requiredMajorVersion: Int?
    var datasetVersionAfter: SchemaVersion?
}
