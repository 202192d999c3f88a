/// What a CHECK expression says about the values it accepts, read without parsing SQL: the
/// identifiers it names (which columns it constrains) and the literals it compares with (good
/// first guesses for values that pass it: `priority BETWEEN 0 AND 9`, `status IN ('open', 'done')`).
struct CheckLiterals {
    var identifiers: Set<String> = []
    var numbers: [Double] = []
    var texts: [String] = []

    init(_ expression: String) {
        let characters = Array(expression)
        var index = 0
        var previousSignificant: Character?
        while index < characters.count {
            let character = characters[index]
            if character == "'" || character == "\"" || character == "`" || character == "[" {
                let closing: Character = character == "[" ? "]" : character
                var text = ""
                index += 1
                while index < characters.count {
                    if characters[index] == closing {
                        if index + 1 < characters.count, characters[index + 1] == closing, closing != "]" {
                            text.append(closing)
                            index += 2
                            continue
                        }
                        break
                    }
                    text.append(characters[index])
                    index += 1
                }
                if character == "'" { texts.append(text) } else { identifiers.insert(text.lowercased()) }
                previousSignificant = "'"
                index += 1
                continue
            }
            if character.isLetter || character == "_" {
                var word = ""
                while index < characters.count,
                    characters[index].isLetter || characters[index].isNumber || characters[index] == "_"
                        || characters[index] == "$"
                {
                    word.append(characters[index])
                    index += 1
                }
                identifiers.insert(word.lowercased())
                previousSignificant = "a"
                continue
            }
            if character.isNumber
                || (character == "." && index + 1 < characters.count && characters[index + 1].isNumber)
            {
                var number = ""
                while index < characters.count,
                    characters[index].isNumber || characters[index] == "." || characters[index] == "e"
                        || characters[index] == "E"
                {
                    number.append(characters[index])
                    index += 1
                }
                // A minus sign right after an operator, a parenthesis or a comma is a sign, not a subtraction.
                let isNegative =
                    previousSignificant == "-"
                    && Self.signPrecedes(characters, before: index - number.count)
                if let value = Double(number) { numbers.append(isNegative ? -value : value) }
                previousSignificant = "0"
                continue
            }
            if !character.isWhitespace { previousSignificant = character }
            index += 1
        }
    }

    /// Whether the `-` before position `start` follows something that cannot end an operand.
    private static func signPrecedes(_ characters: [Character], before start: Int) -> Bool {
        var index = start - 1
        while index >= 0, characters[index].isWhitespace { index -= 1 }
        guard index >= 0, characters[index] == "-" else { return false }
        index -= 1
        while index >= 0, characters[index].isWhitespace { index -= 1 }
        guard index >= 0 else { return true }
        let before = characters[index]
        if before.isLetter || before.isNumber || before == ")" || before == "_" || before == "'" || before == "\"" {
            // `x - 1` is a subtraction, but `BETWEEN -1` and `IN (-1` are signs.
            var word = ""
            while index >= 0, characters[index].isLetter {
                word = String(characters[index]) + word
                index -= 1
            }
            return ["BETWEEN", "AND", "OR", "IN", "IS", "NOT", "WHEN", "THEN", "ELSE"].contains(word.uppercased())
        }
        return true
    }
}
