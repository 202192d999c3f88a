import Foundation

/// Strings copied once into C memory for the C reference to bind, made before the clock starts
/// as the Swift side's own strings are, so both sides bind the same bytes and neither converts
/// while timed.
final class CStringArray {
    let count: Int
    /// `count` NUL-terminated strings, as `const char *const *`.
    let pointers: UnsafeMutablePointer<UnsafePointer<CChar>?>

    init(_ strings: [String]) {
        count = strings.count
        pointers = .allocate(capacity: count)
        for (index, string) in strings.enumerated() {
            pointers[index] = UnsafePointer(strdup(string))
        }
    }

    deinit {
        for index in 0..<count { free(UnsafeMutablePointer(mutating: pointers[index])) }
        pointers.deallocate()
    }
}
