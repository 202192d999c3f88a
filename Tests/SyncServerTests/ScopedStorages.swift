import Foundation
import TestSupport

@testable import SyncServer

/// A storage that serves scope rules, of either backend, in a test's own directory or database.
enum ScopedStorages {
    static func open(_ backend: StorageBackend, in directory: TemporaryDirectory) throws -> any ScopedStorage {
        switch backend {
        case .sqlite: try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")))
        case .postgres: try PostgresSyncStorage(url: try PostgresCluster.shared().createDatabase(), connections: 4)
        }
    }
}
