import Dispatch
import Foundation

/// An executable product of this package (`reminders`, `ostore`), from the build products
/// directory the test bundle runs in (`swift build --build-tests` builds every product).
public func builtProduct(_ name: String, filePath: String = #filePath) throws -> URL {
    var directories: [URL] = []
    if let executable = Bundle.main.executableURL {
        var directory = executable.deletingLastPathComponent()
        // From inside a `.xctest` bundle directory, up to the build products folder.
        while ["xctest"].contains(directory.pathExtension)
            || ["MacOS", "Contents"].contains(directory.lastPathComponent)
        {
            directory.deleteLastPathComponent()
        }
        directories.append(directory)
    }
    let packageRoot = URL(fileURLWithPath: filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    directories.append(packageRoot.appendingPathComponent(".build/debug"))
    for directory in directories {
        let candidate = directory.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
    }
    throw MissingProduct(name: name, searched: directories.map(\.path))
}

public struct MissingProduct: Error, CustomStringConvertible {
    public let name: String
    public let searched: [String]
    public var description: String {
        "the \(name) executable is not built (looked in \(searched.joined(separator: ", "))); run `swift build --build-tests` first"
    }
}

/// Runs a command to completion, feeding `input` to its standard input; its output and status.
/// `environment` is added to this process's. The process is killed after `timeout`.
public func run(
    _ executable: String, _ arguments: [String], input: Data = Data(), environment: [String: String] = [:],
    timeout: Duration = .seconds(20)
) throws -> (status: Int32, output: Data, error: Data) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    let stdin = Pipe()
    let stdout = Pipe()
    let stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    let output = Locked(Data())
    let errorOutput = Locked(Data())
    let readers = DispatchGroup()
    for (pipe, sink) in [(stdout, output), (stderr, errorOutput)] {
        DispatchQueue.global().async(group: readers) {
            sink.value = pipe.fileHandleForReading.readDataToEndOfFile()
        }
    }
    try stdin.fileHandleForWriting.write(contentsOf: input)
    try stdin.fileHandleForWriting.close()
    let finished = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        process.waitUntilExit()
        finished.signal()
    }
    let seconds = Double(timeout.components.seconds)
    if finished.wait(timeout: .now() + seconds) == .timedOut {
        process.terminate()
        finished.wait()
    }
    readers.wait()
    return (process.terminationStatus, output.value, errorOutput.value)
}

/// How many threads of this process the OS knows by `name` (`/proc/self/task/*/comm`, where Linux
/// keeps 15 bytes of a name).
public func threadCount(named name: String) -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { task in
        (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) == name
    }.count
}
