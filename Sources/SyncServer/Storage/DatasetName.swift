/// Dataset names: 1 to 63 characters, lowercase ASCII letters, digits, `-` and `_`, starting
/// with a letter or digit. Nothing else reaches storage, so a name in a URL can never be a path
/// (`..`, `/`) or carry SQL.
enum DatasetName {
    /// Throws the operator's error for a name that is not valid.
    static func check(_ name: String) throws(ServerError) {
        guard isValid(name) else {
            throw ServerError(
                .invalidArgument, "\(name.debugDescription) is not a dataset name",
                fix: "use 1 to 63 characters: lowercase letters, digits, '-' and '_', starting with a letter or digit")
        }
    }

    static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 63, isLowerAlphanumeric(first) else { return false }
        return bytes.allSatisfy { isLowerAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
    }

    private static func isLowerAlphanumeric(_ byte: UInt8) -> Bool {
        (97...122).contains(byte) || (48...57).contains(byte)
    }
}
