import Foundation

/// Runs commands through `posix_spawn` and `waitpid` rather than Foundation's `Process`, for
/// commands that leave something running (`pg_ctl start`, the cluster's watchdog).
///
/// Two reasons. Foundation learns that a `Process` ended when every holder of the socket it gave
/// that child is gone, so `waitUntilExit()` on `pg_ctl start` waits for the server it started.
/// And the spawned command gets none of this process's descriptors but its standard input, output
/// and error (`posix_spawn_file_actions_addclosefrom_np`): without that, a long-lived server or
/// watchdog started while another test was launching an `ostore-server` inherited that launch's
/// socket, and the test waiting for that `ostore-server` to exit waited for the PostgreSQL
/// cluster to stop, which is never, since the cluster stops after the test process ends.
///
/// See <https://man7.org/linux/man-pages/man3/posix_spawn.3.html>.
public enum SpawnedCommand {
    /// Runs `arguments` (the first is the executable's path) to its end with standard input from
    /// `/dev/null`; its standard output and error together. Throws ``CommandFailure`` on a
    /// non-zero exit.
    @discardableResult
    public static func runToEnd(_ arguments: [String]) throws -> String {
        let output = NSTemporaryDirectory() + "ostore-spawned-command-\(UUID().uuidString).log"
        defer { try? FileManager.default.removeItem(atPath: output) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        try closeInheritedDescriptors(&actions)
        var pointers = arguments.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        var pid: pid_t = 0
        var status = posix_spawn(&pid, arguments[0], &actions, nil, &pointers, environ)
        if status == 0 {
            var exitStatus: Int32 = 0
            while waitpid(pid, &exitStatus, 0) < 0 && errno == EINTR {}
            // WIFEXITED and WEXITSTATUS are macros Swift does not import.
            status = (exitStatus & 0x7f) == 0 ? (exitStatus >> 8) & 0xff : 128 + (exitStatus & 0x7f)
        }
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw CommandFailure(command: arguments.joined(separator: " "), status: status, error: text)
        }
        return text
    }

    /// Adds "close every descriptor from 3 up" to `actions`. glibc (2.34 and later) has it as
    /// `posix_spawn_file_actions_addclosefrom_np`, which its headers declare only for `_GNU_SOURCE`
    /// builds, so Swift's Glibc module does not import it; it is looked up at run time instead.
    /// Closing descriptors one by one from a listing would leave a window for one opened meanwhile.
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) throws {
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        else {
            throw CommandFailure(
                command: "posix_spawn_file_actions_addclosefrom_np", status: -1,
                error: "this C library lacks it (glibc 2.34 or later has it)")
        }
        let addCloseFrom = unsafeBitCast(symbol, to: AddCloseFrom.self)
        let status = addCloseFrom(&actions, 3)
        guard status == 0 else {
            throw CommandFailure(command: "posix_spawn_file_actions_addclosefrom_np", status: status, error: "")
        }
    }
}
