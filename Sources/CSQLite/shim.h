#ifndef OFFLINESTORE_CSQLITE_SHIM_H
#define OFFLINESTORE_CSQLITE_SHIM_H

#include <sqlite3.h>

// Swift cannot call C variadic functions, and cannot spell SQLITE_TRANSIENT
// (a function pointer made from -1). These typed wrappers are the only way the
// Swift layer reaches those entry points.

/// sqlite3_db_config for the integer-flag options (SQLITE_DBCONFIG_ENABLE_FKEY,
/// SQLITE_DBCONFIG_DEFENSIVE, SQLITE_DBCONFIG_DQS_DML, ...).
/// https://www.sqlite.org/c3ref/db_config.html
static inline int csqlite_db_config_flag(sqlite3 *db, int op, int value, int *current) {
    return sqlite3_db_config(db, op, value, current);
}

/// sqlite3_bind_text with SQLITE_TRANSIENT: SQLite copies the bytes before returning.
static inline int csqlite_bind_text_copy(sqlite3_stmt *stmt, int index, const char *text, int byteCount) {
    return sqlite3_bind_text(stmt, index, text, byteCount, SQLITE_TRANSIENT);
}

/// sqlite3_bind_blob with SQLITE_TRANSIENT: SQLite copies the bytes before returning.
static inline int csqlite_bind_blob_copy(sqlite3_stmt *stmt, int index, const void *bytes, int byteCount) {
    return sqlite3_bind_blob(stmt, index, bytes, byteCount, SQLITE_TRANSIENT);
}

/// sqlite3_bind_text with SQLITE_STATIC: SQLite reads the bytes in place; they must stay valid
/// until the statement is reset or rebound.
static inline int csqlite_bind_text_in_place(sqlite3_stmt *stmt, int index, const char *text, int byteCount) {
    return sqlite3_bind_text(stmt, index, text, byteCount, SQLITE_STATIC);
}

/// sqlite3_bind_blob with SQLITE_STATIC: SQLite reads the bytes in place; they must stay valid
/// until the statement is reset or rebound.
static inline int csqlite_bind_blob_in_place(sqlite3_stmt *stmt, int index, const void *bytes, int byteCount) {
    return sqlite3_bind_blob(stmt, index, bytes, byteCount, SQLITE_STATIC);
}

/// sqlite3_result_text with SQLITE_TRANSIENT, for custom SQL functions.
static inline void csqlite_result_text_copy(sqlite3_context *context, const char *text, int byteCount) {
    sqlite3_result_text(context, text, byteCount, SQLITE_TRANSIENT);
}

/// sqlite3_result_blob with SQLITE_TRANSIENT, for custom SQL functions.
static inline void csqlite_result_blob_copy(sqlite3_context *context, const void *bytes, int byteCount) {
    sqlite3_result_blob(context, bytes, byteCount, SQLITE_TRANSIENT);
}

#endif
