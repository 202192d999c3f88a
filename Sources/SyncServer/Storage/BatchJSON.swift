import Foundation
import SyncProtocol

/// The canonical JSON a server keeps for each change of a pushed batch: the change (its log
/// entry) and its key (its row in the state), byte for byte what `Change.canonicalJSON()` and
/// `canonicalKeyJSON()` write.
///
/// All the bodies go through one ``CanonicalJSONWriter`` and all the keys through another, each
/// text cut from its writer's buffer: a writer per change allocated a buffer, grew it and
/// dropped it for every change, about a third of the cost of encoding it. A push's body mostly
/// holds them already, byte for byte (a client writes them with the same writer): those are cut
/// from the body instead (``init(_:texts:in:)``).
///
/// ```swift
/// let batch = try BatchJSON(changes)
/// let serial = try storage.storeBatch(batch, site: site, clientSchema: SchemaVersion(1, 0), dataset: "family")
/// ```
public struct BatchJSON: Sendable {
    /// The batch's changes, in order; ``bodies`` and ``keys`` are theirs, index for index.
    public let changes: [Change]
    let bodies: [String]
    let keys: [String]

    /// The canonical JSON of each of `changes`, written.
    ///
    /// ```swift
    /// let serial = try storage.storeBatch(try BatchJSON(changes), site: site, clientSchema: version, dataset: name)
    /// ```
    public init(_ changes: [Change]) throws {
        self.changes = changes
        var bodyWriter = CanonicalJSONWriter(capacity: 384 * changes.count)
        var keyWriter = CanonicalJSONWriter(capacity: 64 * changes.count)
        var bodyEnds: [Int] = []
        var keyEnds: [Int] = []
        bodyEnds.reserveCapacity(changes.count)
        keyEnds.reserveCapacity(changes.count)
        for index in changes.indices {
            try bodyWriter.write(changes[index])
            bodyEnds.append(bodyWriter.byteCount)
            try keyWriter.write(changes[index].key)
            keyEnds.append(keyWriter.byteCount)
        }
        bodies = Self.texts(of: bodyWriter, endingAt: bodyEnds)
        keys = Self.texts(of: keyWriter, endingAt: keyEnds)
    }

    /// The texts of the changes a push's `body` was read into: where the reader found a change
    /// written exactly as the writer writes it (`texts[index]`, see
    /// ``MessageReader/CanonicalText``), its bytes and its key's are cut from the body; the others
    /// are written. Writing them again cost a server about a third of reading and storing a change.
    package init(_ changes: [Change], texts: [MessageReader.CanonicalText?], in body: Data) throws {
        precondition(texts.count == changes.count, "one text (or nil) per change")
        guard texts.contains(where: { $0 != nil }) else {
            self = try BatchJSON(changes)
            return
        }
        self.changes = changes
        var bodies: [String] = []
        var keys: [String] = []
        bodies.reserveCapacity(changes.count)
        keys.reserveCapacity(changes.count)
        try body.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            for index in changes.indices {
                if let text = texts[index] {
                    bodies.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[text.change]), as: UTF8.self))
                    keys.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[text.key]), as: UTF8.self))
                } else {
                    bodies.append(try changes[index].canonicalJSON())
                    keys.append(try changes[index].canonicalKeyJSON())
                }
            }
        }
        self.bodies = bodies
        self.keys = keys
    }

    /// The writer's bytes cut at `ends` (each text's end offset, in order).
    private static func texts(of writer: CanonicalJSONWriter, endingAt ends: [Int]) -> [String] {
        writer.withUnsafeBytes { bytes in
            var start = 0
            return ends.map { end in
                defer { start = end }
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
            }
        }
    }
}
