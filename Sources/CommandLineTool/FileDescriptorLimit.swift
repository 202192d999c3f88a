import Foundation

/// The process's limit of open files (`RLIMIT_NOFILE`): each connection takes one, and the soft limit
/// many systems start processes with (1024) is below what a server accepts, or a benchmark opens.
///
/// ```swift
/// guard FileDescriptorLimit.raise(toAtLeast: 4160) else { return .failure }
/// ```
public enum FileDescriptorLimit {
    /// Raises the soft limit to `count` when it is lower (`RLIM_INFINITY` is the largest value, so an
    /// unlimited hard limit allows it); `false` when the hard
    /// limit is lower than `count`.
    public static func raise(toAtLeast count: Int) -> Bool {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return false }
        let wanted = rlim_t(count)
        if limit.rlim_cur >= wanted { return true }
        guard limit.rlim_max >= wanted else { return false }
        limit.rlim_cur = wanted
        return setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0
    }
}
