import Foundation
import SyncProtocol

/// The engine's requests to one dataset: encode, post, retry by the policy, decode. `Sendable`
/// (it holds only the transport and the configuration), so the engine can ask for the next pull
/// page on another thread while the store applies the last one.
struct SyncRequests: Sendable {
    let transport: any SyncTransport
    let configuration: SyncEngine.Configuration

    /// Posts `message` to the dataset's `endpoint` and decodes the answer, retrying by the policy.
    /// `read` is a faster reader for the answers it vouches for; `JSONDecoder` decodes the rest.
    /// `isCancelled` is asked before each retry: a request whose answer nobody waits for any more
    /// stops there. With `givesUpTransfer` it is asked during the transfer too, which ends soon
    /// after it says so: for a live pull, whose answer may take the whole wait.
    func exchange<Answer: Decodable>(
        _ name: String, _ message: some Encodable, read: (Data) -> Answer? = { _ in nil },
        isCancelled: @escaping @Sendable () -> Bool = { false }, givesUpTransfer: Bool = false
    ) throws(SyncError) -> Answer {
        try exchange(
            name, body: try Self.encode(message, name), read: read, isCancelled: isCancelled,
            givesUpTransfer: givesUpTransfer)
    }

    /// A request's body, as ``exchange(_:body:read:isCancelled:)`` sends it.
    static func encode(_ message: some Encodable, _ name: String) throws(SyncError) -> Data {
        do {
            return try ProtocolJSON.encode(message)
        } catch {
            throw SyncError(.store, "cannot encode the \(name) request: \(error)")
        }
    }

    /// The same with the body already encoded.
    func exchange<Answer: Decodable>(
        _ name: String, body: Data, read: (Data) -> Answer? = { _ in nil },
        isCancelled: @escaping @Sendable () -> Bool = { false }, givesUpTransfer: Bool = false
    ) throws(SyncError) -> Answer {
        let url = configuration.server.appendingPathComponent("v1/datasets/\(configuration.dataset)/\(name)")
        var attempt = 1
        while true {
            // Asked at each attempt: a retry after the token was renewed sends the new one.
            let token = configuration.tokenProvider?() ?? configuration.token
            let headers = [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")]
            let outcome = Result { () throws(SyncError) -> Answer in
                let reply =
                    givesUpTransfer
                    ? try transport.post(url, headers: headers, body: body, cancelledWhen: isCancelled)
                    : try transport.post(url, headers: headers, body: body)
                guard reply.status == 200 else { throw SyncError.answer(reply, url: url) }
                if let answer = read(reply.body) { return answer }
                // By the protocol's JSON rules (section 13), as the server reads requests:
                // `JSONDecoder` alone takes a member given twice (one of its values, silently),
                // invalid UTF-8 and other bodies a server must not send.
                do throws(ErrorBody) {
                    return try ProtocolJSON.decode(Answer.self, from: reply.body, limits: .standard)
                } catch {
                    throw SyncError(
                        .invalidAnswer, "the server's \(name) answer is not a \(Answer.self): \(error.error.message)")
                }
            }
            switch outcome {
            case .success(let answer):
                return answer
            case .failure(let error):
                guard error.isRetryable, !isCancelled() else { throw error }
                if let maximum = configuration.retry.maximumAttempts, attempt >= maximum { throw error }
                configuration.retry.sleep(
                    configuration.retry.delay(afterAttempt: attempt, retryAfter: error.retryAfterSeconds))
                // Abandoned while it slept: no attempt more.
                guard !isCancelled() else { throw error }
                attempt += 1
            }
        }
    }
}
