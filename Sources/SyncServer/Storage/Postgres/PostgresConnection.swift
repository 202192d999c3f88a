import CLibPQ
import Foundation

/// One libpq connection, owning its `PGconn` (closed in `deinit`). Statements are prepared on
/// first use and executed by name with binary parameters and results. Not thread-safe: a
/// connection is used by one thread at a time (``PostgresPool`` hands it out).
///
/// ```swift
/// let connection = try PostgresConnection(url: "postgresql://ostore@db.internal/ostore")
/// let result = try connection.execute(statement, [.text("family")])
/// ```
///
/// The URL is any libpq connection string or URI; a password is better given through
/// `PGPASSWORD` or `~/.pgpass`, which libpq reads itself. See
/// <https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-CONNSTRING>.
final class PostgresConnection {
    private let handle: OpaquePointer
    private var prepared: Set<String> = []

    /// Connects, failing after `connectTimeout` seconds.
    init(url: String, connectTimeout: Int = 5) throws(PostgresError) {
        // Earlier keywords are defaults; the URL, expanded in place of `dbname`, overrides them.
        let keywords = ["connect_timeout", "application_name", "dbname"]
        let values = [String(connectTimeout), "ostore-server", url]
        let connection = Self.withCStrings(keywords) { keywords in
            Self.withCStrings(values) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let connection else {
            throw PostgresError(.connection, "libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.text(PQerrorMessage(connection))
            PQfinish(connection)
            throw PostgresError(.connection, "cannot connect: \(message)")
        }
        handle = connection
        // Notices (e.g. "relation already exists, skipping") are not errors; they are dropped
        // instead of going to standard error, which is the server's request log.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit {
        PQfinish(handle)
    }

    /// Whether the connection is open and outside any transaction, so it may go back to a pool.
    var isReusable: Bool {
        PQstatus(handle) == CONNECTION_OK && PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    var isBroken: Bool { PQstatus(handle) != CONNECTION_OK }

    /// Executes a prepared statement (preparing it on this connection first if needed).
    @discardableResult
    func execute(_ statement: PostgresStatement, _ parameters: [PostgresValue] = []) throws(PostgresError)
        -> PostgresResult
    {
        precondition(parameters.count == statement.parameterTypes.count, "\(statement.name): parameter count")
        if !prepared.contains(statement.name) {
            let types = statement.parameterTypes.map(\.rawValue)
            let result = PQprepare(handle, statement.name, statement.sql, Int32(types.count), types)
            _ = try check(result, statement.name, sql: statement.sql)
            prepared.insert(statement.name)
        }
        // One buffer holds every parameter; a trailing byte keeps empty values' pointers valid.
        var buffer: [UInt8] = []
        var offsets: [Int?] = []
        var lengths: [Int32] = []
        for parameter in parameters {
            if let bytes = parameter.binary {
                offsets.append(buffer.count)
                lengths.append(Int32(bytes.count))
                buffer += bytes
            } else {
                offsets.append(nil)
                lengths.append(0)
            }
        }
        buffer.append(0)
        let formats = [Int32](repeating: 1, count: parameters.count)
        let result = buffer.withUnsafeBytes { raw -> OpaquePointer? in
            let base = raw.baseAddress!.assumingMemoryBound(to: CChar.self)
            let pointers: [UnsafePointer<CChar>?] = offsets.map { offset in offset.map { UnsafePointer(base + $0) } }
            return PQexecPrepared(
                handle, statement.name, Int32(parameters.count), pointers, lengths, formats, 1)
        }
        return try check(result, statement.name, sql: statement.sql)
    }

    /// Runs SQL without parameters through the simple query protocol: transaction control and the
    /// server's own migrations (DDL), never values.
    func executeScript(_ sql: String, name: String = "script") throws(PostgresError) {
        _ = try check(PQexec(handle, sql), name, sql: sql)
    }

    /// Runs `body` in a transaction (`begin` is the statement that opens it), committing when it
    /// returns and rolling back when it throws.
    func transaction<Output>(begin: String = "BEGIN", _ body: () throws -> Output) throws -> Output {
        try executeScript(begin, name: "begin")
        let output: Output
        do {
            output = try body()
        } catch {
            if !isBroken { try? executeScript("ROLLBACK", name: "rollback") }
            throw error
        }
        try executeScript("COMMIT", name: "commit")
        return output
    }

    /// The notifications received on the channels this connection listens on (`LISTEN`), waiting
    /// up to `timeout` for the first when none has arrived yet; empty when none came. Throws
    /// when the connection is lost.
    /// See <https://www.postgresql.org/docs/15/libpq-notify.html>.
    func notifications(waitingUpTo timeout: Duration) throws(PostgresError) -> [(channel: String, payload: String)] {
        var received = takeNotifications()
        guard received.isEmpty else { return received }
        let socket = PQsocket(handle)
        guard socket >= 0 else { throw PostgresError(.connection, "the connection has no socket") }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(
            clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let ready = poll(&descriptor, 1, milliseconds)
        guard ready > 0 else {
            if ready < 0 && errno != EINTR {
                throw PostgresError(.connection, "poll failed: \(String(cString: strerror(errno)))")
            }
            return []
        }
        guard PQconsumeInput(handle) == 1, !isBroken else {
            throw PostgresError(.connection, "the connection was lost: \(Self.text(PQerrorMessage(handle)))")
        }
        received = takeNotifications()
        return received
    }

    private func takeNotifications() -> [(channel: String, payload: String)] {
        var received: [(channel: String, payload: String)] = []
        while let notification = PQnotifies(handle) {
            received.append(
                (String(cString: notification.pointee.relname), String(cString: notification.pointee.extra)))
            PQfreemem(notification)
        }
        return received
    }

    private func check(_ result: OpaquePointer?, _ name: String, sql: String) throws(PostgresError) -> PostgresResult {
        guard let result else {
            throw PostgresError(
                .connection, "no result: \(Self.text(PQerrorMessage(handle)))", statementName: name, sql: sql)
        }
        let owned = PostgresResult(owning: result, statementName: name)
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let sqlState = cpq_result_sqlstate(result).map { String(cString: $0) }
            let message =
                cpq_result_primary_message(result).map { String(cString: $0) }
                ?? Self.text(PQresultErrorMessage(result))
            throw PostgresError(
                isBroken ? .connection : .statement, message.isEmpty ? Self.text(PQerrorMessage(handle)) : message,
                sqlState: sqlState, statementName: name, sql: sql)
        }
        return owned
    }

    private static func text(_ pointer: UnsafePointer<CChar>?) -> String {
        pointer.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
    }

    /// A NULL-terminated array of C strings that live for the duration of `body`.
    private static func withCStrings<Output>(
        _ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> Output
    ) -> Output {
        let copies = strings.map { strdup($0) }
        defer { for copy in copies { free(copy) } }
        let pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
