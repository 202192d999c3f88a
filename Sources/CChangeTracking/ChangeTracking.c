#include "ChangeTracking.h"

#include <sqlite3.h>
#include <string.h>

_Static_assert(sizeof(sqlite3_int64) == sizeof(long long), "the header spells sqlite3_int64 as long long");

struct change_tracking {
    int recording;
    int observing;
    int references;
    /* The watermark this connection wrote in its current write transaction, and the statement
       that writes it (see `sql_watermark_after` below). */
    int watermark_written;
    unsigned int watermark_version;
    sqlite3_int64 watermark_entry;
    char *watermark_sql;
    sqlite3_stmt *watermark_writer;
    /* The newest clock the files hold (see the header), and the metadatabase's data version it read. */
    char *clock_schema;
    char *clock_sql;
    sqlite3_stmt *clock_source;
    int clock_version_known;
    unsigned int clock_version;
    void *owner;
    void (*release_owner)(void *owner);
    long long (*now)(void *owner, long long floor);
    void (*observe)(void *owner, sqlite3_value *table, sqlite3_value *key);
};

/// The replacement of `sqlite_compileoption_used()`: 1 for the sentinel (its user data), else the
/// built-in's own answer.
static void compileoption_used_or_tracking(sqlite3_context *context, int argc, sqlite3_value **argv) {
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

int change_tracking_add_probe(sqlite3 *db, const char *sentinel) {
    char *copy = sqlite3_mprintf("%s", sentinel);
    if (copy == 0) return SQLITE_NOMEM;
    return sqlite3_create_function_v2(db, "sqlite_compileoption_used", 1,
                                      SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, copy,
                                      compileoption_used_or_tracking, 0, 0, sqlite3_free);
}

change_tracking *change_tracking_create(void *owner, void (*release_owner)(void *),
                                        long long (*now)(void *, long long),
                                        void (*observe)(void *, sqlite3_value *, sqlite3_value *)) {
    change_tracking *tracking = (change_tracking *)sqlite3_malloc(sizeof(change_tracking));
    if (tracking == 0) return 0;
    tracking->recording = 1;
    tracking->observing = 0;
    tracking->references = 1;
    tracking->watermark_written = 0;
    tracking->watermark_version = 0;
    tracking->watermark_entry = 0;
    tracking->watermark_sql = 0;
    tracking->watermark_writer = 0;
    tracking->clock_schema = 0;
    tracking->clock_sql = 0;
    tracking->clock_source = 0;
    tracking->clock_version_known = 0;
    tracking->clock_version = 0;
    tracking->owner = owner;
    tracking->release_owner = release_owner;
    tracking->now = now;
    tracking->observe = observe;
    return tracking;
}

void change_tracking_retain(change_tracking *tracking) { tracking->references++; }

void change_tracking_set_recording(change_tracking *tracking, int recording) { tracking->recording = recording; }

void change_tracking_set_observing(change_tracking *tracking, int observing) { tracking->observing = observing; }

void change_tracking_finalize(change_tracking *tracking) {
    sqlite3_finalize(tracking->clock_source);
    tracking->clock_source = 0;
    tracking->clock_version_known = 0;
    sqlite3_finalize(tracking->watermark_writer);
    tracking->watermark_writer = 0;
    tracking->watermark_written = 0;
}

int change_tracking_set_clock_source(change_tracking *tracking, const char *schema, const char *sql) {
    char *schema_copy = sqlite3_mprintf("%s", schema);
    char *sql_copy = sqlite3_mprintf("%s", sql);
    if (schema_copy == 0 || sql_copy == 0) {
        sqlite3_free(schema_copy);
        sqlite3_free(sql_copy);
        return SQLITE_NOMEM;
    }
    change_tracking_finalize(tracking);
    sqlite3_free(tracking->clock_schema);
    sqlite3_free(tracking->clock_sql);
    tracking->clock_schema = schema_copy;
    tracking->clock_sql = sql_copy;
    return SQLITE_OK;
}

int change_tracking_set_watermark_writer(change_tracking *tracking, const char *sql) {
    char *sql_copy = sqlite3_mprintf("%s", sql);
    if (sql_copy == 0) return SQLITE_NOMEM;
    change_tracking_finalize(tracking);
    sqlite3_free(tracking->watermark_sql);
    tracking->watermark_sql = sql_copy;
    return SQLITE_OK;
}

void change_tracking_release(change_tracking *tracking) {
    if (--tracking->references == 0) {
        change_tracking_finalize(tracking);
        sqlite3_free(tracking->clock_schema);
        sqlite3_free(tracking->clock_sql);
        sqlite3_free(tracking->watermark_sql);
        tracking->release_owner(tracking->owner);
        sqlite3_free(tracking);
    }
}

/// The destructor SQLite calls when it drops one of the functions.
static void release_reference(void *pointer) { change_tracking_release((change_tracking *)pointer); }

static void sql_recording(sqlite3_context *context, int argc, sqlite3_value **argv) {
    (void)argc;
    (void)argv;
    sqlite3_result_int(context, ((change_tracking *)sqlite3_user_data(context))->recording);
}

/// The newest clock the files hold when the metadatabase changed since the last look, else 0.
/// A failure to read it is the statement's error, reported by `ostore_clock()`.
static int clock_floor(sqlite3_context *context, change_tracking *tracking, sqlite3_int64 *floor) {
    *floor = 0;
    if (tracking->clock_sql == 0) return SQLITE_OK;
    sqlite3 *db = sqlite3_context_db_handle(context);
    unsigned int version = 0;
    if (sqlite3_file_control(db, tracking->clock_schema, SQLITE_FCNTL_DATA_VERSION, &version) != SQLITE_OK)
        return SQLITE_OK;
    if (tracking->clock_version_known && version == tracking->clock_version) return SQLITE_OK;
    if (tracking->clock_source == 0) {
        int code = sqlite3_prepare_v3(db, tracking->clock_sql, -1, SQLITE_PREPARE_PERSISTENT, &tracking->clock_source, 0);
        if (code != SQLITE_OK) return code;
    }
    int code = sqlite3_step(tracking->clock_source);
    if (code == SQLITE_ROW) *floor = sqlite3_column_int64(tracking->clock_source, 0);
    int reset = sqlite3_reset(tracking->clock_source);
    if (code != SQLITE_ROW) return reset == SQLITE_OK ? SQLITE_ERROR : reset;
    tracking->clock_version_known = 1;
    tracking->clock_version = version;
    return SQLITE_OK;
}

static void sql_clock(sqlite3_context *context, int argc, sqlite3_value **argv) {
    (void)argc;
    (void)argv;
    change_tracking *tracking = (change_tracking *)sqlite3_user_data(context);
    sqlite3_int64 floor = 0;
    int code = clock_floor(context, tracking, &floor);
    if (code != SQLITE_OK) {
        sqlite3_result_error(context, "ostore_clock(): cannot read the newest clock of the metadatabase", -1);
        sqlite3_result_error_code(context, code);
        return;
    }
    sqlite3_result_int64(context, tracking->now(tracking->owner, floor));
}

static void sql_observe(sqlite3_context *context, int argc, sqlite3_value **argv) {
    (void)argc;
    change_tracking *tracking = (change_tracking *)sqlite3_user_data(context);
    if (tracking->observing) tracking->observe(tracking->owner, argv[0], argv[1]);
    sqlite3_result_null(context);
}

/// `main`'s data version: SQLite changes it when a transaction commits (on this connection or,
/// once seen, another), never within one (https://www.sqlite.org/c3ref/c_fcntl_begin_atomic_write.html).
static int data_version(sqlite3_context *context, unsigned int *version) {
    return sqlite3_file_control(sqlite3_context_db_handle(context), "main", SQLITE_FCNTL_DATA_VERSION, version);
}

/// `ostore_watermark_after(entry)`, called by a trigger right after it appended the journal
/// entry `entry` (its rowid, `last_insert_rowid()` inside the trigger): writes the watermark into
/// `main` with the connection's own statement unless this transaction already wrote it and the
/// write is still there. The write is still there when it was made in this transaction (same data
/// version of `main`: a commit or rollback changes it) and `entry` is past the entry appended
/// with it: an append gets one more than the journal's largest rowid, so a ROLLBACK TO that undid
/// the write also undid that entry, and the next append gets its rowid or a smaller one. Anything
/// else that shrinks the journal within a transaction (a fold) only makes the write happen again.
/// Deciding in C, and writing through a statement of its own, keeps an UPDATE of `main` out of
/// every trigger: compiled into the trigger, it would be evaluated and skipped on every row but a
/// transaction's first.
static void sql_watermark_after(sqlite3_context *context, int argc, sqlite3_value **argv) {
    (void)argc;
    change_tracking *tracking = (change_tracking *)sqlite3_user_data(context);
    int entry_known = sqlite3_value_type(argv[0]) == SQLITE_INTEGER;
    sqlite3_int64 entry = sqlite3_value_int64(argv[0]);
    unsigned int version = 0;
    int version_known = data_version(context, &version) == SQLITE_OK;
    int still_written = tracking->watermark_written && version_known && entry_known &&
                        version == tracking->watermark_version && entry > tracking->watermark_entry;
    sqlite3_result_null(context);
    if (still_written) return;
    int code = SQLITE_OK;
    if (tracking->watermark_sql == 0) {
        code = SQLITE_MISUSE;
    } else if (tracking->watermark_writer == 0) {
        code = sqlite3_prepare_v3(sqlite3_context_db_handle(context), tracking->watermark_sql, -1,
                                  SQLITE_PREPARE_PERSISTENT, &tracking->watermark_writer, 0);
    }
    if (code == SQLITE_OK) {
        code = sqlite3_step(tracking->watermark_writer);
        int reset = sqlite3_reset(tracking->watermark_writer);
        code = code == SQLITE_DONE ? reset : (code == SQLITE_ROW ? SQLITE_MISUSE : code);
    }
    if (code != SQLITE_OK) {
        tracking->watermark_written = 0;
        sqlite3_result_error(context, "ostore_watermark_after(): cannot write the change log's watermark", -1);
        sqlite3_result_error_code(context, code);
        return;
    }
    tracking->watermark_written = version_known && entry_known;
    tracking->watermark_version = version;
    tracking->watermark_entry = entry;
}

int change_tracking_add_functions(sqlite3 *db, change_tracking *tracking) {
    static const struct {
        const char *name;
        int arguments;
        void (*body)(sqlite3_context *, int, sqlite3_value **);
    } functions[] = {
        {"ostore_recording", 0, sql_recording},
        {"ostore_clock", 0, sql_clock},
        {"ostore_observe", 2, sql_observe},
        {"ostore_watermark_after", 1, sql_watermark_after},
    };
    for (int index = 0; index < (int)(sizeof(functions) / sizeof(functions[0])); index++) {
        tracking->references++;
        // On failure SQLite calls the destructor itself, which drops the reference just taken.
        int code = sqlite3_create_function_v2(db, functions[index].name, functions[index].arguments, SQLITE_UTF8,
                                              tracking, functions[index].body, 0, 0, release_reference);
        if (code != SQLITE_OK) return code;
    }
    return SQLITE_OK;
}
