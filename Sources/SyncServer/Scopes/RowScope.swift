import Foundation
import SyncProtocol

/// What the scope index holds of one row: the links that put it in scopes of reading
/// (``RowLinks``, as stored: a bucket or a parent row), and the buckets it grants as a membership
/// row. Both backends compute it here, from the row's merged state, the same way.
///
/// A deleted row keeps the links it had when it was deleted, so its tombstone reaches the devices
/// that saw it; it grants nothing.
///
/// ```swift
/// let scope = RowScope(evaluator, table: "lists", keyText: key, row: merged, previous: stored)
/// ```
struct RowScope: Hashable, Sendable {
    var links: Set<Link> = []
    var grants: Set<MembershipGrant> = []

    /// A link as the index stores it: `b` for a bucket (kind, value), `p` for a parent row
    /// (table, the canonical JSON of its key).
    struct Link: Hashable, Sendable {
        var kind: String
        var a: String
        var b: String

        static func bucket(_ bucket: ScopeBucket) -> Link { Link(kind: "b", a: bucket.kind, b: bucket.value) }
        static func parent(table: String, keyText: String) -> Link { Link(kind: "p", a: table, b: keyText) }
    }

    init(links: Set<Link> = [], grants: Set<MembershipGrant> = []) {
        self.links = links
        self.grants = grants
    }

    /// The scope of a row of `table` whose key is `key` and whose merged state is `row`;
    /// `previous` is what the index held of it.
    init(_ evaluator: ScopeEvaluator, table: String, key: [String: WireValue], row: MergedRow, previous: RowScope) {
        self.init(evaluator, table: table, key: { key[$0] }, row: row, previous: previous)
    }

    /// The same, with the key's values looked up by `key`: a column the row's cells hold is not
    /// looked up there.
    init(
        _ evaluator: ScopeEvaluator, table: String, key: (String) -> WireValue?, row: MergedRow, previous: RowScope
    ) {
        if row.isDeleted {
            self.init(links: previous.links)
            return
        }
        self.init(evaluator, table: table, values: { row.cells[$0]?.value ?? key($0) }, grants: row.created != nil)
    }

    /// The scope of a row of `table` whose columns hold `values`; with `grants`, the buckets it
    /// grants as a live membership row.
    init(_ evaluator: ScopeEvaluator, table: String, values: (String) -> WireValue?, grants: Bool) {
        let found = evaluator.links(.read, of: table, values: values)
        links = Set(found.buckets.map(Link.bucket))
        for parent in found.parents {
            var writer = CanonicalJSONWriter(capacity: 64)
            if (try? writer.write(parent.key)) != nil {
                links.insert(.parent(table: parent.table, keyText: writer.text))
            }
        }
        if grants { self.grants = evaluator.membershipGrants(ofRowIn: table, values: values) }
    }
}

extension RowScope {
    /// One change of a row's scope, at the position of the change that made it.
    struct Move: Sendable {
        var position: Int64
        var from: RowScope
        var to: RowScope
    }

    /// How one row's scope moves through its changes (in log order, with their serials), from the
    /// row as the state held it before them and what the index held of it: each change that moves
    /// the scope gives a move at its own position, so the index's history is the log's, whichever
    /// backend keeps it and however its writes are grouped.
    ///
    /// ```swift
    /// for move in try RowScope.moves(table: "lists", keyText: key, row: stored, scope: indexed, changes: changes, rules: evaluator) { … }
    /// ```
    static func moves(
        table: String, keyText: String, row: MergedRow, scope: RowScope,
        changes: some Sequence<(change: FoldChange, serial: Int64)>, rules: ScopeEvaluator
    ) throws -> [Move] {
        // Read only when a filter names a key column (the state keeps the key apart from the
        // cells): most filters name other columns, a parent's key or an owner.
        let key = KeyValues(text: keyText)
        var row = row
        var scope = scope
        var moves: [Move] = []
        // The insert that makes a row new to the state, merged only when another change follows:
        // its scope is its columns' (the merge rule takes each of them, a new row has no other).
        var creation: FoldChange?
        for (change, serial) in changes {
            let next: RowScope
            if creation == nil, change.op == .insert, row.created == nil, row.deleted == nil, row.cells.isEmpty {
                creation = change
                next = RowScope(
                    rules, table: table,
                    values: { column in change.columns.first { $0.name == column }?.value ?? key.value(column) },
                    grants: true)
            } else {
                if let made = creation.take() { row.merge(made) }
                row.merge(change)
                next = RowScope(rules, table: table, key: key.value, row: row, previous: scope)
            }
            if let failure = key.failure { throw failure }
            guard next != scope else { continue }
            moves.append(Move(position: ScopePosition.afterChange(serial), from: scope, to: next))
            scope = next
        }
        return moves
    }

    /// A row's key values, decoded from its canonical JSON the first time one is asked for; a
    /// decoding that failed is kept for the caller to throw.
    private final class KeyValues {
        let text: String
        private var decoded: [String: WireValue]?
        private(set) var failure: (any Error)?

        init(text: String) { self.text = text }

        func value(_ column: String) -> WireValue? {
            if decoded == nil, failure == nil {
                do { decoded = try ProtocolJSON.decodeValues(Data(text.utf8)) } catch { failure = error }
            }
            return decoded?[column]
        }
    }

    /// What a row's scope is under `rules` set while the state holds it as `row`: a deleted row's
    /// links are those of its key alone under other rules (its other values went with its delete).
    init(relinking row: MergedRow, table: String, keyText: String, under rules: ScopeEvaluator) throws {
        let values = try ProtocolJSON.decodeValues(Data(keyText.utf8))
        self =
            row.isDeleted
            ? RowScope(rules, table: table, values: { values[$0] }, grants: false)
            : RowScope(rules, table: table, key: values, row: row, previous: RowScope())
    }
}
