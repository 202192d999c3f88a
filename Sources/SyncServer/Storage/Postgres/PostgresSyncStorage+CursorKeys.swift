import Foundation

extension PostgresSyncStorage {
    /// One plain read; only the first call on a new database writes, under the keys' lock, so the
    /// servers starting on it at once make one key 1 between them.
    public func cursorKeys() throws(ServerError) -> [CursorKey] {
        try serverWork("reading the pull cursor keys") { connection in
            let stored = try Self.cursorKeys(connection)
            if !stored.isEmpty { return stored }
            let secret = try CursorKey.newSecret()
            return try connection.transaction {
                try connection.executeScript(Statements.lockCursorKeys, name: "lockCursorKeys")
                try connection.execute(Statements.insertFirstCursorKey, [.bytea(secret)])
                return try Self.cursorKeys(connection)
            }
        }
    }

    public func rotateCursorKeys() throws(ServerError) -> CursorKeyRotation {
        let secret = try CursorKey.newSecret()
        return try serverWork("rotating the pull cursor keys") { connection in
            try connection.transaction {
                try connection.executeScript(Statements.lockCursorKeys, name: "lockCursorKeys")
                let added = try connection.execute(Statements.addCursorKey, [.bytea(secret)]).int64(row: 0, column: 0)
                let dropped = try connection.execute(Statements.dropCursorKeys, [.int8(added - 1)])
                let kept = try Self.cursorKeys(connection)
                return CursorKeyRotation(
                    added: added, previous: kept.count > 1 ? kept[1].id : nil,
                    dropped: try (0..<dropped.rowCount).map { row in try dropped.int64(row: row, column: 0) }.sorted())
            }
        }
    }

    private static func cursorKeys(_ connection: PostgresConnection) throws -> [CursorKey] {
        let result = try connection.execute(Statements.cursorKeys)
        return try (0..<result.rowCount).map { row in
            CursorKey(id: try result.int64(row: row, column: 0), secret: try result.data(row: row, column: 1))
        }
    }
}
