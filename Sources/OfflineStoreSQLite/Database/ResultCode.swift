import CSQLite

/// A SQLite result code, primary or extended.
///
/// Extended codes carry their primary code in the low byte, so
/// ``primary`` recovers it: `ResultCode.constraintForeignKey.primary == .constraint`.
/// Match errors with a pattern:
///
/// ```swift
/// do {
///     try db.execute("INSERT INTO child (parentID) VALUES (\(missingID))")
/// } catch DatabaseError.constraintForeignKey {
///     // the parent row does not exist
/// } catch DatabaseError.constraint {
///     // any other constraint (primary codes match all their extended codes)
/// }
/// ```
///
/// See <https://www.sqlite.org/rescode.html>.
public struct ResultCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The primary result code (the low byte).
    public var primary: ResultCode { ResultCode(rawValue: rawValue & 0xFF) }

    /// Whether this is a primary code, which as a pattern matches every extended code of its family.
    public var isPrimary: Bool { rawValue == rawValue & 0xFF }

    /// SQLite's own English text for the code, plus its symbolic name.
    public var description: String {
        let text = String(cString: sqlite3_errstr(rawValue))
        if let name = Self.symbolicNames[rawValue] {
            return "\(name) (\(rawValue)): \(text)"
        }
        return "SQLite code \(rawValue): \(text)"
    }

    public static let ok = ResultCode(rawValue: SQLITE_OK)
    public static let error = ResultCode(rawValue: SQLITE_ERROR)
    public static let internalError = ResultCode(rawValue: SQLITE_INTERNAL)
    public static let permission = ResultCode(rawValue: SQLITE_PERM)
    public static let abort = ResultCode(rawValue: SQLITE_ABORT)
    public static let busy = ResultCode(rawValue: SQLITE_BUSY)
    public static let locked = ResultCode(rawValue: SQLITE_LOCKED)
    public static let noMemory = ResultCode(rawValue: SQLITE_NOMEM)
    public static let readonly = ResultCode(rawValue: SQLITE_READONLY)
    public static let interrupt = ResultCode(rawValue: SQLITE_INTERRUPT)
    public static let ioError = ResultCode(rawValue: SQLITE_IOERR)
    public static let corrupt = ResultCode(rawValue: SQLITE_CORRUPT)
    public static let full = ResultCode(rawValue: SQLITE_FULL)
    public static let cantOpen = ResultCode(rawValue: SQLITE_CANTOPEN)
    public static let schema = ResultCode(rawValue: SQLITE_SCHEMA)
    public static let tooBig = ResultCode(rawValue: SQLITE_TOOBIG)
    public static let constraint = ResultCode(rawValue: SQLITE_CONSTRAINT)
    public static let mismatch = ResultCode(rawValue: SQLITE_MISMATCH)
    public static let misuse = ResultCode(rawValue: SQLITE_MISUSE)
    public static let authorization = ResultCode(rawValue: SQLITE_AUTH)
    public static let range = ResultCode(rawValue: SQLITE_RANGE)
    /// SQLite's "not found", which the library also gives a record written or read by a key no
    /// row has (``DatabaseError/recordNotFound``).
    public static let notFound = ResultCode(rawValue: SQLITE_NOTFOUND)
    public static let notADatabase = ResultCode(rawValue: SQLITE_NOTADB)
    public static let row = ResultCode(rawValue: SQLITE_ROW)
    public static let done = ResultCode(rawValue: SQLITE_DONE)

    public static let busySnapshot = ResultCode(rawValue: SQLITE_BUSY | (2 << 8))
    public static let cantOpenIsDirectory = ResultCode(rawValue: SQLITE_CANTOPEN | (2 << 8))
    public static let readonlyDatabaseMoved = ResultCode(rawValue: SQLITE_READONLY | (4 << 8))
    public static let constraintCheck = ResultCode(rawValue: SQLITE_CONSTRAINT | (1 << 8))
    public static let constraintCommitHook = ResultCode(rawValue: SQLITE_CONSTRAINT | (2 << 8))
    public static let constraintForeignKey = ResultCode(rawValue: SQLITE_CONSTRAINT | (3 << 8))
    public static let constraintFunction = ResultCode(rawValue: SQLITE_CONSTRAINT | (4 << 8))
    public static let constraintNotNull = ResultCode(rawValue: SQLITE_CONSTRAINT | (5 << 8))
    public static let constraintPrimaryKey = ResultCode(rawValue: SQLITE_CONSTRAINT | (6 << 8))
    public static let constraintTrigger = ResultCode(rawValue: SQLITE_CONSTRAINT | (7 << 8))
    public static let constraintUnique = ResultCode(rawValue: SQLITE_CONSTRAINT | (8 << 8))
    public static let constraintRowID = ResultCode(rawValue: SQLITE_CONSTRAINT | (10 << 8))
    public static let constraintDataType = ResultCode(rawValue: SQLITE_CONSTRAINT | (12 << 8))

    private static let symbolicNames: [Int32: String] = [
        SQLITE_OK: "SQLITE_OK", SQLITE_ERROR: "SQLITE_ERROR", SQLITE_INTERNAL: "SQLITE_INTERNAL",
        SQLITE_PERM: "SQLITE_PERM", SQLITE_ABORT: "SQLITE_ABORT", SQLITE_BUSY: "SQLITE_BUSY",
        SQLITE_LOCKED: "SQLITE_LOCKED", SQLITE_NOMEM: "SQLITE_NOMEM", SQLITE_READONLY: "SQLITE_READONLY",
        SQLITE_INTERRUPT: "SQLITE_INTERRUPT", SQLITE_IOERR: "SQLITE_IOERR", SQLITE_CORRUPT: "SQLITE_CORRUPT",
        SQLITE_FULL: "SQLITE_FULL", SQLITE_CANTOPEN: "SQLITE_CANTOPEN", SQLITE_SCHEMA: "SQLITE_SCHEMA",
        SQLITE_TOOBIG: "SQLITE_TOOBIG", SQLITE_CONSTRAINT: "SQLITE_CONSTRAINT",
        SQLITE_MISMATCH: "SQLITE_MISMATCH", SQLITE_MISUSE: "SQLITE_MISUSE", SQLITE_AUTH: "SQLITE_AUTH",
        SQLITE_RANGE: "SQLITE_RANGE", SQLITE_NOTADB: "SQLITE_NOTADB",
        SQLITE_BUSY | (2 << 8): "SQLITE_BUSY_SNAPSHOT",
        SQLITE_CANTOPEN | (2 << 8): "SQLITE_CANTOPEN_ISDIR",
        SQLITE_READONLY | (4 << 8): "SQLITE_READONLY_DBMOVED",
        SQLITE_CONSTRAINT | (1 << 8): "SQLITE_CONSTRAINT_CHECK",
        SQLITE_CONSTRAINT | (2 << 8): "SQLITE_CONSTRAINT_COMMITHOOK",
        SQLITE_CONSTRAINT | (3 << 8): "SQLITE_CONSTRAINT_FOREIGNKEY",
        SQLITE_CONSTRAINT | (4 << 8): "SQLITE_CONSTRAINT_FUNCTION",
        SQLITE_CONSTRAINT | (5 << 8): "SQLITE_CONSTRAINT_NOTNULL",
        SQLITE_CONSTRAINT | (6 << 8): "SQLITE_CONSTRAINT_PRIMARYKEY",
        SQLITE_CONSTRAINT | (7 << 8): "SQLITE_CONSTRAINT_TRIGGER",
        SQLITE_CONSTRAINT | (8 << 8): "SQLITE_CONSTRAINT_UNIQUE",
        SQLITE_CONSTRAINT | (10 << 8): "SQLITE_CONSTRAINT_ROWID",
        SQLITE_CONSTRAINT | (12 << 8): "SQLITE_CONSTRAINT_DATATYPE",
        // The I/O errors, which say which system call failed (its errno is in DatabaseError).
        SQLITE_IOERR | (1 << 8): "SQLITE_IOERR_READ",
        SQLITE_IOERR | (2 << 8): "SQLITE_IOERR_SHORT_READ",
        SQLITE_IOERR | (3 << 8): "SQLITE_IOERR_WRITE",
        SQLITE_IOERR | (4 << 8): "SQLITE_IOERR_FSYNC",
        SQLITE_IOERR | (5 << 8): "SQLITE_IOERR_DIR_FSYNC",
        SQLITE_IOERR | (6 << 8): "SQLITE_IOERR_TRUNCATE",
        SQLITE_IOERR | (7 << 8): "SQLITE_IOERR_FSTAT",
        SQLITE_IOERR | (8 << 8): "SQLITE_IOERR_UNLOCK",
        SQLITE_IOERR | (9 << 8): "SQLITE_IOERR_RDLOCK",
        SQLITE_IOERR | (10 << 8): "SQLITE_IOERR_DELETE",
        SQLITE_IOERR | (11 << 8): "SQLITE_IOERR_BLOCKED",
        SQLITE_IOERR | (12 << 8): "SQLITE_IOERR_NOMEM",
        SQLITE_IOERR | (13 << 8): "SQLITE_IOERR_ACCESS",
        SQLITE_IOERR | (14 << 8): "SQLITE_IOERR_CHECKRESERVEDLOCK",
        SQLITE_IOERR | (15 << 8): "SQLITE_IOERR_LOCK",
        SQLITE_IOERR | (16 << 8): "SQLITE_IOERR_CLOSE",
        SQLITE_IOERR | (17 << 8): "SQLITE_IOERR_DIR_CLOSE",
        SQLITE_IOERR | (18 << 8): "SQLITE_IOERR_SHMOPEN",
        SQLITE_IOERR | (19 << 8): "SQLITE_IOERR_SHMSIZE",
        SQLITE_IOERR | (20 << 8): "SQLITE_IOERR_SHMLOCK",
        SQLITE_IOERR | (21 << 8): "SQLITE_IOERR_SHMMAP",
        SQLITE_IOERR | (22 << 8): "SQLITE_IOERR_SEEK",
        SQLITE_IOERR | (23 << 8): "SQLITE_IOERR_DELETE_NOENT",
        SQLITE_IOERR | (24 << 8): "SQLITE_IOERR_MMAP",
        SQLITE_IOERR | (25 << 8): "SQLITE_IOERR_GETTEMPPATH",
        SQLITE_IOERR | (26 << 8): "SQLITE_IOERR_CONVPATH",
        SQLITE_IOERR | (27 << 8): "SQLITE_IOERR_VNODE",
        SQLITE_IOERR | (28 << 8): "SQLITE_IOERR_AUTH",
        SQLITE_IOERR | (29 << 8): "SQLITE_IOERR_BEGIN_ATOMIC",
        SQLITE_IOERR | (30 << 8): "SQLITE_IOERR_COMMIT_ATOMIC",
        SQLITE_IOERR | (31 << 8): "SQLITE_IOERR_ROLLBACK_ATOMIC",
        SQLITE_IOERR | (32 << 8): "SQLITE_IOERR_DATA",
        SQLITE_IOERR | (33 << 8): "SQLITE_IOERR_CORRUPTFS",
    ]
}

/// Matches a ``ResultCode`` against any error: a primary code matches every
/// ``DatabaseError`` of its family, an extended code only itself.
public func ~= (pattern: ResultCode, error: any Error) -> Bool {
    guard let error = error as? DatabaseError else { return false }
    return pattern ~= error.resultCode
}

/// Matches result codes: a primary code matches its whole family.
public func ~= (pattern: ResultCode, code: ResultCode) -> Bool {
    pattern.isPrimary ? pattern == code.primary : pattern == code
}
