import Foundation
import TestSupport
import Testing

/// `Protocol/conformance/fingerprint.py`, the implementation of section 5.1's canonical text
/// written from the spec in Python, agrees with every vector (as the Swift one does,
/// ``SchemaDefinitionTests``), and tells a vector it disagrees with.
@Suite("fingerprint.py", .enabled(if: FingerprintScript.python != nil, "python3 is not installed"))
struct FingerprintScriptTests {
    @Test func itPassesEveryVector() throws {
        let result = try FingerprintScript.run([SchemaVector.folder.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.hasSuffix("\(SchemaVector.all.count) passed, 0 failed\n"), "\(result.output)")
    }

    @Test func itFailsAVectorWhoseDigestIsWrong() throws {
        let directory = try TemporaryDirectory()
        let vector = SchemaVector.folder.appendingPathComponent("reminders-1.1.0.json")
        var text = try String(contentsOf: vector, encoding: .utf8)
        let digest = try #require(SchemaVector.all.first { $0.name == "reminders-1.1.0" }?.fingerprint)
        text = text.replacingOccurrences(of: digest, with: String(repeating: "0", count: 64))
        try text.write(to: directory.url.appendingPathComponent("tampered.json"), atomically: true, encoding: .utf8)
        let result = try FingerprintScript.run([directory.url.path])
        #expect(result.status == 1)
        #expect(result.output.hasSuffix("0 passed, 1 failed\n"), "\(result.output)")
    }
}

enum FingerprintScript {
    static let python: String? = ["/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let script = ProtocolFiles.folder.appendingPathComponent("conformance/fingerprint.py").path
        let result = try TestSupport.run(python!, [script] + arguments)
        return (result.status, String(decoding: result.output, as: UTF8.self))
    }
}
