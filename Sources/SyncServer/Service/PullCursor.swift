import Foundation
import SyncProtocol

/// The pull cursor behind the opaque string clients hold: base64url of a small JSON object that
/// names the dataset it belongs to, the dataset's incarnation when it was issued, either a
/// snapshot position or a log serial, and the fingerprint of the log up to that serial.
struct PullCursor: Codable, Hashable {
    var dataset: String
    var snapshot: SnapshotPosition?
    var serial: Int64?
    /// The dataset's incarnation (``DatasetState/incarnation``); absent in cursors issued before
    /// incarnations existed, which match a dataset that has none.
    var incarnation: String?
    /// The fingerprint of the log up to ``logSerial`` (``LogChain``) when the cursor was issued;
    /// absent at serial 0, for an entry stored before fingerprints, and in cursors issued before
    /// they existed.
    var mark: Int64?

    static func snapshot(_ position: SnapshotPosition, dataset: String, incarnation: String?, chain: Int64?)
        -> PullCursor
    {
        PullCursor(
            dataset: dataset, snapshot: position, serial: nil, incarnation: incarnation, mark: chain)
    }

    static func log(_ serial: Int64, dataset: String, incarnation: String?, chain: Int64?) -> PullCursor {
        PullCursor(
            dataset: dataset, snapshot: nil, serial: serial, incarnation: incarnation, mark: chain)
    }

    /// The log serial this cursor has read up to: the log phase resumes after it.
    var logSerial: Int64 { serial ?? snapshot?.startSerial ?? 0 }

    /// Refuses a cursor the dataset as it is now cannot serve: one of another incarnation (the
    /// storage was restored from a backup since), or one past the newest serial (the log lost its
    /// newest changes, and the serials after it will be given to other changes).
    func check(against state: DatasetState) throws(ErrorBody) {
        guard incarnation == state.incarnation else {
            throw ErrorBody(
                .invalidCursor,
                "the dataset was restored from a backup after this cursor was issued; pull again without a cursor")
        }
        guard logSerial <= state.lastSerial else {
            throw ErrorBody(
                .invalidCursor,
                "the cursor is past the dataset's newest change (\(logSerial) > \(state.lastSerial)): the server lost "
                    + "changes, for example restored from a backup; pull again without a cursor")
        }
    }

    /// Refuses a cursor with a fingerprint that the log's entry at its serial no longer has
    /// (`current`, ``SyncStorage/logChain(dataset:serial:)``): the log it was read from was
    /// replaced since, by a copy put back by hand, and has grown again past it.
    func check(logChain current: Int64?) throws(ErrorBody) {
        guard let mark, mark != current else { return }
        throw ErrorBody(
            .invalidCursor,
            "the dataset's log is not the one this cursor was read from (the storage was put back from a copy "
                + "since, without `ostore-server restore`); pull again without a cursor")
    }

    var encoded: String {
        let json = (try? ProtocolJSON.encode(self)) ?? Data()
        return json.base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The cursor in `text`, which must have been issued for `dataset`. Its length is bounded by the
    /// request's (`Limits.maxBodyBytes`) alone: a snapshot cursor holds the last row's key, as long
    /// as a push may make it, and a shorter bound stopped every download at such a row.
    init(decoding text: String, dataset: String) throws(ErrorBody) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64),
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

    private init(dataset: String, snapshot: SnapshotPosition?, serial: Int64?, incarnation: String?, mark: Int64?) {
        self.dataset = dataset
        self.snapshot = snapshot
        self.serial = serial
        self.incarnation = incarnation
        self.mark = mark
    }
}
