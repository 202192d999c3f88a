import Dispatch
import Foundation
import OfflineStore
@_exported import TestSupport

extension Database {
    /// The first column of the first row of `sql` (nil for no row or NULL), read through a cursor.
    ///
    /// Tests use it to check side effects without depending on `fetchValue`, which has its own tests.
    func scalar<Value: DatabaseValueConvertible>(_ type: Value.Type, _ sql: SQL) throws -> Value? {
        let cursor = try fetchCursor(sql)
        return try withExtendedLifetime(cursor) {
            guard let row = try cursor.next() else { return nil }
            return try row.decode(Value?.self, at: 0)
        }
    }

    /// `SELECT count(*) FROM table`, read through a cursor.
    func count(_ table: String) throws -> Int {
        try scalar(Int.self, "SELECT count(*) FROM \(identifier: table)") ?? -1
    }
}
