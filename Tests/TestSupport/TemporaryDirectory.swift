import Foundation

/// A unique directory under the system temporary directory, removed with everything in it when released.
///
/// Every test that touches the file system makes its own, so tests running in parallel never share files.
public final class TemporaryDirectory {
    public let url: URL

    public init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("OfflineStoreTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    /// The path of a file (or directory) named `name` inside the directory.
    public func path(_ name: String) -> String {
        url.appendingPathComponent(name).path
    }
}
