#ifndef OFFLINESTORE_CHANGE_TRACKING_H
#define OFFLINESTORE_CHANGE_TRACKING_H

// The change log's SQL functions, answered in C (ChangeTracking.c): the tracking probe the
// permanent triggers call, and the functions the TEMP tracking triggers call on every tracked row.
// SQLite's own types are only named here (ChangeTracking.c includes <sqlite3.h>), so importing
// this module gives Swift these functions and nothing else of SQLite; `long long` is SQLite's
// `sqlite3_int64`.

struct sqlite3;
struct sqlite3_value;

/// Makes the built-in `sqlite_compileoption_used()` answer 1 for `sentinel`, a name no SQLite
/// build has (where the built-in answers 0), on this connection; every other name keeps the
/// built-in's answer. The change log's permanent triggers ask it "is change tracking installed on
/// this connection?" in built-in SQL only, so they run in any program that writes the file.
/// `sentinel` is copied. https://www.sqlite.org/c3ref/compileoption_get.html
int change_tracking_add_probe(struct sqlite3 *db, const char *sentinel);

/// The state of the change log's SQL functions on one connection: whether the connection records
/// (`ostore_recording()`), the store's clock (`ostore_clock()`), the keys written for commit
/// observers (`ostore_observe(table, key)`) and the watermark (`ostore_watermark_after(entry)`).
/// Answered in C, so a tracked write does not convert its arguments into Swift values unless
/// someone observes.
///
/// The clock also follows what other processes wrote: when the metadatabase's data version moved
/// since this connection last looked (a commit there, by it or by another connection), the first
/// `ostore_clock()` of the transaction reads the newest clock the files hold (the clock source, a
/// statement kept prepared) and passes it to `now` as the clock's floor; 0 when nothing moved.
///
/// The state is reference counted: one reference per registered function (SQLite drops it when
/// the function is replaced or the connection closes) and one for its creator. It keeps `owner`
/// and calls `release_owner` when the last reference goes.
typedef struct change_tracking change_tracking;

/// A new state holding one reference (the creator's), recording and not observing; NULL when out
/// of memory.
change_tracking *change_tracking_create(void *owner, void (*release_owner)(void *owner),
                                        long long (*now)(void *owner, long long floor),
                                        void (*observe)(void *owner, struct sqlite3_value *table,
                                                        struct sqlite3_value *key));

/// Takes one more reference.
void change_tracking_retain(change_tracking *tracking);

/// Drops one reference; the last one finalizes the statements, frees the state and releases the owner.
void change_tracking_release(change_tracking *tracking);

/// What `ostore_recording()` answers: 1 or 0.
void change_tracking_set_recording(change_tracking *tracking, int recording);

/// Whether `ostore_observe(table, key)` passes the keys to `observe`: 1 or 0.
void change_tracking_set_observing(change_tracking *tracking, int observing);

/// Finalizes the clock's and the watermark's statements, which the connection's close must do
/// first: `sqlite3_close_v2` waits for every statement, and these would otherwise go only with the
/// functions, at the close. The next use prepares them again.
void change_tracking_finalize(change_tracking *tracking);

/// Where the clock's floor comes from: `sql` returns the newest clock the files hold, one integer,
/// and `schema` is the database whose data version tells when to read it again. Copies both.
int change_tracking_set_clock_source(change_tracking *tracking, const char *schema, const char *sql);

/// The statement that writes the watermark (`UPDATE main.ostore_log_watermark SET seq = … WHERE
/// id = 1`, the newest place in the queue computed in SQL); prepared at its first use. Copies `sql`.
int change_tracking_set_watermark_writer(change_tracking *tracking, const char *sql);

/// Registers `ostore_recording()`, `ostore_clock()`, `ostore_observe(table, key)` and
/// `ostore_watermark_after(entry)` on `db`, each holding a reference to `tracking`.
int change_tracking_add_functions(struct sqlite3 *db, change_tracking *tracking);

#endif
