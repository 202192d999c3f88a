#ifndef OFFLINESTORE_CREFERENCEBENCH_H
#define OFFLINESTORE_CREFERENCEBENCH_H

#include <stdint.h>

// The benchmark's reference: the same workloads as ostore-bench, written
// directly against libsqlite3, so ratios measure our layer's overhead over
// the physical limit. Every function returns an SQLite result code (0 = OK).

typedef struct ref_database ref_database;

/// Opens `path` with the settings our `Configuration` gives a connection by default: WAL,
/// synchronous=NORMAL, foreign_keys=ON, and a page cache of `page_cache_kib` KiB (the caller passes
/// `Configuration().pageCacheKiB`; at SQLite's default of 2,000 KiB the reference re-read a large
/// table's index pages that our connections keep, and ran slower than the same work through them).
int ref_open(const char *path, int64_t page_cache_kib, ref_database **out);
void ref_close(ref_database *db);

/// Runs SQL that returns no rows (set-up between runs; not timed).
int ref_exec(ref_database *db, const char *sql);

/// Inserts `count` reminders (id i+1, title "Reminder #i", done i%2, updatedAt 1.7e9+i)
/// with one prepared statement in one transaction. Titles are formatted before the clock starts.
int ref_insert_reminders(ref_database *db, int64_t count, char **titles);

/// Updates the `count` reminders ref_insert_reminders wrote, each by its id with one prepared
/// statement in one transaction: title `titles[i]`, done (i+1)%2, updatedAt 1.8e9+i.
int ref_update_reminders(ref_database *db, int64_t count, char **titles);

/// The same values written by `INSERT … ON CONFLICT (id) DO UPDATE` of every column but the id.
int ref_upsert_reminders(ref_database *db, int64_t count, char **titles);

/// Formats the titles the insert workloads use (the caller frees with ref_free_titles).
char **ref_make_titles(int64_t count);
void ref_free_titles(char **titles, int64_t count);

/// Fetches every reminder into a heap array of structs (titles copied), then frees it.
/// `out_count` receives the number of rows and `out_checksum` a sum over every field.
int ref_fetch_all_reminders(ref_database *db, int64_t *out_count, int64_t *out_checksum);

/// Steps through every reminder reading each column without keeping it.
int ref_scan_reminders(ref_database *db, int64_t *out_count, int64_t *out_checksum);

/// Opens `path` with nothing but sqlite3_open_v2 (read-write, no pragmas) and runs one trivial
/// query, `SELECT count(*) FROM sqlite_schema`, which makes SQLite read and parse the schema as any
/// first real query must: the floor under opening an up-to-date database.
int ref_open_bare(const char *path, ref_database **out);

/// SQLite's table rebuild (https://www.sqlite.org/lang_altertable.html#otheralter) with the
/// caller's SQL: foreign keys off, BEGIN IMMEDIATE, `create_sql` (the new table, named
/// `new_table`), `copy_sql` (the INSERT ... SELECT), DROP TABLE `table`, ALTER TABLE `new_table`
/// RENAME TO `table`, `index_sql` (one or more statements; may be NULL), PRAGMA
/// foreign_key_check(`table`), COMMIT, foreign keys on. A violation rolls back and returns
/// SQLITE_CONSTRAINT_FOREIGNKEY.
int ref_rebuild_table(ref_database *db, const char *table, const char *new_table, const char *create_sql,
                      const char *copy_sql, const char *index_sql);

// The change-log workloads run on `todos (id TEXT PRIMARY KEY, title, done, updatedAt)`, created by
// the caller with the very statement the store's migrator wrote, in a file with no triggers. Keys
// and titles come from the caller, made before the clock starts, so both sides bind the same bytes.

/// Inserts `count` todos (id ids[i], title titles[i], done i%2, updatedAt 1.7e9+i) with one
/// prepared statement in one transaction.
int ref_insert_todos(ref_database *db, int64_t count, const char *const *ids, const char *const *titles);

/// The same inserts, each in a transaction of its own (`BEGIN IMMEDIATE` … `COMMIT`), as an app
/// that writes one row per user action does.
int ref_insert_todos_each_committed(ref_database *db, int64_t count, const char *const *ids,
                                    const char *const *titles);

/// Sets one column, `updatedAt = 1.8e9+i`, of the todo with key ids[i], for every i < `count`: one
/// prepared UPDATE by key per row, in one transaction.
int ref_update_todos(ref_database *db, int64_t count, const char *const *ids);

/// Deletes the todo with key ids[i], for every i < `count`: one prepared DELETE by key per row, in one
/// transaction.
int ref_delete_todos(ref_database *db, int64_t count, const char *const *ids);

/// What reading the change log's pending changes costs without our layer: with the metadatabase
/// attached as `ostore_meta`, pages through the entries after the pushed sequence, `batch` at a
/// time in sequence order (each page's entries copied out, as a fetch does), then reads each
/// entry's todo by key and copies its columns (every column for an inserted row, the changed one
/// for an update; nothing for a delete), as a push does. Written for the `todos` table alone.
/// `out_count` receives the number of changes read, `out_checksum` a sum over what was copied.
int ref_read_pending_todos(ref_database *db, int64_t batch, int64_t *out_count, int64_t *out_checksum);

// The transport part of the sync benchmark's limit (HTTPTransfer.c).

enum { REF_HTTP_SERVER_FAILED = -1, REF_HTTP_TRANSFER_FAILED = -2, REF_HTTP_NO_MEMORY = -3 };

/// Moves the bytes of a sync over loopback HTTP with nothing else to do: starts a libmicrohttpd
/// server in this process on 127.0.0.1 (an internal polling thread with epoll, as ostore-server's
/// daemon), then POSTs `count` requests over one kept-alive libcurl connection, request i with a
/// body of request_sizes[i] bytes, answered with response_sizes[i] bytes. The server counts and drops
/// what it receives; the client counts what it gets. `out_nanoseconds`: from the first request to the
/// last answer. Returns 0, or a REF_HTTP_* code (also when a byte count does not match).
int ref_http_transfer(int64_t count, const int64_t *request_sizes, const int64_t *response_sizes,
                      int64_t *out_nanoseconds);

// The wire benchmark's reference (JSONScan.c): the least work that still looks at every byte of a
// protocol message, so the ratio says how far decoding and encoding are from one pass over it.

/// Tokenizes the JSON text `bytes[0..<count]` without building anything: finds every string's end
/// (honouring backslash escapes) and counts the structural characters outside strings. Returns the
/// number of strings plus structural characters (so the compiler cannot drop the pass), or -1 when
/// a string is left open.
int64_t ref_json_scan(const uint8_t *bytes, int64_t count);

/// Copies the JSON text `bytes[0..<count]` into a fresh buffer byte by byte, testing each for a
/// control character to escape (`\u00xx`) as a writer's string loop does, then frees it. Returns
/// the bytes written plus one of them (so the copy is not dead).
int64_t ref_json_copy_escaped(const uint8_t *bytes, int64_t count);

#endif
