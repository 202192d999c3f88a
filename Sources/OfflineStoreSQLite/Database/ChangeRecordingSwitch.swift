import CChangeTracking
import CSQLite

/// Whether a connection's writes to synced tables are recorded in the change log: on by default,
/// off while the migrator runs a stage (every peer runs the same stage) and while pulled changes
/// are applied (they must not echo back).
///
/// It also owns the state of the change log's SQL functions on this connection (CChangeTracking,
/// registered by ``Database/installChangeTrackingFunctions(clockSource:watermarkWriterSQL:clock:)``),
/// and keeps it current: the C functions read the switch and call back into it for the clock and
/// for observed keys. The SQL and the clock come from the change log; this is only their typed side.
///
/// `@unchecked Sendable`: the flag is written by the connection's owner and read by the change
/// log's SQL function, which SQLite calls on the thread running a statement on this connection.
/// A `Database` is used by one thread at a time (it is not Sendable), so the two never overlap;
/// the type is Sendable only because SQL function bodies must be.
package final class ChangeRecordingSwitch: @unchecked Sendable {
    package var isOn = true {
        didSet { if let tracking { change_tracking_set_recording(tracking, isOn ? 1 : 0) } }
    }
    /// Keys written in the current transaction, collected for commit observers; nil when nobody
    /// observes this connection.
    package var observedKeys: [(table: String, key: DatabaseValue)]? {
        didSet { if let tracking { change_tracking_set_observing(tracking, observedKeys == nil ? 0 : 1) } }
    }
    /// Who the change log tells of each commit's keys (``observedKeys``), by number, and the
    /// connection's commit listener that tells them; the number of the handler `observeCommits` set.
    package var keyObservers: [Int: ([(table: String, key: DatabaseValue)]) -> Bool] = [:]
    package var nextKeyObserver = 0
    package var keyCommitListener: Int?
    package var commitHandlerObserver: Int?
    /// The store's clock, which the change log's `ostore_clock()` reads: given the newest clock the
    /// files hold when they changed since the last look (0 otherwise), the next one, packed.
    var clock: ((_ floor: Int64) -> Int64)?
    /// What the change log's SQL functions read in C: set while they are registered on the
    /// connection, nil again once SQLite has released them.
    private var tracking: OpaquePointer?

    /// Finalizes the statement the clock keeps prepared, before the connection closes (see
    /// `change_tracking_finalize`); the next `ostore_clock()` would prepare it again.
    func finalizeStatements() {
        if let tracking { change_tracking_finalize(tracking) }
    }

    /// Registers the change log's SQL functions on `handle`, on one state shared by every
    /// registration on this connection (created at the first); the code SQLite returned.
    fileprivate func installFunctions(
        on handle: OpaquePointer, clockSource: (schema: String, sql: String), watermarkWriterSQL: String
    ) throws(DatabaseError) -> Int32 {
        let tracking: OpaquePointer
        if let existing = self.tracking {
            tracking = existing
            change_tracking_retain(tracking)
        } else {
            guard
                let created = change_tracking_create(
                    Unmanaged.passRetained(self).toOpaque(),
                    { owner in
                        let recording = Unmanaged<ChangeRecordingSwitch>.fromOpaque(owner!)
                        recording.takeUnretainedValue().tracking = nil
                        recording.release()
                    },
                    { owner, floor in
                        let recording = Unmanaged<ChangeRecordingSwitch>.fromOpaque(owner!).takeUnretainedValue()
                        return recording.clock?(floor) ?? 0
                    },
                    { owner, table, key in
                        let recording = Unmanaged<ChangeRecordingSwitch>.fromOpaque(owner!).takeUnretainedValue()
                        if recording.observedKeys != nil,
                            case .text(let name) = (try? functionArgument(table, position: 0)) ?? .null,
                            let key = try? functionArgument(key, position: 1)
                        {
                            recording.observedKeys?.append((name, key))
                        }
                    })
            else {
                throw DatabaseError(resultCode: .noMemory, message: "cannot install change tracking: out of memory")
            }
            guard
                change_tracking_set_clock_source(created, clockSource.schema, clockSource.sql) == SQLITE_OK,
                change_tracking_set_watermark_writer(created, watermarkWriterSQL) == SQLITE_OK
            else {
                change_tracking_release(created)
                throw DatabaseError(resultCode: .noMemory, message: "cannot install change tracking: out of memory")
            }
            tracking = created
            self.tracking = created
        }
        change_tracking_set_recording(tracking, isOn ? 1 : 0)
        change_tracking_set_observing(tracking, observedKeys == nil ? 0 : 1)
        let code = change_tracking_add_functions(handle, tracking)
        // The reference taken above (or at creation) was only for the registration.
        change_tracking_release(tracking)
        return code
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

    /// Registers the change log's SQL functions, which its tracking triggers call on every row:
    /// `ostore_recording()` (this connection's ``isRecordingChanges``), `ostore_clock()` (`clock`,
    /// given the floor `clockSource` reads when its schema changed), `ostore_observe(table, key)`
    /// (appended to the switch's observed keys while someone observes) and
    /// `ostore_watermark_after(entry)` (runs `watermarkWriterSQL` once per transaction). They are
    /// answered in C (CChangeTracking); only the clock, and the keys while observed, reach Swift.
    package func installChangeTrackingFunctions(
        clockSource: (schema: String, sql: String), watermarkWriterSQL: String,
        clock: @escaping (_ floor: Int64) -> Int64
    ) throws {
        let handle = try connection.handle(for: "install change tracking")
        changeRecording.clock = clock
        let code = try changeRecording.installFunctions(
            on: handle, clockSource: clockSource, watermarkWriterSQL: watermarkWriterSQL)
        guard code == SQLITE_OK else {
            throw connection.lastError(code: code).prefixed("cannot install the change log's SQL functions")
        }
    }

    /// Makes `sqlite_compileoption_used(name)` answer 1 on this connection, where the built-in
    /// answers 0 for a name no SQLite build has; every other name keeps the built-in's answer.
    package func installChangeTrackingProbe(named name: String) throws {
        let handle = try connection.handle(for: "install change tracking")
        let code = change_tracking_add_probe(handle, name)
        guard code == SQLITE_OK else {
            throw connection.lastError(code: code).prefixed("cannot install the change-tracking probe")
        }
    }
}
