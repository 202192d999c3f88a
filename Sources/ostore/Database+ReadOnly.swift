import CommandLineTool
import Foundation
import OfflineStore

extension Database {
    /// Opens an existing database for reading only; a missing file is an error, not a new database.
    static func openReadOnly(_ path: String) throws -> Database {
        guard FileManager.default.fileExists(atPath: path) else { throw UsageError("no such file") }
        var configuration = Configuration()
        configuration.readonly = true
        return try Database(path: path, configuration: configuration)
    }
}
