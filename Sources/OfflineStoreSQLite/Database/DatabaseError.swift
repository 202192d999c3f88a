import Foundation

/// The one error type of the database layer: SQLite's refusals and the
/// library's own checks (value conversion, misuse, missing columns).
///
/// It carries the extended ``ResultCode``, SQLite's message, the SQL that
/// failed and its arguments. Arguments are user data, so ``description``
/// hides them unless the connection opted in with
/// ``Configuration/publicStatementArguments``.
///
/// ```swift
/// do {
///     try db.execute("INSERT INTO reminders (id, title) VALUES (\(id), \(title))")
/// } catch DatabaseError.constraintPrimaryKey {
///     print("already exists")
/// } catch let error as DatabaseError {
///     print(error.resultCode, error.message, error.sql ?? "")
/// }
/// ```
///
/// See <https://www.sqlite.org/rescode.html>.
public struct DatabaseError: Error, CustomStringConvertible, Sendable {
    /// The extended result code (SQLite's, or the one closest to the library's own check).
    public let resultCode: ResultCode
    /// What went wrong, in words.
    public let message: String
    /// The SQL that was being prepared or run, if any.
    public let sql: String?
    /// The arguments bound to ``sql``; user data, shown in ``description`` only on opt-in.
    public let arguments: [DatabaseValue]?
    /// The stored value a conversion refused; user data, shown in ``description`` only on opt-in.
    public let value: DatabaseValue?
    /// Whether ``description`` may show ``arguments`` and ``value``.
    public let showsArguments: Bool
    /// For an I/O error, a full disk or a file that cannot be opened: the `errno` of the system
    /// call that failed (`sqlite3_system_errno`), which says which of the many causes it was.
    /// See <https://www.sqlite.org/c3ref/system_errno.html>.
    public let systemErrorNumber: Int32?

    public init(
        resultCode: ResultCode,
        message: String,
        sql: String? = nil,
        arguments: [DatabaseValue]? = nil,
        value: DatabaseValue? = nil,
        showsArguments: Bool = false,
        systemErrorNumber: Int32? = nil
    ) {
        self.resultCode = resultCode
        self.message = message
        self.sql = sql
        self.arguments = arguments
        self.value = value
        self.showsArguments = showsArguments
        self.systemErrorNumber = systemErrorNumber
    }

    /// The primary result code.
    public var primaryResultCode: ResultCode { resultCode.primary }

    public var description: String {
        var text = "\(resultCode.description) — \(message)"
        if let systemErrorNumber {
            text += " (system error \(systemErrorNumber): \(String(cString: strerror(systemErrorNumber))))"
        }
        if let sql {
            text += " — in `\(sql)`"
        }
        if let arguments, !arguments.isEmpty {
            if showsArguments {
                text += " with arguments [\(arguments.map(\.sqlLiteralDescription).joined(separator: ", "))]"
            } else {
                text +=
                    " with \(arguments.count) argument(s) (hidden: set Configuration.publicStatementArguments to show them)"
            }
        }
        if let value, showsArguments {
            text += " (value: \(value.sqlLiteralDescription))"
        }
        if let hint = Self.hint(for: resultCode) {
            text += ". \(hint)"
        }
        return text
    }

    /// What the user can do next, for the codes where there is a usual answer.
    private static func hint(for code: ResultCode) -> String? {
        switch code {
        case .constraintForeignKey:
            return
                "Insert the referenced row first, or defer the check with PRAGMA defer_foreign_keys inside the transaction."
        case .busy:
            return
                "Another connection holds the lock: raise Configuration.busyTimeout or write through one DatabasePool."
        case .notADatabase:
            return "The file is not an SQLite database (or is encrypted): check the path."
        case .cantOpen, .cantOpenIsDirectory:
            return "Check that the directory exists and is writable, and that the path is not a directory."
        case .readonly:
            return "The file or its directory is read-only, or the connection was opened read-only."
        case .corrupt:
            return "The file is damaged: restore it from a backup or re-download it."
        case .full:
            return "The disk is full: free space and retry; nothing was committed."
        case .misuse:
            return "This is a programming error in the caller: see the message."
        default:
            return nil
        }
    }
}

extension DatabaseError {
    // Aliases so callers can write `catch DatabaseError.constraintForeignKey`.
    public static let constraint = ResultCode.constraint
    public static let constraintForeignKey = ResultCode.constraintForeignKey
    public static let constraintPrimaryKey = ResultCode.constraintPrimaryKey
    public static let constraintUnique = ResultCode.constraintUnique
    public static let constraintNotNull = ResultCode.constraintNotNull
    public static let constraintCheck = ResultCode.constraintCheck
    public static let busy = ResultCode.busy
    public static let misuse = ResultCode.misuse
    public static let mismatch = ResultCode.mismatch
    public static let notADatabase = ResultCode.notADatabase
    public static let cantOpen = ResultCode.cantOpen
    public static let readonly = ResultCode.readonly
    public static let range = ResultCode.range
    public static let error = ResultCode.error
    /// A record updated by a key no row of its table has.
    public static let recordNotFound = ResultCode.notFound
}

extension DatabaseError {
    /// A programming error by the caller (closed connection, re-entrant write, ...).
    static func misuse(_ message: String, sql: String? = nil) -> DatabaseError {
        DatabaseError(resultCode: .misuse, message: message, sql: sql)
    }

    /// A value that cannot become the requested Swift type without loss.
    static func conversion(_ message: String, value: DatabaseValue? = nil) -> DatabaseError {
        DatabaseError(resultCode: .mismatch, message: message, value: value)
    }

    /// The same error, with the statement context added when it had none.
    func with(sql: String, arguments: [DatabaseValue]?, showsArguments: Bool) -> DatabaseError {
        DatabaseError(
            resultCode: resultCode, message: message, sql: self.sql ?? sql,
            arguments: self.arguments ?? arguments, value: value, showsArguments: showsArguments,
            systemErrorNumber: systemErrorNumber)
    }

    /// The same error with more words in front of its message.
    func prefixed(_ context: String) -> DatabaseError {
        DatabaseError(
            resultCode: resultCode, message: "\(context): \(message)", sql: sql,
            arguments: arguments, value: value, showsArguments: showsArguments, systemErrorNumber: systemErrorNumber)
    }
}
