import Foundation

/// Where commands write: results to standard output, diagnostics and summaries to standard error.
package enum Console {
    package static func output(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    package static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
