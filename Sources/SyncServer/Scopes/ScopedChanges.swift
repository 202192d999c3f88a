import SyncProtocol

/// One page of a subject's scoped reads: rows that came into its scope, whole, and the changes
/// of rows that stayed in it, as changes; rows that left it; the cursor of the next page, and
/// whether the move it reads has more pages (the next page of a move that has none starts the
/// next move, and is empty until the dataset changes).
struct ScopedChanges: Sendable {
    var changes: [Change]
    var removed: [ScopedRow]
    var cursor: ScopedCursor
    var hasMore: Bool
}

/// What a storage reads for a page of scoped changes, in one consistent read of a dataset.
protocol ScopedReadSource {
    associatedtype Index: ScopeIndexReading
    var index: Index { get }
    /// The rows as the state holds them now, each as a snapshot gives it; a row the state does not
    /// hold gives nothing.
    func currentChanges(of rows: [ScopedRow]) throws -> [Change]
    /// Up to `limit` of the log's changes after serial `from` through `to`, leaving out the
    /// excluded site's, and the serial read through (`to` when fewer were left).
    func loggedChanges(after from: Int64, through to: Int64, limit: Int) throws -> (
        changes: [Change], readThrough: Int64
    )
}

extension ScopedChanges {
    /// A page of at most `limit` rows and changes that moves `identity`'s read scope on from where
    /// `cursor` stands (nil for a first download) to the position `source`'s index stood at when
    /// the move's first page was read: first the rows that left the scope, then those that came
    /// in, then the changes of those that stayed. The same for both backends.
    ///
    /// ```swift
    /// let page = try ScopedChanges.read(from: source, datasetID: id, identity: bob, after: cursor, limit: 500, transitions: cache)
    /// ```
    static func read(
        from source: some ScopedReadSource, datasetID: Int64, identity: ScopeIdentity, after cursor: ScopedCursor?,
        limit: Int, transitions: ScopeTransitionCache
    ) throws -> ScopedChanges {
        let index = source.index
        let end = try index.end()
        var cursor = cursor ?? ScopedCursor(from: nil, to: end)
        if cursor.from == cursor.to { cursor.to = end }
        let key = ScopeTransitionCache.Key(datasetID: datasetID, identity: identity, from: cursor.from, to: cursor.to)
        var transition = try transitions.transition(key) {
            try ScopeTransition(index, identity: identity, from: cursor.from, to: cursor.to)
        }
        defer { transitions.keep(transition, for: key) }
        var room = max(limit, 1)
        let removed = Array(transition.leaving.dropFirst(cursor.leavingSent).prefix(room))
        cursor.leavingSent += removed.count
        room -= removed.count
        let entering = Array(transition.entering.dropFirst(cursor.enteringSent).prefix(room))
        // Rows, not changes, fill a page: a row that comes in is its insert and its updates.
        var changes = try source.currentChanges(of: entering)
        cursor.enteringSent += entering.count
        room -= entering.count
        var hasMore = cursor.leavingSent < transition.leaving.count || cursor.enteringSent < transition.entering.count
        if let from = cursor.from, !hasMore {
            let last = ScopePosition.serial(of: cursor.to)
            var read = cursor.changesThrough ?? ScopePosition.serial(of: from)
            while room > 0, read < last {
                let batch = try source.loggedChanges(after: read, through: last, limit: room)
                // A batch is no longer than the room left, so all of it fits.
                for change in batch.changes
                where try transition.receivesChanges(
                    of: ScopedRow(table: change.table, key: try change.canonicalKeyJSON()), in: index)
                {
                    changes.append(change)
                    room -= 1
                }
                read = batch.readThrough
            }
            cursor.changesThrough = read
            hasMore = read < last
        }
        return ScopedChanges(
            changes: changes, removed: removed, cursor: hasMore ? cursor : cursor.next, hasMore: hasMore)
    }
}
