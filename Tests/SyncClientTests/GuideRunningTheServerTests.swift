import Foundation
import OfflineStore
import SyncClient
import SyncServer
import TestSupport
import Testing

/// docs/running-the-server.md, its shell blocks run as the guide shows them: the data directory
/// and backup paths moved into the test's directory, the server on 127.0.0.1 and a free port
/// with a certificate `openssl` made, `sync.example.com:8443` pointed at it.
@Suite struct GuideRunningTheServerTests {
    let guide = "docs/running-the-server.md"

    /// The shell block of the guide that contains `marker`.
    func block(containing marker: String) throws -> String {
        try #require(try DocumentedCode.codeBlocks(ofMarkdown: guide, language: "sh").first { $0.contains(marker) })
    }

    /// The text block of the guide that follows the shell block containing `marker`.
    func output(after marker: String) throws -> String {
        let text = try DocumentedCode.text(guide)
        let start = try #require(text.range(of: marker))
        let fence = try #require(text.range(of: "```text\n", range: start.upperBound..<text.endIndex))
        let end = try #require(text.range(of: "```\n", range: fence.upperBound..<text.endIndex))
        return String(text[fence.upperBound..<end.lowerBound])
    }

    /// Runs a block with bash in `directory`, the package's built tools first on PATH.
    func shell(
        _ script: String, in directory: TemporaryDirectory, replacing paths: [String: String] = [:], caFile: String = ""
    )
        throws -> (status: Int32, output: String, error: String)
    {
        var script = script
        for (original, replacement) in paths { script = script.replacingOccurrences(of: original, with: replacement) }
        let tools = try builtProduct("ostore-server").deletingLastPathComponent().path
        let result = try run(
            "/bin/bash",
            [
                "-c", "set -e; cd \"$0\"; export PATH=\"$1:$PATH\" CURL_CA_BUNDLE=\"$2\"; " + script,
                directory.url.path, tools, caFile,
            ])
        return (
            result.status, String(decoding: result.output, as: UTF8.self), String(decoding: result.error, as: UTF8.self)
        )
    }

    @Test func theGuideRunsAsWritten() throws {
        let directory = try TemporaryDirectory()
        let data = directory.path("data")
        let backups = directory.path("backups")
        try FileManager.default.createDirectory(atPath: backups, withIntermediateDirectories: true)
        let paths = ["/var/lib/ostore": data, "/var/backups": backups]

        // Datasets and tokens.
        let setup = try shell(try block(containing: "dataset create"), in: directory, replacing: paths)
        #expect(setup.status == 0, "\(setup.error)")
        let lines = setup.output.split(separator: "\n")
        #expect(lines.first == "created dataset notes")
        #expect(lines.filter { $0.hasSuffix("\tnotes\tread-write") }.count == 1)
        #expect(lines.filter { $0.hasSuffix("\tnotes\tread-only") }.count == 1)
        #expect(lines.last == "notes\tschema -\t0 changes")
        let token = try String(contentsOfFile: directory.path("notes.token"), encoding: .utf8)
            .trimmingCharacters(in: .newlines)
        #expect(!token.isEmpty && !setup.output.contains(token))

        // serve, as shown, but on loopback and a free port.
        let (certificate, key) = try makeSelfSignedCertificate(in: directory, name: "server")
        var arguments = try block(containing: "ostore-server serve").split(whereSeparator: \.isWhitespace).map(
            String.init)
        #expect(Array(arguments.prefix(2)) == ["ostore-server", "serve"])
        arguments.removeFirst(2)
        let port = try #require(arguments.firstIndex(of: "--port"))
        arguments.removeSubrange(port...(port + 1))
        let replacements = ["0.0.0.0": "127.0.0.1", "/etc/ostore/cert.pem": certificate, "/etc/ostore/key.pem": key]
        arguments = arguments.map { replacements[$0] ?? $0 }
        let server = try LiveServer(dataDirectory: URL(fileURLWithPath: data), arguments: arguments)
        #expect(server.scheme == "https")
        let address = ["https://sync.example.com:8443": server.baseURL.absoluteString]

        // Health and metrics, before anything was pushed.
        let probe = try shell(try block(containing: "/healthz"), in: directory, replacing: address, caFile: certificate)
        #expect(probe.status == 0, "\(probe.error)")
        #expect(probe.output == (try output(after: "/healthz")))

        // A device pushes a note, then the data directory is backed up while the server runs.
        let db = try Database(path: directory.path("phone.sqlite"))
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: NotesPlan.self))
        try Note(title: "Buy milk").insert(db)
        let engine = try makeEngine(db: db, log: log, server: server.baseURL, token: token, caFile: certificate)
        #expect(try engine.sync().pushed == 1)
        let backup = try shell(try block(containing: ".backup"), in: directory, replacing: paths)
        #expect(backup.status == 0, "\(backup.error)")

        // The device's sync made the first cursor key; a rotation adds the second.
        let rotation = try shell(try block(containing: "cursor-keys rotate"), in: directory, replacing: paths)
        #expect(rotation.status == 0, "\(rotation.error)")
        #expect(rotation.output == (try output(after: "cursor-keys rotate")))

        // The operator lets the dataset move to major 2 (after the backup, which keeps no allowance).
        let allowance = try shell(try block(containing: "allow-major"), in: directory, replacing: paths)
        #expect(allowance.status == 0, "\(allowance.error)")
        #expect(allowance.output == (try output(after: "dataset allow-major --dataset notes 2 --data")))

        // SIGTERM: requests finish, exit status 0; the log has one JSON line per request, no token.
        #expect(server.stop() == 0)
        let logText = try String(contentsOf: server.logFile, encoding: .utf8)
        #expect(!logText.contains(token))
        let entries = try logText.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String])
        }
        let shown = try #require(
            try JSONSerialization.jsonObject(with: Data(try output(after: "one JSON object per line").utf8))
                as? [String: String])
        let push = try #require(entries.first { $0["path"] == "/v1/datasets/notes/push" })
        #expect(Set(push.keys) == Set(shown.keys))
        #expect(push["status"] == "200" && push["method"] == "POST")
        #expect(entries.last == ["event": "stopped", "drained": "true"])

        // Restore the backup into a fresh data directory: the pushed note is there.
        let restored = directory.path("restored")
        try FileManager.default.createDirectory(atPath: restored, withIntermediateDirectories: true)
        let restore = try shell(
            try block(containing: "ostore-server restore"), in: directory,
            replacing: ["/var/lib/ostore": restored, "/var/backups": backups])
        #expect(restore.status == 0, "\(restore.error)")
        let list = try shell("ostore-server dataset list --data \(restored)", in: directory)
        #expect(list.output == "notes\tschema 1.1.0\t1 changes\n")
    }
}
