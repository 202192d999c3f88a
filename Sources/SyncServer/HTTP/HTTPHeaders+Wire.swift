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

    /// RFC 9110's `token` (one or more `tchar`): what a field name must be, sent or received.
    static func isToken(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    return true
                default:
                    return "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            }
    }

    private static func isFieldValue(_ value: String) -> Bool {
        value.utf8.allSatisfy { byte in byte == 0x09 || (byte >= 0x20 && byte != 0x7F) }
    }
}
