import CReferenceBench
import OfflineStore

/// Opens the C reference's database at `path` (`ref_open`) with the page cache our connections get
/// by default (``Configuration/pageCacheKiB``), so that both sides of a ratio keep as much of a
/// file in memory: with SQLite's default cache the reference re-read index pages our side kept.
func openReferenceDatabase(_ path: String, _ database: inout OpaquePointer?) -> Int32 {
    ref_open(path, Int64(Configuration().pageCacheKiB), &database)
}
