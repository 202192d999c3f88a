/// A column's type affinity, by SQLite's rules for a declared type: what kind of value the
/// column holds once SQLite has converted what was written.
///
/// ```swift
/// ColumnAffinity(declaredType: "VARCHAR(20)")  // .text
/// ColumnAffinity(declaredType: "")  // .blob: values are stored as given
/// ```
///
/// See <https://www.sqlite.org/datatype3.html#determination_of_column_affinity>.
public enum ColumnAffinity: String, Sendable, Hashable {
    case integer, text, blob, real, numeric

    public init(declaredType: String) {
        let type = declaredType.uppercased()
        if type.contains("INT") {
            self = .integer
        } else if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") {
            self = .text
        } else if type.isEmpty || type.contains("BLOB") {
            self = .blob
        } else if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") {
            self = .real
        } else {
            self = .numeric
        }
    }

    /// Whether text written to a column of `declaredType` stays text: TEXT affinity, BLOB (no
    /// conversion at all), and ANY in a STRICT table, which keeps every value as given (outside
    /// one, ANY is NUMERIC and turns `"42"` into 42).
    public static func keepsText(declaredType: String, inStrictTable isStrict: Bool) -> Bool {
        if isStrict && declaredType.uppercased() == "ANY" { return true }
        let affinity = ColumnAffinity(declaredType: declaredType)
        return affinity == .text || affinity == .blob
    }
}
