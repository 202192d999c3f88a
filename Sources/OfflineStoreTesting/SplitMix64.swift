/// A small seeded pseudo-random generator, so the same seed generates the same rows on every
/// platform and run (the system generator cannot be seeded).
/// See <https://prng.di.unimi.it/splitmix64.c>.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// A version-4 UUID string in upper case, as `UUID().uuidString` writes it.
    mutating func uuidString() -> String {
        var hex = String(next(), radix: 16, uppercase: true) + String(next(), radix: 16, uppercase: true)
        hex = String(repeating: "0", count: max(0, 32 - hex.count)) + hex
        var characters = Array(hex.prefix(32))
        characters[12] = "4"
        characters[16] = ["8", "9", "A", "B"][Int(next() % 4)]
        let text = String(characters)
        func part(_ from: Int, _ length: Int) -> Substring {
            let start = text.index(text.startIndex, offsetBy: from)
            return text[start..<text.index(start, offsetBy: length)]
        }
        return [part(0, 8), part(8, 4), part(12, 4), part(16, 4), part(20, 12)].joined(separator: "-")
    }
}
