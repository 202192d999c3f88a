import Foundation
import TestSupport
import Testing

@Suite struct SpawnedCommandTests {
    /// Regression: the PostgreSQL cluster's server and watchdog, started through `SpawnedCommand`,
    /// inherited every descriptor the test process had open at that moment, among them the socket
    /// Foundation watches to learn that an `ostore-server` child another test was launching had
    /// ended; that test then waited for the cluster to stop, which is after the test process ends.
    @Test func aSpawnedCommandInheritsNoDescriptorButItsStandardOnes() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { for end in ends { close(end) } }
        var information = stat()
        try #require(fstat(ends[1], &information) == 0)
        let ourPipe = "pipe:[\(information.st_ino)]"

        let links = try SpawnedCommand.runToEnd([
            "/bin/sh", "-c", "for descriptor in /proc/$$/fd/*; do readlink \"$descriptor\" || true; done",
        ]).split(whereSeparator: \.isNewline).map(String.init)

        #expect(!links.isEmpty, "the shell listed no descriptor at all")
        #expect(!links.contains(ourPipe), "the spawned shell holds the test process's pipe: \(links)")
    }
}
