#ifndef OFFLINESTORE_CSQLITE_SHIM_H
#define OFFLINESTORE_CSQLITE_SHIM_H

#include <sqlite3.h>
#include <string.h>

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

/// sqlite3_result_text with SQLITE_TRANSIENT, for custom SQL functions.
static inline void csqlite_result_text_copy(sqlite3_context *context, const char *text, int byteCount) {
    sqlite3_result_text(context, text, byteCount, SQLITE_TRANSIENT);
}

/// sqlite3_result_blob with SQLITE_TRANSIENT, for custom SQL functions.
static inline void csqlite_result_blob_copy(sqlite3_context *context, const void *bytes, int byteCount) {
    sqlite3_result_blob(context, bytes, byteCount, SQLITE_TRANSIENT);
}

/// The change log's fast path for the question its permanent triggers ask: "is change tracking
/// installed on this connection?". The triggers may use built-in SQL only (they fire in any
/// program that writes the file), so they call the built-in sqlite_compileoption_used() with a
/// name no SQLite build has, where it answers 0. On a connection with tracking installed this
/// replaces it: that one name answers 1, every other answer is the built-in's own
/// (https://www.sqlite.org/c3ref/compileoption_get.html). `sentinel` is copied.
static void csqlite_compileoption_used_or_tracking(sqlite3_context *context, int argc, sqlite3_value **argv) {
    (void)argc;
    const char *name = (const char *)sqlite3_value_text(argv[0]);
    if (name == 0) return;
    const char *sentinel = (const char *)sqlite3_user_data(context);
    if (strcmp(name, sentinel) == 0) {
        sqlite3_result_int(context, 1);
    } else {
        sqlite3_result_int(context, sqlite3_compileoption_used(name));
    }
}

static inline int csqlite_add_tracking_probe(sqlite3 *db, const char *sentinel) {
    char *copy = sqlite3_mprintf("%s", sentinel);
    if (copy == 0) return SQLITE_NOMEM;
    return sqlite3_create_function_v2(db, "sqlite_compileoption_used", 1,
                                      SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, copy,
                                      csqlite_compileoption_used_or_tracking, 0, 0, sqlite3_free);
}

#endif
