import Foundation

/// This process's resident memory, from `/proc/self/status` (which gives kB): `VmRSS` now and
/// `VmHWM`, the peak so far. The benchmarks that report memory take it in a child process of
/// their own, since a peak only ever grows.
enum ProcessMemory {
    static func status() throws -> (resident: Int, peak: Int) {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        func field(_ name: String) -> Int? {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else {
                return nil
            }
            return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }.map {
                $0 * 1024
            }
        }
        guard let resident = field("VmRSS"), let peak = field("VmHWM") else {
            throw BenchmarkFailure(description: "/proc/self/status has no VmRSS or VmHWM")
        }
        return (resident, peak)
    }
}
