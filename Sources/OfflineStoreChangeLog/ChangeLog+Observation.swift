import Foundation
import OfflineStoreSQLite
import Synchronization

/// A row a committed transaction changed in a synced table.
public struct CommittedChange: Sendable, Hashable {
    public var table: String
    /// The row's key, by column name.
    public var primaryKey: [String: DatabaseValue]
}

extension ChangeLog {
    /// Calls `handler` after each transaction on this connection that changed synced tables has
    /// committed, with the rows it changed (each once). Daemons use it to sync soon after a write.
    ///
    /// The handler runs on the writing thread once the commit has completed (another connection
    /// sees it), before the statement that committed returns: it must not use the connection
    /// (hand the keys to another queue). It coexists with the app's ``Database/setCommitHook(_:)``,
    /// with ``commits(on:)`` streams and with ``ValueObservation``s; calling it again replaces the
    /// handler it set before. Writes undone by `ROLLBACK TO` a savepoint may still be reported with
    /// the transaction; changes applied from other sites are not reported.
    ///
    /// ```swift
    /// try log.observeCommits(on: db) { changes in syncQueue.async { scheduleSync(changes) } }
    /// ```
    public func observeCommits(on db: Database, _ handler: @escaping @Sendable ([CommittedChange]) -> Void) {
        let recording = db.changeRecording
        if let replaced = recording.commitHandlerObserver { recording.keyObservers[replaced] = nil }
        recording.commitHandlerObserver = addKeyObserver(on: db) { changes in
            handler(changes)
            return true
        }
    }

    /// Stops calling the handler set with ``observeCommits(on:_:)``.
    public func stopObservingCommits(on db: Database) {
        let recording = db.changeRecording
        guard let replaced = recording.commitHandlerObserver else { return }
        recording.keyObservers[replaced] = nil
        recording.commitHandlerObserver = nil
        stopCollectingKeysIfUnobserved(db)
    }

    /// The rows each transaction on this connection that changed synced tables changed, one
    /// element per commit, as ``observeCommits(on:_:)`` reports them. Several streams and that
    /// handler coexist; a stream is told nothing more once its iteration ends.
    ///
    /// ```swift
    /// let commits = log.commits(on: db)
    /// Task { for await changes in commits { await scheduleSync(changes) } }
    /// ```
    public func commits(on db: Database) -> AsyncStream<[CommittedChange]> {
        let (stream, continuation) = AsyncStream<[CommittedChange]>.makeStream()
        let ended = StreamEnd()
        continuation.onTermination = { _ in ended.flag.store(true, ordering: .releasing) }
        _ = addKeyObserver(on: db) { changes in
            guard !ended.flag.load(ordering: .acquiring) else { return false }
            continuation.yield(changes)
            return true
        }
        return stream
    }

    /// Tells `observer` of each commit's rows until it returns false; the first observer of the
    /// connection starts collecting the keys the triggers write and listening for its commits.
    private func addKeyObserver(on db: Database, _ observer: @escaping ([CommittedChange]) -> Bool) -> Int {
        let recording = db.changeRecording
        let schema = schema
        recording.nextKeyObserver += 1
        let id = recording.nextKeyObserver
        recording.keyObservers[id] = { keys in
            var seen = Set<CommittedChange>()
            var changes: [CommittedChange] = []
            for (tableName, key) in keys {
                guard let table = schema.table(named: tableName) else { continue }
                let columns = ChangeTracker.keyColumns(of: table)
                guard let values = try? LoggedKey.values(key, columnCount: columns.count) else { continue }
                let change = CommittedChange(
                    table: table.name, primaryKey: Dictionary(uniqueKeysWithValues: zip(columns, values)))
                if seen.insert(change).inserted { changes.append(change) }
            }
            return observer(changes)
        }
        if recording.observedKeys == nil { recording.observedKeys = [] }
        if recording.keyCommitListener == nil {
            recording.keyCommitListener = db.addCommitListener(
                didRollBack: { if recording.observedKeys != nil { recording.observedKeys = [] } },
                didCommit: { _ in
                    let keys = recording.observedKeys ?? []
                    if recording.observedKeys != nil { recording.observedKeys = [] }
                    guard !keys.isEmpty else { return true }
                    for (id, observer) in recording.keyObservers where !observer(keys) {
                        recording.keyObservers[id] = nil
                    }
                    return true
                })
        }
        return id
    }

    private func stopCollectingKeysIfUnobserved(_ db: Database) {
        let recording = db.changeRecording
        guard recording.keyObservers.isEmpty, let listener = recording.keyCommitListener else { return }
        db.removeCommitListener(listener)
        recording.keyCommitListener = nil
        recording.observedKeys = nil
    }
}

/// Set once a ``ChangeLog/commits(on:)`` stream's iteration has ended, from the iterating task;
/// read on the connection's thread.
private final class StreamEnd: Sendable {
    let flag = Atomic(false)
}
