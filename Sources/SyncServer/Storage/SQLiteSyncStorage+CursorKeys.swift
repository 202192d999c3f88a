import Foundation
import OfflineStoreSQLite

extension SQLiteSyncStorage {
    /// Read in a read transaction; only the first call on a new `server.sqlite` writes, and
    /// SQLite's single writer makes one key 1 for every process sharing the file.
    public func cursorKeys() throws(ServerError) -> [CursorKey] {
        let stored = try serverWork("reading the pull cursor keys") { try pool.read { db in try Self.cursorKeys(db) } }
        if !stored.isEmpty { return stored }
        let secret = try CursorKey.newSecret()
        return try serverWork("making the first pull cursor key") {
            try pool.write { db in
                try db.execute(
                    """
                    INSERT INTO server_cursor_keys (id, secret, createdAt)
                    SELECT 1, \(secret), \(Date()) WHERE NOT EXISTS (SELECT 1 FROM server_cursor_keys)
                    """)
                return try Self.cursorKeys(db)
            }
        }
    }

    public func rotateCursorKeys() throws(ServerError) -> CursorKeyRotation {
        let secret = try CursorKey.newSecret()
        return try serverWork("rotating the pull cursor keys") {
            try pool.write { db in
                let newest = try db.fetchValue(Int64.self, "SELECT max(id) FROM server_cursor_keys")
                let added = (newest ?? 0) + 1
                try db.execute(
                    "INSERT INTO server_cursor_keys (id, secret, createdAt) VALUES (\(added), \(secret), \(Date()))")
                let dropped = try db.fetchAll(
                    Int64.self, "SELECT id FROM server_cursor_keys WHERE id < \(newest ?? 0) ORDER BY id")
                try db.execute("DELETE FROM server_cursor_keys WHERE id < \(newest ?? 0)")
                return CursorKeyRotation(added: added, previous: newest, dropped: dropped)
            }
        }
    }

    /// The newest key and the one before it.
    private static func cursorKeys(_ db: Database) throws -> [CursorKey] {
        try db.fetchAll("SELECT id, secret FROM server_cursor_keys ORDER BY id DESC LIMIT 2").map { row in
            CursorKey(id: try row.decode(at: 0), secret: try row.decode(at: 1))
        }
    }
}
