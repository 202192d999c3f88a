import SyncProtocol

extension HTTPHeaders {
    /// The fields as they can be handed to `MHD_add_response_header`, or `nil` when one cannot be sent.
    ///
    /// libmicrohttpd 0.9.75 checks less and refuses more than HTTP says, so the rules are applied here:
    /// - a name must be a token (RFC 9110 §5.1): 0.9.75 accepts `X:Y`, which would forge a header;
    /// - a value must not hold CR, LF, NUL or other control characters (tab is allowed);
    /// - an empty value is sent as one space (0.9.75 refuses empty values; the recipient strips it);
    /// - `Connection` is passed only as `close` (0.9.75 refuses `keep-alive` and manages it itself).
    func wireFields() -> [Field]? {
        var result: [Field] = []
        result.reserveCapacity(fields.count)
        for field in fields {
            guard Self.isToken(field.name), Self.isFieldValue(field.value) else { return nil }
            if Self.namesMatch(field.name, "Connection") {
                if field.value.lowercased().contains("close") {
                    result.append(Field(name: field.name, value: "close"))
                }
                continue
            }
            result.append(Field(name: field.name, value: field.value.isEmpty ? " " : field.value))
        }
        return result
    }
}
