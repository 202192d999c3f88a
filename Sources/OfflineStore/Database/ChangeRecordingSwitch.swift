import CSQLite

/// Whether a connection's writes to synced tables are recorded in the change log: on by default,
/// off while the migrator runs a stage (every peer runs the same stage) and while pulled changes
/// are applied (they must not echo back).
///
/// `@unchecked Sendable`: the flag is written by the connection's owner and read by the change
/// log's SQL function, which SQLite calls on the thread running a statement on this connection.
/// A `Database` is used by one thread at a time (it is not Sendable), so the two never overlap;
/// the type is Sendable only because SQL function bodies must be.
final class ChangeRecordingSwitch: @unchecked Sendable {
    var isOn = true {
        didSet { tracking?.pointee.recording = isOn ? 1 : 0 }
    }
    /// Keys written in the current transaction, collected for commit observers; nil when nobody
    /// observes this connection.
    var observedKeys: [(table: String, key: DatabaseValue)]? {
        didSet { tracking?.pointee.observing = observedKeys == nil ? 0 : 1 }
    }
    /// The store's clock, which the change log's `ostore_clock()` reads.
    var clock: HybridLogicalClock?
    /// What the change log's SQL functions read in C (see `ChangeTracker`): set while they are
    /// registered on the connection, nil again once SQLite has released them.
    var tracking: UnsafeMutablePointer<csqlite_change_tracking>?

    /// Finalizes the statement the clock keeps prepared, before the connection closes (see
    /// `csqlite_change_tracking_finalize`); the next `ostore_clock()` would prepare it again.
    func finalizeStatements() {
        if let tracking { csqlite_change_tracking_finalize(tracking) }
    }
}

extension Database {
    /// Whether this connection's writes are being recorded in the change log (when tracking is installed).
    public var isRecordingChanges: Bool { changeRecording.isOn }

    /// Runs `body` with change recording off on this connection, then restores it.
    ///
    /// ```swift
    /// try db.withoutRecordingChanges { db in try db.execute("UPDATE reminders SET title = lower(title)") }
    /// ```
    public func withoutRecordingChanges<Result>(_ body: (Database) throws -> Result) rethrows -> Result {
        let wasOn = changeRecording.isOn
        changeRecording.isOn = false
        defer { changeRecording.isOn = wasOn }
        return try body(self)
    }
}
