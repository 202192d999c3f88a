import Foundation
import SyncProtocol
import Testing

/// The files under `Protocol/vectors/` are the protocol's examples for other implementations, so
/// the Swift types must read each one and write it back byte for byte.
@Suite("Protocol vectors")
struct VectorTests {
    @Test func theVectorFolderHoldsAVectorOfEveryMessageAndEveryErrorCode() throws {
        let names = ProtocolFiles.messageVectorFileNames
        #expect(names.count >= 30)
        for name in names {
            #expect(MessageKind(vectorFileName: name) != nil, "\(name) is not named <message>.<name>.json")
        }
        for kind in MessageKind.allCases {
            #expect(names.contains { $0.hasPrefix(kind.rawValue + ".") }, "no vector of \(kind.rawValue)")
        }
        var codes: Set<ErrorCode> = []
        for name in names where name.hasPrefix("error.") {
            codes.insert(
                try ProtocolJSON.decode(ErrorBody.self, from: ProtocolFiles.data("vectors/\(name)"), limits: .standard)
                    .error.code)
        }
        #expect(
            codes == Set(ErrorCode.allCases),
            "error codes without a vector: \(Set(ErrorCode.allCases).subtracting(codes))")
    }

    /// Vectors are stored as `ProtocolJSON.encode` writes them (plus one newline), so decoding and
    /// re-encoding must give the very same bytes; any field lost, renamed or re-typed shows here.
    @Test(arguments: ProtocolFiles.messageVectorFileNames)
    func vectorReencodesToTheSameBytes(fileName: String) throws {
        let kind = try #require(MessageKind(vectorFileName: fileName))
        let stored = try ProtocolFiles.data("vectors/\(fileName)")
        #expect(stored.last == UInt8(ascii: "\n"))
        let reencoded = try kind.reencode(stored)
        #expect(String(decoding: reencoded, as: UTF8.self) == String(decoding: stored.dropLast(), as: UTF8.self))
    }

    /// A peer need not write canonical JSON: the same message indented and with its members in
    /// another order decodes to the same value.
    @Test(arguments: ProtocolFiles.messageVectorFileNames)
    func vectorDecodesTheSameWhenIndentedAndReordered(fileName: String) throws {
        let kind = try #require(MessageKind(vectorFileName: fileName))
        let stored = try ProtocolFiles.data("vectors/\(fileName)")
        let reordered = try JSONSerialization.data(
            withJSONObject: rebuiltWithUnsortedMembers(try JSONSerialization.jsonObject(with: stored)),
            options: [.prettyPrinted])
        #expect(try kind.decode(reordered) == kind.decode(stored))
    }

    @Test func helloResponseVectorsStateTheStandardLimits() throws {
        for name in ProtocolFiles.messageVectorFileNames where name.hasPrefix("hello-response.") {
            let response = try ProtocolJSON.decode(
                HelloResponse.self, from: ProtocolFiles.data("vectors/\(name)"), limits: .standard)
            #expect(response.limits == .standard, "\(name)")
        }
    }

    @Test func requestCasesLoad() throws {
        let cases = try RequestCase.load()
        #expect(cases.count >= 50)
        #expect(cases.contains { $0.error == nil })
        #expect(Set(cases.map(\.message)).isSubset(of: MessageKind.allCases.map(\.rawValue)))
    }

    /// Each request body of `requests.json` gets exactly the answer the file states, from the same
    /// code a server runs: decoding, then the batch checks of a push.
    @Test(arguments: RequestCase.all)
    func requestCaseGetsItsAnswer(_ request: RequestCase) throws {
        let kind = try #require(MessageKind(rawValue: request.message))
        let error = kind.serverError(for: Data(request.body.utf8), limits: request.effectiveLimits, now: request.now)
        #expect(error?.error.code == request.error, "\(error?.error.message ?? "accepted")")
        #expect(error?.error.changeIndex == request.changeIndex)
    }

    /// The README's examples are the vectors pretty-printed; each example that names its vector
    /// must decode to the same message, so the prose cannot drift from the tested files.
    @Test func readmeExamplesAreTheirVectors() throws {
        let readme = try ProtocolFiles.text("README.md")
        let pattern = try Regex(#"\(vectors/([a-z0-9.-]+\.json)\)[^\n]*\n\n```json\n(.*?)\n```"#).dotMatchesNewlines()
        var checked = 0
        for match in readme.matches(of: pattern) {
            let fileName = String(try #require(match.output[1].substring))
            let example = Data(try #require(match.output[2].substring).utf8)
            let kind = try #require(MessageKind(vectorFileName: fileName), "\(fileName)")
            #expect(try kind.decode(example) == kind.decode(ProtocolFiles.data("vectors/\(fileName)")), "\(fileName)")
            checked += 1
        }
        #expect(checked >= 10)
    }

    /// Every JSON block of the README is strict JSON, so copying an example never teaches a
    /// mistake (a trailing comma, a repeated key).
    @Test func readmeJSONBlocksAreStrictJSON() throws {
        let readme = try ProtocolFiles.text("README.md")
        let blocks = readme.matches(of: try Regex(#"```json\n(.*?)\n```"#).dotMatchesNewlines())
        #expect(blocks.count >= 10)
        for block in blocks {
            let text = String(try #require(block.output[1].substring))
            #expect(throws: Never.self, "\(text.prefix(80))") {
                try StrictJSON.validate(Array(text.utf8), maximumDepth: Limits.standard.maxNestingDepth)
            }
        }
    }

    private func rebuiltWithUnsortedMembers(_ node: Any) -> Any {
        switch node {
        case let object as [String: Any]:
            // JSONSerialization writes members in the dictionary's order, which is not sorted.
            Dictionary(uniqueKeysWithValues: object.map { ($0.key, rebuiltWithUnsortedMembers($0.value)) })
        case let array as [Any]: array.map(rebuiltWithUnsortedMembers)
        default: node
        }
    }
}
