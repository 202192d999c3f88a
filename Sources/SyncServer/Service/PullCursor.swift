import Foundation
import SyncProtocol

/// The pull cursor behind the opaque string clients hold: base64url of a small JSON object that
/// names the dataset it belongs to and either a snapshot position or a log serial.
struct PullCursor: Codable, Hashable {
    var dataset: String
    var snapshot: SnapshotPosition?
    var serial: Int64?

    static func snapshot(_ position: SnapshotPosition, dataset: String) -> PullCursor {
        PullCursor(dataset: dataset, snapshot: position, serial: nil)
    }

    static func log(_ serial: Int64, dataset: String) -> PullCursor {
        PullCursor(dataset: dataset, snapshot: nil, serial: serial)
    }

    var encoded: String {
        let json = (try? ProtocolJSON.encode(self)) ?? Data()
        return json.base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The cursor in `text`, which must have been issued for `dataset`.
    init(decoding text: String, dataset: String) throws(ErrorBody) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard text.utf8.count <= 4096, let data = Data(base64Encoded: base64),
            let cursor = try? JSONDecoder().decode(PullCursor.self, from: data),
            (cursor.snapshot == nil) != (cursor.serial == nil)
        else {
            throw ErrorBody(.invalidCursor, "the cursor is not one this server issued; pull again without a cursor")
        }
        guard cursor.dataset == dataset else {
            throw ErrorBody(.invalidCursor, "the cursor belongs to another dataset; pull again without a cursor")
        }
        self = cursor
    }

    private init(dataset: String, snapshot: SnapshotPosition?, serial: Int64?) {
        self.dataset = dataset
        self.snapshot = snapshot
        self.serial = serial
    }
}
