import Foundation
import SyncProtocol
import TestSupport
import Testing

/// Every tool and each of its commands answers `--version` with the release and the protocol
/// versions it speaks, and does nothing else.
@Suite struct VersionOptionTests {
    @Test(arguments: [
        ("ostore", [] as [String]), ("ostore", ["status"]), ("ostore", ["log", "--db", "/nonexistent/x.sqlite"]),
        ("ostore-server", []), ("ostore-server", ["serve"]), ("ostore-server", ["dataset", "list"]),
        ("reminders", []), ("reminders", ["lists", "--db", "/nonexistent/x.sqlite"]),
    ])
    func versionIsTheReleaseAndTheProtocolVersions(tool: String, command: [String]) throws {
        let result = try run(try builtProduct(tool).path, command + ["--version"])
        let output = String(decoding: result.output, as: UTF8.self)
        #expect(result.status == 0, "\(String(decoding: result.error, as: UTF8.self))")
        #expect(output.hasPrefix(OfflineStoreRelease.versionLine(tool: tool)))
        #expect(output.hasPrefix("\(tool) \(OfflineStoreRelease.version) (sync protocol "))
        for version in ProtocolVersion.supported { #expect(output.contains("\(version)")) }
        // The command did not run: its missing database was not even looked for.
        #expect(output.split(separator: "\n").count == 1 && result.error.isEmpty)
    }
}
