import Foundation

/// What the migrator is doing, for progress lines: stage boundaries and, for a table rebuild or
/// a batched backfill, rows done of rows total.
public enum MigrationProgress: Sendable, Hashable {
    case stageStarted(stage: String)
    case rows(stage: String, operation: String, done: Int, total: Int)
    case stageFinished(stage: String, duration: Duration)
}
