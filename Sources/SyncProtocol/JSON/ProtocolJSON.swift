import Foundation

/// Reading and writing protocol messages: strict validation (``StrictJSON``) then decoding, with
/// every failure turned into the ``ErrorBody`` the protocol answers with; writing with sorted
/// keys, so equal messages are equal bytes.
///
/// ```swift
/// let push = try ProtocolJSON.decode(PushRequest.self, from: body, limits: .standard)  // throws ErrorBody
/// let bytes = try ProtocolJSON.encode(PushResponse(site: push.site, acknowledgedThrough: 42))
/// ```
public enum ProtocolJSON {
    public static func decode<Message: Decodable>(_ type: Message.Type, from data: Data, limits: Limits)
        throws(ErrorBody)
        -> Message
    {
        do {
            try StrictJSON.validate(Array(data), maximumDepth: limits.maxNestingDepth)
        } catch {
            throw ErrorBody(.malformedJSON, "the body is not acceptable JSON: \(error)")
        }
        guard String(validating: data, as: UTF8.self) != nil else {
            throw ErrorBody(.malformedJSON, "the body is not valid UTF-8")
        }
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            throw ErrorBody(.invalidMessage, describe(error))
        } catch {
            throw ErrorBody(.invalidMessage, "the body is not a \(Message.self): \(error)")
        }
    }

    /// A push body, read by ``MessageReader`` in one pass when it is one that reader vouches
    /// for, else by ``decode(_:from:limits:)``: the same value or the same error either way.
    ///
    /// ```swift
    /// let push = try ProtocolJSON.decodePush(from: body, limits: .standard)  // throws ErrorBody
    /// ```
    public static func decodePush(from data: Data, limits: Limits) throws(ErrorBody) -> PushRequest {
        try decodePushKeepingText(from: data, limits: limits).push
    }

    /// ``decodePush(from:limits:)`` with, for each change, where its canonical JSON and its key's
    /// lie in `data` when the body holds them exactly as ``CanonicalJSONWriter`` writes them (what
    /// a client sends), else nil: a server keeps those bytes instead of writing them again.
    ///
    /// ```swift
    /// let (push, texts) = try ProtocolJSON.decodePushKeepingText(from: body, limits: .standard)
    /// ```
    package static func decodePushKeepingText(from data: Data, limits: Limits) throws(ErrorBody) -> (
        push: PushRequest, texts: [MessageReader.CanonicalText?]
    ) {
        if let read = MessageReader.read(data, limits: limits) { return read }
        let push = try decode(PushRequest.self, from: data, limits: limits)
        return (push, Array(repeating: nil, count: push.changes.count))
    }

    /// A push body as ``MessageReader`` reads it in one pass, or nil when that reader does not vouch
    /// for it (``decode(_:from:limits:)`` then reads it, and gives the error if there is one).
    package static func readCanonicalPush(from data: Data, limits: Limits) -> (
        push: PushRequest, texts: [MessageReader.CanonicalText?]
    )? {
        MessageReader.read(data, limits: limits)
    }

    /// A row's key or columns as ``ProtocolJSON/encode(_:)`` wrote them (what a server keeps),
    /// read in one pass when ``MessageReader`` vouches for the text, else by `JSONDecoder`.
    ///
    /// ```swift
    /// let key = try ProtocolJSON.decodeValues(Data(#"{"id":{"text":"r1"}}"#.utf8))
    /// ```
    public static func decodeValues(_ data: Data) throws -> [String: WireValue] {
        if let values = MessageReader.readValues(data) { return values }
        return try JSONDecoder().decode([String: WireValue].self, from: data)
    }

    public static func encode<Message: Encodable>(_ message: Message) throws -> Data {
        try makeEncoder().encode(message)
    }

    /// The encoder ``encode(_:)`` uses, for a caller that writes many messages in a row and
    /// should not build an encoder for each.
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// "changes[3].clock: a clock is …" rather than Foundation's nested description.
    static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            var text = ""
            for key in keys {
                if let index = key.intValue {
                    text += "[\(index)]"
                } else {
                    text += (text.isEmpty ? "" : ".") + key.stringValue
                }
            }
            return text.isEmpty ? "the body" : text
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])) is missing"
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)) is not \(typeName(type))"
        case .valueNotFound(let type, let context):
            return "\(path(context.codingPath)) is null, expected \(typeName(type))"
        case .dataCorrupted(let context):
            return "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type: "an integer"
        case is Bool.Type: "true or false"
        case is Double.Type: "a number"
        case is [Any].Type: "an array"
        default: type is any Collection.Type ? "an array or object" : "a \(type)"
        }
    }
}
