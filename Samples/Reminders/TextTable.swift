/// Rows of text in aligned columns for a terminal. Control characters in a cell are shown
/// escaped: a stored title must not be able to move the cursor, change colours or fake lines.
struct TextTable {
    var header: [String]
    var rightAlignedColumns: Set<Int>
    var rows: [[String]] = []

    init(header: [String], rightAlignedColumns: Set<Int>) {
        self.header = header
        self.rightAlignedColumns = rightAlignedColumns
    }

    func rendered() -> String {
        let lines = ([header] + rows).map { $0.map(Self.printable) }
        var widths = Array(repeating: 0, count: header.count)
        for line in lines {
            for (column, cell) in line.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        return lines.map { line in
            line.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                if rightAlignedColumns.contains(column) { return padding + cell }
                // The last column is not padded: no trailing spaces.
                return column == line.count - 1 ? cell : cell + padding
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    private static func printable(_ cell: String) -> String {
        var result = ""
        for scalar in cell.unicodeScalars {
            if scalar.properties.generalCategory == .control {
                result += scalar.escaped(asASCII: true)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
