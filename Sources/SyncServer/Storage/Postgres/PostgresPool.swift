import Foundation

/// A small pool of ``PostgresConnection``s to one database: at most `capacity` open at once,
/// opened on demand, each lent to one caller at a time. A connection that broke, or that comes
/// back inside a transaction, is closed instead of reused; when one breaks, the idle ones are
/// dropped too (after a database restart they are all dead), so the next request reconnects.
///
/// ```swift
/// let pool = PostgresPool(url: url, capacity: 8)
/// let count = try pool.withConnection { connection in try connection.execute(statement).rowCount }
/// ```
///
/// `@unchecked Sendable`: `idle` and `open` are read and written only under `condition`'s lock, and
/// a connection taken out of `idle` is used by the one thread that took it until it is put back.
final class PostgresPool: @unchecked Sendable {
    let url: String
    let capacity: Int
    private let condition = NSCondition()
    private var idle: [PostgresConnection] = []
    private var open = 0
    /// How long a caller waits for a free connection before the request is answered 503.
    private let waitLimit: TimeInterval

    init(url: String, capacity: Int, waitLimit: TimeInterval = 10) {
        self.url = url
        self.capacity = max(capacity, 1)
        self.waitLimit = waitLimit
    }

    /// Lends a connection to `body`; errors of `body` pass through unchanged.
    func withConnection<Output>(_ body: (PostgresConnection) throws -> Output) throws -> Output {
        let connection = try checkOut()
        do {
            let output = try body(connection)
            checkIn(connection)
            return output
        } catch {
            checkIn(connection)
            throw error
        }
    }

    private func checkOut() throws(PostgresError) -> PostgresConnection {
        condition.lock()
        let deadline = Date(timeIntervalSinceNow: waitLimit)
        while idle.isEmpty && open >= capacity {
            guard condition.wait(until: deadline) else {
                condition.unlock()
                throw PostgresError(.connection, "all \(capacity) connections stayed busy for \(Int(waitLimit)) s")
            }
        }
        if let connection = idle.popLast() {
            condition.unlock()
            return connection
        }
        open += 1
        condition.unlock()
        do {
            return try PostgresConnection(url: url)
        } catch {
            condition.lock()
            open -= 1
            condition.signal()
            condition.unlock()
            throw error
        }
    }

    private func checkIn(_ connection: PostgresConnection) {
        condition.lock()
        defer {
            condition.signal()
            condition.unlock()
        }
        if connection.isReusable {
            idle.append(connection)
            return
        }
        open -= 1
        if connection.isBroken {
            open -= idle.count
            idle.removeAll()
        }
    }
}
