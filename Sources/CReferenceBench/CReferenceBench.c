#include "CReferenceBench.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ref_database {
    sqlite3 *handle;
};

typedef struct {
    int64_t id;
    char *title;
    int done;
    double updated_at;
} ref_reminder;

int ref_open(const char *path, int64_t page_cache_kib, ref_database **out) {
    ref_database *db = calloc(1, sizeof(ref_database));
    if (!db) return SQLITE_NOMEM;
    int rc = sqlite3_open_v2(path, &db->handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db->handle, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", NULL, NULL, NULL);
    if (rc == SQLITE_OK) {
        char *pragma = sqlite3_mprintf("PRAGMA cache_size = %lld", (long long)-page_cache_kib);
        rc = pragma ? sqlite3_exec(db->handle, pragma, NULL, NULL, NULL) : SQLITE_NOMEM;
        sqlite3_free(pragma);
    }
    if (rc != SQLITE_OK) {
        sqlite3_close_v2(db->handle);
        free(db);
        return rc;
    }
    *out = db;
    return SQLITE_OK;
}

void ref_close(ref_database *db) {
    if (!db) return;
    sqlite3_close_v2(db->handle);
    free(db);
}

int ref_exec(ref_database *db, const char *sql) {
    return sqlite3_exec(db->handle, sql, NULL, NULL, NULL);
}

char **ref_make_titles(int64_t count) {
    char **titles = malloc(sizeof(char *) * (size_t)count);
    for (int64_t i = 0; i < count; i++) {
        char buffer[32];
        snprintf(buffer, sizeof buffer, "Reminder #%lld", (long long)i);
        titles[i] = strdup(buffer);
    }
    return titles;
}

void ref_free_titles(char **titles, int64_t count) {
    for (int64_t i = 0; i < count; i++) free(titles[i]);
    free(titles);
}

/// Runs `sql` once per reminder i in one transaction, binding the id i+1 to `id_parameter` and
/// the title `titles[i]`, done (i+done_offset)%2 and updatedAt time_base+i to the other three
/// parameters in order.
static int write_reminders(ref_database *db, const char *sql, int id_parameter, int64_t count, char **titles,
                           int64_t done_offset, double time_base) {
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_exec(db->handle, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_prepare_v3(db->handle, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, NULL);
    int first = id_parameter == 1 ? 2 : 1;
    for (int64_t i = 0; rc == SQLITE_OK && i < count; i++) {
        sqlite3_bind_int64(stmt, id_parameter, i + 1);
        sqlite3_bind_text(stmt, first, titles[i], (int)strlen(titles[i]), SQLITE_TRANSIENT);
        sqlite3_bind_int64(stmt, first + 1, (i + done_offset) % 2);
        sqlite3_bind_double(stmt, first + 2, time_base + (double)i);
        rc = sqlite3_step(stmt);
        rc = (rc == SQLITE_DONE) ? SQLITE_OK : rc;
        sqlite3_reset(stmt);
        sqlite3_clear_bindings(stmt);
    }
    sqlite3_finalize(stmt);
    if (rc != SQLITE_OK) {
        sqlite3_exec(db->handle, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    return sqlite3_exec(db->handle, "COMMIT", NULL, NULL, NULL);
}

int ref_insert_reminders(ref_database *db, int64_t count, char **titles) {
    return write_reminders(db, "INSERT INTO reminders (id, title, done, updatedAt) VALUES (?, ?, ?, ?)", 1, count,
                           titles, 0, 1.7e9);
}

int ref_update_reminders(ref_database *db, int64_t count, char **titles) {
    return write_reminders(db, "UPDATE reminders SET title = ?, done = ?, updatedAt = ? WHERE id = ?", 4, count,
                           titles, 1, 1.8e9);
}

int ref_upsert_reminders(ref_database *db, int64_t count, char **titles) {
    return write_reminders(db,
                           "INSERT INTO reminders (id, title, done, updatedAt) VALUES (?, ?, ?, ?) ON CONFLICT (id) "
                           "DO UPDATE SET title = excluded.title, done = excluded.done, updatedAt = excluded.updatedAt",
                           1, count, titles, 1, 1.8e9);
}

int ref_fetch_all_reminders(ref_database *db, int64_t *out_count, int64_t *out_checksum) {
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v3(db->handle, "SELECT id, title, done, updatedAt FROM reminders", -1, 0, &stmt, NULL);
    if (rc != SQLITE_OK) return rc;
    size_t capacity = 1024, count = 0;
    ref_reminder *items = malloc(sizeof(ref_reminder) * capacity);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        if (count == capacity) {
            capacity *= 2;
            items = realloc(items, sizeof(ref_reminder) * capacity);
        }
        ref_reminder *item = &items[count++];
        item->id = sqlite3_column_int64(stmt, 0);
        const unsigned char *title = sqlite3_column_text(stmt, 1);
        int length = sqlite3_column_bytes(stmt, 1);
        item->title = malloc((size_t)length + 1);
        memcpy(item->title, title, (size_t)length + 1);
        item->done = sqlite3_column_int(stmt, 2);
        item->updated_at = sqlite3_column_double(stmt, 3);
    }
    sqlite3_finalize(stmt);
    int64_t checksum = 0;
    for (size_t i = 0; i < count; i++) {
        checksum += items[i].id + (int64_t)strlen(items[i].title) + items[i].done + (int64_t)items[i].updated_at;
        free(items[i].title);
    }
    free(items);
    *out_count = (int64_t)count;
    *out_checksum = checksum;
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int ref_scan_reminders(ref_database *db, int64_t *out_count, int64_t *out_checksum) {
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v3(db->handle, "SELECT id, title, done, updatedAt FROM reminders", -1, 0, &stmt, NULL);
    if (rc != SQLITE_OK) return rc;
    int64_t count = 0, checksum = 0;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        checksum += sqlite3_column_int64(stmt, 0);
        const unsigned char *title = sqlite3_column_text(stmt, 1);
        checksum += sqlite3_column_bytes(stmt, 1) + (title ? title[0] : 0);
        checksum += sqlite3_column_int(stmt, 2);
        checksum += (int64_t)sqlite3_column_double(stmt, 3);
        count++;
    }
    sqlite3_finalize(stmt);
    *out_count = count;
    *out_checksum = checksum;
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int ref_open_bare(const char *path, ref_database **out) {
    ref_database *db = calloc(1, sizeof(ref_database));
    if (!db) return SQLITE_NOMEM;
    int rc = sqlite3_open_v2(path, &db->handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    sqlite3_stmt *stmt = NULL;
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db->handle, "SELECT count(*) FROM sqlite_schema", -1, &stmt, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(stmt) == SQLITE_ROW ? SQLITE_OK : sqlite3_errcode(db->handle);
    sqlite3_finalize(stmt);
    if (rc != SQLITE_OK) {
        sqlite3_close_v2(db->handle);
        free(db);
        return rc;
    }
    *out = db;
    return SQLITE_OK;
}

/// Runs SQL built with sqlite3_mprintf and frees it.
static int exec_formatted(sqlite3 *handle, char *sql) {
    if (!sql) return SQLITE_NOMEM;
    int rc = sqlite3_exec(handle, sql, NULL, NULL, NULL);
    sqlite3_free(sql);
    return rc;
}

int ref_rebuild_table(ref_database *db, const char *table, const char *new_table, const char *create_sql,
                      const char *copy_sql, const char *index_sql) {
    sqlite3 *handle = db->handle;
    // SQLite ignores this pragma inside a transaction, so it goes before BEGIN.
    int rc = sqlite3_exec(handle, "PRAGMA foreign_keys = OFF", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(handle, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_exec(handle, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
        return rc;
    }
    rc = sqlite3_exec(handle, create_sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(handle, copy_sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = exec_formatted(handle, sqlite3_mprintf("DROP TABLE \"%w\"", table));
    if (rc == SQLITE_OK)
        rc = exec_formatted(handle, sqlite3_mprintf("ALTER TABLE \"%w\" RENAME TO \"%w\"", new_table, table));
    if (rc == SQLITE_OK && index_sql) rc = sqlite3_exec(handle, index_sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_stmt *check = NULL;
        char *sql = sqlite3_mprintf("PRAGMA foreign_key_check(\"%w\")", table);
        rc = sql ? sqlite3_prepare_v2(handle, sql, -1, &check, NULL) : SQLITE_NOMEM;
        sqlite3_free(sql);
        if (rc == SQLITE_OK) {
            int step = sqlite3_step(check);
            rc = step == SQLITE_DONE ? SQLITE_OK : step == SQLITE_ROW ? SQLITE_CONSTRAINT_FOREIGNKEY : step;
        }
        sqlite3_finalize(check);
    }
    if (rc == SQLITE_OK) rc = sqlite3_exec(handle, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) sqlite3_exec(handle, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_exec(handle, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
    return rc;
}

/// Steps `stmt` once for each i < `count` inside one transaction, after `bind` has bound row i.
static int run_for_each_row(ref_database *db, const char *sql, int64_t count,
                            void (*bind)(sqlite3_stmt *, int64_t, const void *), const void *context) {
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_exec(db->handle, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_prepare_v3(db->handle, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, NULL);
    for (int64_t i = 0; rc == SQLITE_OK && i < count; i++) {
        bind(stmt, i, context);
        rc = sqlite3_step(stmt);
        rc = (rc == SQLITE_DONE) ? SQLITE_OK : rc;
        sqlite3_reset(stmt);
        sqlite3_clear_bindings(stmt);
    }
    sqlite3_finalize(stmt);
    if (rc != SQLITE_OK) {
        sqlite3_exec(db->handle, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    return sqlite3_exec(db->handle, "COMMIT", NULL, NULL, NULL);
}

typedef struct {
    const char *const *ids;
    const char *const *titles;
} todo_strings;

static void bind_todo_insert(sqlite3_stmt *stmt, int64_t i, const void *context) {
    const todo_strings *strings = context;
    sqlite3_bind_text(stmt, 1, strings->ids[i], (int)strlen(strings->ids[i]), SQLITE_TRANSIENT);
    sqlite3_bind_text(stmt, 2, strings->titles[i], (int)strlen(strings->titles[i]), SQLITE_TRANSIENT);
    sqlite3_bind_int64(stmt, 3, i % 2);
    sqlite3_bind_double(stmt, 4, 1.7e9 + (double)i);
}

static void bind_todo_update(sqlite3_stmt *stmt, int64_t i, const void *context) {
    const todo_strings *strings = context;
    sqlite3_bind_double(stmt, 1, 1.8e9 + (double)i);
    sqlite3_bind_text(stmt, 2, strings->ids[i], (int)strlen(strings->ids[i]), SQLITE_TRANSIENT);
}

static void bind_todo_key(sqlite3_stmt *stmt, int64_t i, const void *context) {
    const todo_strings *strings = context;
    sqlite3_bind_text(stmt, 1, strings->ids[i], (int)strlen(strings->ids[i]), SQLITE_TRANSIENT);
}

int ref_insert_todos(ref_database *db, int64_t count, const char *const *ids, const char *const *titles) {
    todo_strings strings = {ids, titles};
    return run_for_each_row(db, "INSERT INTO todos (id, title, done, updatedAt) VALUES (?, ?, ?, ?)", count,
                            bind_todo_insert, &strings);
}

int ref_insert_todos_each_committed(ref_database *db, int64_t count, const char *const *ids,
                                    const char *const *titles) {
    todo_strings strings = {ids, titles};
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v3(db->handle, "INSERT INTO todos (id, title, done, updatedAt) VALUES (?, ?, ?, ?)", -1,
                                SQLITE_PREPARE_PERSISTENT, &stmt, NULL);
    for (int64_t i = 0; rc == SQLITE_OK && i < count; i++) {
        rc = sqlite3_exec(db->handle, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (rc != SQLITE_OK) break;
        bind_todo_insert(stmt, i, &strings);
        rc = sqlite3_step(stmt);
        rc = (rc == SQLITE_DONE) ? SQLITE_OK : rc;
        sqlite3_reset(stmt);
        sqlite3_clear_bindings(stmt);
        rc = sqlite3_exec(db->handle, rc == SQLITE_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK ? rc
                                                                                                          : SQLITE_ERROR;
    }
    sqlite3_finalize(stmt);
    return rc;
}

int ref_update_todos(ref_database *db, int64_t count, const char *const *ids) {
    todo_strings strings = {ids, NULL};
    return run_for_each_row(db, "UPDATE todos SET updatedAt = ? WHERE id = ?", count, bind_todo_update, &strings);
}

int ref_delete_todos(ref_database *db, int64_t count, const char *const *ids) {
    todo_strings strings = {ids, NULL};
    return run_for_each_row(db, "DELETE FROM todos WHERE id = ?", count, bind_todo_key, &strings);
}

/// One log entry copied out of a page of the pending-change query.
typedef struct {
    int64_t seq;
    char *table;
    char *key;
    char *column;
    int64_t clock;
} ref_log_entry;

static char *copy_text(sqlite3_stmt *stmt, int column) {
    const unsigned char *text = sqlite3_column_text(stmt, column);
    int length = sqlite3_column_bytes(stmt, column);
    char *copy = malloc((size_t)length + 1);
    if (copy) memcpy(copy, text ? (const char *)text : "", (size_t)length + 1);
    return copy;
}

/// Reads the todo of `entry` by key and copies the columns a push sends; adds them to `checksum`.
static int read_logged_todo(sqlite3_stmt *row, const ref_log_entry *entry, int64_t *checksum) {
    sqlite3_bind_text(row, 1, entry->key, (int)strlen(entry->key), SQLITE_TRANSIENT);
    int rc = sqlite3_step(row);
    if (rc == SQLITE_ROW) {
        int done = 0;
        double updated_at = 0;
        int every_column = entry->column[0] == '\0';
        for (int column = 0; column < sqlite3_column_count(row); column++) {
            const char *name = sqlite3_column_name(row, column);
            if (!every_column && strcmp(name, entry->column) != 0) continue;
            if (strcmp(name, "title") == 0 || strcmp(name, "id") == 0) {
                char *text = copy_text(row, column);
                if (!text) return SQLITE_NOMEM;
                *checksum += (int64_t)strlen(text);
                free(text);
            } else if (strcmp(name, "done") == 0) {
                done = sqlite3_column_int(row, column);
            } else if (strcmp(name, "updatedAt") == 0) {
                updated_at = sqlite3_column_double(row, column);
            }
        }
        *checksum += done + (int64_t)updated_at;
        rc = SQLITE_DONE;
    }
    sqlite3_reset(row);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int ref_read_pending_todos(ref_database *db, int64_t batch, int64_t *out_count, int64_t *out_checksum) {
    sqlite3_stmt *page = NULL, *row = NULL, *pushed = NULL;
    int rc = sqlite3_prepare_v3(db->handle,
                                "SELECT c.seq, t.name, c.pk, c.columnName, c.clock FROM ostore_meta.ostore_changes AS c "
                                "JOIN ostore_meta.ostore_tables AS t ON t.id = c.tableID "
                                "WHERE c.seq > ? ORDER BY c.seq LIMIT ?",
                                -1, SQLITE_PREPARE_PERSISTENT, &page, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(db->handle, "SELECT * FROM main.todos WHERE id = ?", -1, SQLITE_PREPARE_PERSISTENT,
                                &row, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db->handle, "SELECT pushedSeq FROM ostore_meta.ostore_store WHERE id = 1", -1, &pushed,
                                NULL);
    int64_t after = 0, count = 0, checksum = 0;
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(pushed);
        if (rc == SQLITE_ROW) after = sqlite3_column_int64(pushed, 0);
        rc = (rc == SQLITE_ROW || rc == SQLITE_DONE) ? SQLITE_OK : rc;
    }
    ref_log_entry *entries = rc == SQLITE_OK ? calloc((size_t)batch, sizeof(ref_log_entry)) : NULL;
    if (rc == SQLITE_OK && !entries) rc = SQLITE_NOMEM;
    while (rc == SQLITE_OK) {
        sqlite3_bind_int64(page, 1, after);
        sqlite3_bind_int64(page, 2, batch);
        int64_t fetched = 0;
        while (fetched < batch && (rc = sqlite3_step(page)) == SQLITE_ROW) {
            ref_log_entry *entry = &entries[fetched++];
            entry->seq = sqlite3_column_int64(page, 0);
            entry->table = copy_text(page, 1);
            entry->key = copy_text(page, 2);
            entry->column = copy_text(page, 3);
            entry->clock = sqlite3_column_int64(page, 4);
        }
        rc = (rc == SQLITE_ROW || rc == SQLITE_DONE) ? SQLITE_OK : rc;
        sqlite3_reset(page);
        for (int64_t i = 0; i < fetched; i++) {
            ref_log_entry *entry = &entries[i];
            if (rc == SQLITE_OK && (!entry->table || !entry->key || !entry->column)) rc = SQLITE_NOMEM;
            // A deleted row has nothing to read; only its key is pushed.
            if (rc == SQLITE_OK && strcmp(entry->column, "-") != 0) rc = read_logged_todo(row, entry, &checksum);
            checksum += entry->clock & 0xFF;
            free(entry->table);
            free(entry->key);
            free(entry->column);
        }
        count += fetched;
        if (fetched == 0) break;
        after = entries[fetched - 1].seq;
    }
    free(entries);
    sqlite3_finalize(page);
    sqlite3_finalize(row);
    sqlite3_finalize(pushed);
    *out_count = count;
    *out_checksum = checksum;
    return rc;
}
