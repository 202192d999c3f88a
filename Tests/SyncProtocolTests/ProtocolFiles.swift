import Foundation
import SyncProtocol
import Testing

/// The repository's `Protocol/` folder (specification, schemas, vectors), found from this file's
/// path so the tests read the same files whatever directory `swift test` runs in.
enum ProtocolFiles {
    static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // SyncProtocolTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // the repository
        .appendingPathComponent("Protocol")

    static let vectorsFolder = folder.appendingPathComponent("vectors")

    static func data(_ pathInProtocolFolder: String) throws -> Data {
        try Data(contentsOf: folder.appendingPathComponent(pathInProtocolFolder))
    }

    static func text(_ pathInProtocolFolder: String) throws -> String {
        String(decoding: try data(pathInProtocolFolder), as: UTF8.self)
    }

    /// `<message>.<name>.json` files, sorted; empty if the folder cannot be read (a separate test
    /// requires it to be non-empty, so a missing folder fails rather than passing vacuously).
    static let messageVectorFileNames: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: vectorsFolder.path)) ?? []
        return names.filter { $0.hasSuffix(".json") && !["values.json", "requests.json"].contains($0) }.sorted()
    }()
}

/// The seven message types, named as in the vector files (`push-request.basic.json`) and the schemas.
enum MessageKind: String, CaseIterable, Sendable {
    case helloRequest = "hello-request"
    case helloResponse = "hello-response"
    case pushRequest = "push-request"
    case pushResponse = "push-response"
    case pullRequest = "pull-request"
    case pullResponse = "pull-response"
    case error

    /// The kind a vector file name starts with.
    init?(vectorFileName: String) {
        guard let kind = Self.allCases.first(where: { vectorFileName.hasPrefix($0.rawValue + ".") }) else { return nil }
        self = kind
    }

    /// The decoded message, comparable with `==` across kinds.
    func decode(_ data: Data, limits: Limits = .standard) throws(ErrorBody) -> AnyHashable {
        switch self {
        case .helloRequest: try ProtocolJSON.decode(HelloRequest.self, from: data, limits: limits)
        case .helloResponse: try ProtocolJSON.decode(HelloResponse.self, from: data, limits: limits)
        case .pushRequest: try ProtocolJSON.decode(PushRequest.self, from: data, limits: limits)
        case .pushResponse: try ProtocolJSON.decode(PushResponse.self, from: data, limits: limits)
        case .pullRequest: try ProtocolJSON.decode(PullRequest.self, from: data, limits: limits)
        case .pullResponse: try ProtocolJSON.decode(PullResponse.self, from: data, limits: limits)
        case .error: try ProtocolJSON.decode(ErrorBody.self, from: data, limits: limits)
        }
    }

    /// What `ProtocolJSON.encode` writes for the message `data` holds.
    func reencode(_ data: Data) throws -> Data {
        let message = try decode(data)
        return switch message.base {
        case let message as HelloRequest: try ProtocolJSON.encode(message)
        case let message as HelloResponse: try ProtocolJSON.encode(message)
        case let message as PushRequest: try ProtocolJSON.encode(message)
        case let message as PushResponse: try ProtocolJSON.encode(message)
        case let message as PullRequest: try ProtocolJSON.encode(message)
        case let message as PullResponse: try ProtocolJSON.encode(message)
        case let message as ErrorBody: try ProtocolJSON.encode(message)
        default: Data()
        }
    }

    /// The error a server answers a request body with, or nil when it accepts it: decoding, then
    /// for a push the batch checks of ``ChangeValidation/validate(_:limits:now:)``, for a pull
    /// ``PullRequest/problem``.
    func serverError(for data: Data, limits: Limits, now: Int64) -> ErrorBody? {
        do throws(ErrorBody) {
            let message = try decode(data, limits: limits)
            if let push = message.base as? PushRequest { try ChangeValidation.validate(push, limits: limits, now: now) }
            if let pull = message.base as? PullRequest, let problem = pull.problem {
                throw ErrorBody(.invalidMessage, problem)
            }
            return nil
        } catch {
            return error
        }
    }
}

/// One case of `Protocol/vectors/values.json`.
struct ValueCase: Decodable, Sendable, CustomTestStringConvertible {
    var name: String
    var json: String
    var storageClass: String?
    var valid: Bool
    var canonical: String?

    var testDescription: String { name }

    static func load() throws -> [ValueCase] {
        try JSONDecoder().decode([ValueCase].self, from: try ProtocolFiles.data("vectors/values.json"))
    }

    static let all: [ValueCase] = (try? load()) ?? []
}

/// One case of `Protocol/vectors/requests.json`: a request body and the error a server answers
/// it with (nil: accepted).
struct RequestCase: Decodable, Sendable, CustomTestStringConvertible {
    struct LimitOverrides: Decodable, Sendable {
        var maxChangesPerPush: Int?
    }

    var name: String
    var message: String
    var body: String
    var error: ErrorCode?
    var changeIndex: Int?
    var now: Int64
    var limits: LimitOverrides?

    var testDescription: String { name }

    var effectiveLimits: Limits {
        var limits = Limits.standard
        if let maxChangesPerPush = self.limits?.maxChangesPerPush { limits.maxChangesPerPush = maxChangesPerPush }
        return limits
    }

    static func load() throws -> [RequestCase] {
        try JSONDecoder().decode([RequestCase].self, from: try ProtocolFiles.data("vectors/requests.json"))
    }

    static let all: [RequestCase] = (try? load()) ?? []
}

/// The error code a throwing body ends with, or nil when it returns. (Closures do not infer
/// typed throws, so this takes any error and records an issue for one that is not an ErrorBody.)
func errorCode(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> ErrorCode? {
    do {
        try body()
        return nil
    } catch let error as ErrorBody {
        return error.error.code
    } catch {
        Issue.record("not an ErrorBody: \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
