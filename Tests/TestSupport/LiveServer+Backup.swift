import Foundation
import PostgresScratchCluster

extension LiveServer {
    /// The options that name this server's storage on an `ostore-server` command line.
    public var storageArguments: [String] {
        postgresURL.map { ["--postgres", $0] } ?? ["--data", dataDirectory.path]
    }

    /// A consistent backup of the server's storage in `file`, taken while it serves, as
    /// docs/running-the-server.md and docs/POSTGRES.md tell an operator to: `sqlite3 .backup` of
    /// `server.sqlite`, or `pg_dump --format=custom` of the database.
    public func backUp(to file: String) throws {
        guard let postgresURL else {
            let server = dataDirectory.appendingPathComponent("server.sqlite").path
            let copy = try run("/usr/bin/sqlite3", [server, ".backup \(file)"])
            guard copy.status == 0 else {
                throw CommandFailure(
                    command: "sqlite3 .backup", status: copy.status, error: String(decoding: copy.error, as: UTF8.self))
            }
            return
        }
        try PostgresCluster.shared().dump(postgresURL, to: file)
    }

    /// With the server stopped, puts the backup in `file` back as the documentation says and runs
    /// `ostore-server restore` (`restore BACKUP --data DIR`; on PostgreSQL `pg_restore`, then
    /// `restore --postgres URL`), returning that command's result; or, `byHand`, only copies the
    /// file back (with its `-wal` and `-shm` removed) or only runs `pg_restore`, which gives no
    /// dataset a new incarnation, and returns nil.
    @discardableResult
    public func restore(from file: String, byHand: Bool = false) throws -> (status: Int32, output: Data, error: Data)? {
        precondition(!process.isRunning, "stop the server first")
        if let postgresURL {
            try PostgresCluster.shared().restore(file, into: postgresURL)
        } else if byHand {
            let server = dataDirectory.appendingPathComponent("server.sqlite").path
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: server + suffix) }
            try FileManager.default.removeItem(atPath: server)
            try FileManager.default.copyItem(atPath: file, toPath: server)
        }
        guard !byHand else { return nil }
        return try run(
            try builtProduct("ostore-server").path, ["restore"] + (postgresURL == nil ? [file] : []) + storageArguments)
    }
}
