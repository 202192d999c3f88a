import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

extension ChangeLog {
    /// The key as the log stores it (`pk`): a one-column key's value, or the values' SQL
    /// literals joined by commas (``LoggedKey`` reads them back).
    static func loggedKey(_ values: [DatabaseValue]) -> DatabaseValue {
        values.count == 1 ? values[0] : .text(values.map(\.sqlLiteral).joined(separator: ","))
    }

    /// The key's values in the order of `keyColumns`. The change names the same key columns as
    /// the table, compared as SQLite compares names (case-insensitively); usually exactly.
    static func keyValues(of change: IncomingChange, keyColumns: [String], table: String) throws(ChangeLogError)
        -> [DatabaseValue]
    {
        try keyValues(of: change.primaryKey, keyColumns: keyColumns, table: table)
    }

    /// A key's values (by name, as a change or a pull names a row) in the order of `keyColumns`,
    /// as ``keyValues(of:keyColumns:table:)`` reads a change's.
    static func keyValues(of primaryKey: [String: DatabaseValue], keyColumns: [String], table: String)
        throws(ChangeLogError) -> [DatabaseValue]
    {
        if primaryKey.count == keyColumns.count {
            var values: [DatabaseValue] = []
            values.reserveCapacity(keyColumns.count)
            for key in keyColumns {
                guard let value = primaryKey[key] else { break }
                values.append(value)
            }
            if values.count == keyColumns.count { return values }
        }
        // As many names as key columns, the same ones: no key column named twice (in two cases).
        guard primaryKey.count == keyColumns.count,
            Set(primaryKey.keys.map { $0.lowercased() }) == Set(keyColumns.map { $0.lowercased() })
        else {
            throw ChangeLogError(
                .invalidChange, table: table,
                "the key names \(primaryKey.keys.sorted()) but \(table) is keyed by \(keyColumns)")
        }
        return keyColumns.map { key in primaryKey.first { $0.key.lowercased() == key.lowercased() }!.value }
    }

    /// `"a" = ?1 AND "b" = ?2 …`: a row matched by its key, the key's values bound first, in order.
    static func keyMatch(_ keys: [String]) -> String {
        keys.enumerated().map { "\(quoteIdentifier($1)) = ?\($0 + 1)" }.joined(separator: " AND ")
    }

    /// `VERB main."table" [SET …] WHERE key = ? AND …`, names quoted (they come from the declared
    /// schema), values bound.
    static func rowSQL(
        _ verb: String, _ table: String, _ keys: [String], _ keyValues: [DatabaseValue], set: [String: DatabaseValue]
    ) -> SQL {
        var sql = SQL(sql: "\(verb) main.\(quoteIdentifier(table))")
        if !set.isEmpty {
            sql = sql + " SET "
            for (index, name) in set.keys.sorted().enumerated() {
                sql = sql + (index == 0 ? "" : ", ") + "\(identifier: name) = \(set[name]!)"
            }
        }
        sql = sql + " WHERE "
        for (index, (key, value)) in zip(keys, keyValues).enumerated() {
            sql = sql + (index == 0 ? "" : " AND ") + "\(identifier: key) = \(value)"
        }
        return sql
    }
}
