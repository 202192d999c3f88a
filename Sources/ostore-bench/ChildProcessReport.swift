import Foundation

/// Runs this executable again as a child process (a hidden subcommand) and decodes the JSON report
/// it prints: the benchmarks that measure a process's own memory or CPU take it in a child, so
/// nothing the parent did counts.
enum ChildProcessReport {
    /// `arguments` start with the subcommand; `wrapper` (e.g. `valgrind --tool=callgrind`) runs the
    /// child under another program. `what` names the child in an error.
    static func run<Report: Decodable>(
        _ arguments: [String], environment: [String: String]? = nil, wrapper: String? = nil, what: String,
        as: Report.Type = Report.self
    ) throws -> Report {
        let process = Process()
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        if let wrapper, !wrapper.isEmpty {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = wrapper.split(separator: " ").map(String.init) + [executable] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        }
        if let environment { process.environment = environment }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchmarkFailure(description: "\(what) exited with status \(process.terminationStatus)")
        }
        return try JSONDecoder().decode(Report.self, from: data)
    }
}
