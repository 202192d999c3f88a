import Foundation

/// Keeps documentation and compiled code one text. A test file marks regions with a line
/// `// NAME:begin` and a line `// NAME:end`; a markdown file's fenced blocks of a language must
/// each be one of those regions, verbatim, and each region must be shown.
///
/// ```swift
/// let problems = try DocumentedCode.differences(
///     markdown: "docs/getting-started.md", sources: ["Tests/OfflineStoreTests/Tools/GuideGettingStartedTests.swift"])
/// #expect(problems.isEmpty, "\(problems)")
/// ```
public enum DocumentedCode {
    /// The package's root directory (paths below are relative to it).
    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    public static func text(_ path: String) throws -> String {
        try String(contentsOf: packageRoot.appendingPathComponent(path), encoding: .utf8)
    }

    /// The regions a source file marks, in order: each one's name and the lines between its markers.
    public static func regions(ofSource path: String) throws -> [(name: String, code: String)] {
        var regions: [(name: String, code: String)] = []
        var open: (name: String, lines: [Substring])?
        for line in try text(path).split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("// "), trimmed.hasSuffix(":begin") {
                open = (String(trimmed.dropFirst(3).dropLast(6)), [])
            } else if let region = open, trimmed == "// \(region.name):end" {
                regions.append((region.name, region.lines.map { $0 + "\n" }.joined()))
                open = nil
            } else {
                open?.lines.append(line)
            }
        }
        return regions
    }

    /// The fenced code blocks of a markdown file written in `language` (```swift), each with its
    /// lines and their newlines, without the fences.
    public static func codeBlocks(ofMarkdown path: String, language: String) throws -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        var fenceLanguage = ""
        for line in try text(path).split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.hasPrefix("```") {
                fenceLanguage = String(line.dropFirst(3))
                current = []
            } else if current != nil, line == "```" {
                if fenceLanguage == language { blocks.append(current!.map { $0 + "\n" }.joined()) }
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    /// What keeps `markdown` and the regions of `sources` apart: each Swift block that is no
    /// region, and each region no block shows. Empty when they are in step.
    public static func differences(markdown: String, sources: [String]) throws -> [String] {
        let blocks = try codeBlocks(ofMarkdown: markdown, language: "swift")
        let marked = try sources.flatMap { source in
            try regions(ofSource: source).map { (source: source, name: $0.name, code: $0.code) }
        }
        var problems: [String] = []
        for block in blocks where !marked.contains(where: { $0.code == block }) {
            problems.append(
                "\(markdown) shows Swift that no region of \(sources.joined(separator: ", ")) compiles:\n\(block)")
        }
        for (source, name, code) in marked where !blocks.contains(code) {
            problems.append("\(markdown) does not show the region \(name) of \(source) verbatim")
        }
        if marked.isEmpty { problems.append("\(sources.joined(separator: ", ")) mark no region") }
        return problems
    }
}
