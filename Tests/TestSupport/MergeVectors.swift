import Foundation
import SyncProtocol

/// One case of `Protocol/vectors/merge/`: changes of one row (table `items`, key column `id`,
/// columns `a` and `b`), applied one at a time in the order given, what each one does, and the row
/// as a snapshot then shows it. With `orders: "all"`, every order of the changes ends in that row.
///
/// ```swift
/// for vector in try MergeVector.all() {
///     for order in vector.orders { #expect(try applyInOrder(order) == vector.final, "\(vector.name)") }
/// }
/// ```
public struct MergeVector: Sendable, CustomStringConvertible {
    /// What applying one change does, as a receiver sees it.
    public enum Outcome: String, Sendable, Decodable {
        /// It wrote the row (created, deleted or wrote at least one column).
        case applied
        /// It was older than what the row has, and wrote nothing.
        case superseded
        /// It waits for its row (an update of a row not present).
        case waiting
    }

    public let name: String
    public let rule: String
    public let changes: [Change]
    public let outcomes: [Outcome]
    public let final: MergedRowState
    public let everyOrderConverges: Bool

    public var description: String { name }

    /// The changes in every order when the vector says so (each a permutation of ``changes``,
    /// the given order first), otherwise in the given order only.
    public var orders: [[Change]] {
        guard everyOrderConverges else { return [changes] }
        func permutations(_ items: [Change]) -> [[Change]] {
            guard items.count > 1 else { return [items] }
            return items.indices.flatMap { index in
                var rest = items
                let first = rest.remove(at: index)
                return permutations(rest).map { [first] + $0 }
            }
        }
        return permutations(changes)
    }

    /// The folder's cases, sorted by file name; throws when the folder holds none.
    public static func all() throws -> [MergeVector] {
        let folder = DocumentedCode.packageRoot.appendingPathComponent("Protocol/vectors/merge")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }
            .sorted()
        guard !names.isEmpty else { throw CocoaError(.fileNoSuchFile) }
        return try names.map { name in
            let file = try JSONDecoder().decode(
                VectorFile.self, from: Data(contentsOf: folder.appendingPathComponent(name)))
            return MergeVector(
                name: String(name.dropLast(".json".count)), rule: file.rule,
                changes: file.changes.map { change in
                    Change(
                        table: file.table, key: change.key, op: change.op, columns: change.columns,
                        clock: change.clock, site: change.site, seq: 0)
                },
                outcomes: file.outcomes, final: file.final.rowState, everyOrderConverges: file.orders == "all")
        }
    }

    private struct VectorFile: Decodable {
        struct VectorChange: Decodable {
            var op: Change.Operation
            var clock: ChangeClock
            var site: SiteID
            var key: [String: WireValue]
            var columns: [String: WireValue]
        }
        struct Version: Decodable {
            var clock: ChangeClock
            var site: SiteID
            var version: ChangeVersion { ChangeVersion(clock, site) }
        }
        struct Final: Decodable {
            struct Cell: Decodable {
                var value: WireValue
                var version: Version?
            }
            var state: MergedRowState.Kind
            var created: Version?
            var deleted: Version?
            var columns: [String: Cell]?

            var rowState: MergedRowState {
                MergedRowState(
                    state, created: created?.version, deleted: deleted?.version,
                    columns: (columns ?? [:]).mapValues { MergedRowState.Cell($0.value, $0.version?.version) })
            }
        }
        var rule: String
        var table: String
        var orders: String
        var changes: [VectorChange]
        var outcomes: [Outcome]
        var final: Final
    }
}

/// A row as every implementation can show it (a server in its snapshot, Protocol §10.2): live
/// with its creation version and non-key columns, deleted with its deletion version, or known only
/// from updates waiting for it. A column's version is nil where the creation dates it (an
/// implementation may keep the creation's version for such a column or none: the same thing).
public struct MergedRowState: Equatable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable, Decodable {
        case live, deleted, waiting
    }

    public struct Cell: Equatable, Sendable {
        public var value: WireValue
        public var version: ChangeVersion?

        public init(_ value: WireValue, _ version: ChangeVersion?) {
            self.value = value
            self.version = version
        }
    }

    public var kind: Kind
    /// For a live row.
    public var created: ChangeVersion?
    /// For a deleted row.
    public var deleted: ChangeVersion?
    /// For a live or waiting row.
    public var columns: [String: Cell]

    public init(_ kind: Kind, created: ChangeVersion?, deleted: ChangeVersion?, columns: [String: Cell]) {
        let created = kind == .live ? created : nil
        self.kind = kind
        self.created = created
        self.deleted = kind == .deleted ? deleted : nil
        self.columns =
            kind == .deleted
            ? [:] : columns.mapValues { cell in Cell(cell.value, cell.version == created ? nil : cell.version) }
    }

    /// The row from a whole snapshot of its dataset (every change of `key`, Protocol §10.2): an
    /// insert and the updates after it, a tombstone, or updates only; nil when the snapshot does
    /// not have the row.
    public init?(snapshot: [Change], key: [String: WireValue]) {
        let changes = snapshot.filter { $0.key == key }
        guard !changes.isEmpty else { return nil }
        if let tombstone = changes.first(where: { $0.op == .delete }) {
            self.init(.deleted, created: nil, deleted: ChangeVersion(tombstone.clock, tombstone.site), columns: [:])
            return
        }
        let insert = changes.first { $0.op == .insert }
        let created = insert.map { ChangeVersion($0.clock, $0.site) }
        var columns: [String: Cell] = [:]
        for (name, value) in insert?.columns ?? [:] where key[name] == nil { columns[name] = Cell(value, nil) }
        for update in changes where update.op == .update {
            for (name, value) in update.columns {
                columns[name] = Cell(value, ChangeVersion(update.clock, update.site))
            }
        }
        self.init(insert == nil ? .waiting : .live, created: created, deleted: nil, columns: columns)
    }

    public var description: String {
        func text(_ version: ChangeVersion?) -> String {
            guard let version, let clock = ChangeClock(packed: version.clock) else { return "-" }
            return "\(clock)@\(version.site.prefix(1).map { String(format: "%02x", $0) }.joined())"
        }
        let cells = columns.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.value)/\(text($0.value.version))" }
        return "\(kind.rawValue) created \(text(created)) deleted \(text(deleted)) [\(cells.joined(separator: ", "))]"
    }
}
