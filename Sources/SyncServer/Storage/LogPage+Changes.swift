import Foundation
import SyncProtocol
import SyncStoreBridge

extension LogPage.Entries {
    /// The entries' changes, in order. The bodies are spliced into one pull page, as
    /// the log phase of a pull sends them, and read by ``MessageReader`` (`JSONDecoder` would make
    /// folding a long log again several times slower); each is decoded by `JSONDecoder` when the
    /// reader does not vouch for the page.
    func decodedChanges() throws -> [Change] {
        guard count > 0 else { return [] }
        let tail = #"],"cursor":"","hasMore":false,"phase":"log","remaining":0}"#
        var page = Data(capacity: 16 + joined.count + tail.utf8.count)
        page.append(contentsOf: #"{"changes":["#.utf8)
        page.append(contentsOf: joined)
        page.append(contentsOf: tail.utf8)
        if let read = MessageReader.readPullPage(page), read.changes.count == count { return read.changes }
        let decoder = JSONDecoder()
        var start = 0
        return try ends.map { end in
            // Each body is followed by the comma that joins it to the next.
            defer { start = end + 1 }
            return try decoder.decode(Change.self, from: Data(joined[start..<end]))
        }
    }
}
