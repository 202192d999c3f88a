import Foundation

extension SchemaDefinition {
    /// The text a definition's fingerprint hashes, byte for byte as Protocol/README.md section
    /// 5.1 ("Canonical text of a definition") specifies: a header line, then per table (sorted by
    /// ASCII-lowercased name) a `table` line, its `column` lines (sorted the same way) and its
    /// `foreign-key` lines (sorted by their bytes); fields separated by one space, every line ended
    /// by a line feed, free text (types, text and blob defaults, expressions) as lowercase hex.
    ///
    /// ```swift
    /// let text = definition.canonicalText  // "ostore-schema-definition 1\ntable lists strict rowid\n…"
    /// ```
    public var canonicalText: String {
        var lines = ["ostore-schema-definition 1"]
        for table in tables.sorted(by: { Self.precedes($0.name, $1.name) }) {
            lines.append(
                "table \(table.name) \(table.isStrict ? "strict" : "not-strict") "
                    + (table.isWithoutRowID ? "without-rowid" : "rowid"))
            for column in table.columns.sorted(by: { Self.precedes($0.name, $1.name) }) {
                lines.append(
                    "column \(column.name) \(Self.hex(Array(column.type.utf8))) "
                        + "\(column.isNotNull ? "not-null" : "nullable") \(column.primaryKeyPosition) "
                        + Self.canonical(column.defaultValue))
            }
            let foreignKeys = table.foreignKeys.map { foreignKey in
                "foreign-key \(foreignKey.columns.joined(separator: ",")) \(foreignKey.parentTable) "
                    + "\(foreignKey.parentColumns.joined(separator: ",")) \(Self.canonical(foreignKey.onDelete)) "
                    + Self.canonical(foreignKey.onUpdate)
            }
            lines += foreignKeys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The lowercase hexadecimal SHA-256 of ``canonicalText``'s UTF-8 bytes: what a hello with this
    /// definition sends as its `fingerprint`.
    public var fingerprint: String { SHA256.hexDigest(canonicalText) }

    /// By the names' bytes with ASCII letters lowercased, then by the bytes as they are.
    private static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        let lower = { (name: String) in name.utf8.map { (65...90).contains($0) ? $0 | 0x20 : $0 } }
        let (left, right) = (lower(lhs), lower(rhs))
        return left == right ? lhs.utf8.lexicographicallyPrecedes(rhs.utf8) : left.lexicographicallyPrecedes(right)
    }

    private static func canonical(_ value: Default?) -> String {
        switch value {
        case nil: "none"
        case .expression(let sql): "expression \(hex(Array(sql.utf8)))"
        case .value(.null): "null"
        case .value(.integer(let integer)): "integer \(integer)"
        case .value(.real(let real)): "real \(String(real.bitPattern, radix: 16).leftPadded(to: 16))"
        case .value(.text(let text)): "text \(hex(Array(text.utf8)))"
        case .value(.blob(let bytes)): "blob \(hex(Array(bytes)))"
        }
    }

    private static func canonical(_ action: Action) -> String {
        action.rawValue.lowercased().replacingOccurrences(of: " ", with: "-")
    }

    /// Two lowercase hex digits per byte; `-` for no bytes, so no field is ever empty.
    private static func hex(_ bytes: [UInt8]) -> String {
        guard !bytes.isEmpty else { return "-" }
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
