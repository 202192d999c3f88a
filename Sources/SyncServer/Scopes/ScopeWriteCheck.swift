import SyncProtocol

/// What a storage answers about its rows as they stand, for ``ScopeWriteCheck``.
protocol ScopeStateReading {
    /// The values of `row`'s columns, its key's among them, and whether it is live; nil for a
    /// row the storage does not hold.
    func current(_ row: ScopedRow) throws -> (values: [String: WireValue], isLive: Bool)?
    /// The buckets of `kind` live membership rows grant to `member` now.
    func grantedValues(kind: String, member: String) throws -> Set<String>
}

/// Whether a pushed change is in its writer's write scope (``ScopeRules``), decided on the rows
/// as storage holds them: the row before the change must be writable by the subject (an update
/// or delete of a row it may not write is refused), and so must the row after it (an insert, or
/// an update that would move a row out of the writer's scope or into another's); an insert or
/// update sets only the table's writable columns. A parent filter follows the parent row as it
/// stands, changed by the changes of the same batch before it that were taken (a list made and a
/// reminder put on it in one push). An identity without a subject writes everywhere.
///
/// ```swift
/// var check = try ScopeWriteCheck(rules.evaluator, identity: bob, state: reader)
/// if let reason = try check.refusal(of: change) { refuse(change, reason) }
/// ```
struct ScopeWriteCheck {
    private let evaluator: ScopeEvaluator
    private let identity: ScopeIdentity
    private let state: any ScopeStateReading
    private var granted: Set<ScopeBucket>
    /// The identity's text each write membership's where column is compared with, by bucket kind.
    private let members: [String: String]
    private var writable: [ScopedRow: Bool] = [:]
    /// Rows as the changes taken so far left them.
    private var written: [ScopedRow: WrittenRow] = [:]
    /// The row the change being decided names and what it held, read once for both the decision
    /// and taking the change.
    private var decided: (row: ScopedRow, before: (values: [String: WireValue], isLive: Bool)?)?

    init(_ evaluator: ScopeEvaluator, identity: ScopeIdentity, state: any ScopeStateReading) throws {
        self.evaluator = evaluator
        self.identity = identity
        self.state = state
        var granted = evaluator.fixedBuckets(.write, for: identity)
        var members: [String: String] = [:]
        if identity.subject != nil {
            for membership in evaluator.memberships(.write) {
                guard let member = identity.text(of: membership.equals) else { continue }
                let kind = ScopeBucket.kind(of: membership)
                members[kind] = member
                for value in try state.grantedValues(kind: kind, member: member) {
                    granted.insert(ScopeBucket(kind: kind, value: value))
                }
            }
        }
        self.granted = granted
        self.members = members
    }

    /// Why `change` is outside the writer's write scope; nil when it is inside, and the rows the
    /// next changes are checked against are then as `change` leaves them.
    mutating func refusal(of change: Change) throws -> String? {
        decided = nil
        guard let refusal = try decide(change) else {
            if identity.subject != nil { try take(change) }
            return nil
        }
        return refusal
    }

    private mutating func take(_ change: Change) throws {
        let (row, before) = try decided ?? read(change)
        let after = WrittenRow(
            base: change.op == .insert ? change.key : before?.values ?? change.key, columns: change.columns,
            isLive: change.op != .delete)
        written[row] = after
        writable = [:]
        // A membership row of the writer's, made, moved or deleted: what it grants changes with it.
        if let before, before.isLive {
            for grant in grantsToWriter(ofRowIn: change.table, values: { before.values[$0] }) { granted.remove(grant) }
        }
        if change.op != .delete {
            for grant in grantsToWriter(ofRowIn: change.table, values: after.value) { granted.insert(grant) }
        }
    }

    private func grantsToWriter(ofRowIn table: String, values: (String) -> WireValue?) -> [ScopeBucket] {
        evaluator.membershipGrants(ofRowIn: table, values: values)
            .filter { members[$0.kind] == $0.member }.map(\.bucket)
    }

    /// The row `change` names and what it holds now.
    private func read(_ change: Change) throws -> (
        row: ScopedRow, before: (values: [String: WireValue], isLive: Bool)?
    ) {
        let row = ScopedRow(table: change.table, key: try Self.keyText(change.key))
        return (row, try current(row))
    }

    private func current(_ row: ScopedRow) throws -> (values: [String: WireValue], isLive: Bool)? {
        if let written = written[row] { return (written.values, written.isLive) }
        return try state.current(row)
    }

    private mutating func decide(_ change: Change) throws -> String? {
        guard identity.subject != nil else { return nil }
        guard let rules = evaluator.rules.tables[change.table] else {
            return "table \(change.table) has no scope rules, so no subject may write it"
        }
        if let allowed = rules.writableColumns, change.op != .delete {
            let allowedNames = Set(allowed).union(change.key.keys)
            if let column = change.columns.keys.sorted().first(where: { !allowedNames.contains($0) }) {
                return "column \(column) of \(change.table) is not among the columns the rules let a subject write"
            }
        }
        let (row, before) = try read(change)
        decided = (row, before)
        if let before, change.op != .insert || before.isLive {
            guard try writable(change.table, values: { before.values[$0] }) else {
                return "the row is outside the writer's write scope"
            }
        }
        guard change.op != .delete else {
            // A delete of a row the state does not hold: its key is all there is to decide by.
            if before == nil, try !writable(change.table, values: { change.key[$0] }) {
                return "the row is outside the writer's write scope"
            }
            return nil
        }
        let after = WrittenRow(
            base: change.op == .update ? before?.values ?? change.key : change.key, columns: change.columns,
            isLive: true)
        guard try writable(change.table, values: after.value) else {
            return "the change would put the row outside the writer's write scope"
        }
        return nil
    }

    private mutating func writable(_ table: String, values: (String) -> WireValue?) throws -> Bool {
        let links = evaluator.links(.write, of: table, values: values)
        if !links.buckets.isDisjoint(with: granted) { return true }
        for parent in links.parents {
            let row = ScopedRow(table: parent.table, key: try Self.keyText(parent.key))
            if let known = writable[row] {
                if known { return true }
                continue
            }
            // A row is in no circle of parents (the rules allow none), so the walk ends.
            writable[row] = false
            let found =
                try current(row).map { found in try writable(parent.table, values: { found.values[$0] }) } ?? false
            writable[row] = found
            if found { return true }
        }
        return false
    }

    /// A row as a change leaves it: the values before it with the change's columns over them,
    /// looked up without merging the two (the merged values are made only for a row read again).
    private struct WrittenRow {
        var base: [String: WireValue]
        var columns: [String: WireValue]
        var isLive: Bool

        func value(_ column: String) -> WireValue? { columns[column] ?? base[column] }

        var values: [String: WireValue] { base.merging(columns) { $1 } }
    }

    private static func keyText(_ key: [String: WireValue]) throws -> String {
        var writer = CanonicalJSONWriter(capacity: 64)
        try writer.write(key)
        return writer.text
    }
}
