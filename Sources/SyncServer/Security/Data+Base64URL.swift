import Foundation

extension Data {
    /// The bytes in base64url without padding (RFC 4648, section 5): safe in JSON strings and URLs
    /// as they are, for tokens and pull cursors.
    ///
    /// ```swift
    /// Data([0xFB, 0xFF]).base64URLEncoded  // "-_8"
    /// ```
    var base64URLEncoded: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of base64url `text`, padded or not; nil when it is not base64url.
    init?(base64URLEncoded text: some StringProtocol) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}
