import Foundation
import SyncProtocol

/// The canonical JSON a server keeps for each change of a pushed batch: the change (its log
/// entry) and its key (its row in the state), byte for byte what `Change.canonicalJSON()` and
/// `canonicalKeyJSON()` write.
///
/// All the bodies go through one ``CanonicalJSONWriter`` and all the keys through another, each
/// text cut from its writer's buffer: a writer per change allocated a buffer, grew it and
/// dropped it for every change, about a third of the cost of encoding it.
///
/// ```swift
/// let json = try BatchJSON(changes)
/// try insertLog.execute(datasetID, serial, site, json.bodies[0])
/// ```
struct BatchJSON {
    let bodies: [String]
    let keys: [String]

    init(_ changes: [Change]) throws {
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
