import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A thread made for one piece of work and never joined (POSIX `pthread_create`, detached), which
/// says whether it could be made: Foundation's `Thread.start()` does not, and work whose thread
/// was never made would be waited for forever.
/// See <https://man7.org/linux/man-pages/man3/pthread_create.3.html>.
///
/// ```swift
/// if !DetachedThread.start(named: "ostore-request", { fetch() }) { DispatchQueue.global().async { fetch() } }
/// ```
enum DetachedThread {
    /// Runs `work` on a new thread named `name` (Linux keeps the first 15 bytes); false, and
    /// `work` not run, when the system made no thread (`EAGAIN`: too many threads or processes).
    static func start(named name: String, _ work: @escaping @Sendable () -> Void) -> Bool {
        var attributes = pthread_attr_t()
        guard pthread_attr_init(&attributes) == 0 else { return false }
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        let box = Unmanaged.passRetained(Work(name: String(name.utf8.prefix(15)) ?? "", work)).toOpaque()
        #if canImport(Glibc)
            var thread = pthread_t()
        #else
            var thread: pthread_t?
        #endif
        guard pthread_create(&thread, &attributes, runWork, box) == 0 else {
            Unmanaged<Work>.fromOpaque(box).release()
            return false
        }
        return true
    }

    /// The work and the name its thread takes, handed to the thread through `pthread_create`'s
    /// argument.
    fileprivate final class Work: Sendable {
        let name: String
        let run: @Sendable () -> Void

        init(name: String, _ run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }
    }
}

/// The threads' start routine: names the thread, runs the work, releases it.
private func runWork(_ argument: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let argument else { return nil }
    let work = Unmanaged<DetachedThread.Work>.fromOpaque(argument).takeRetainedValue()
    // Foundation names the current thread (`pthread_setname_np`, which Glibc's module leaves out).
    Thread.current.name = work.name
    work.run()
    return nil
}
