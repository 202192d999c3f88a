import Foundation
import SyncProtocol

/// The pull cursor behind the opaque string clients hold: a small JSON object that names the
/// dataset it belongs to, the dataset's incarnation when it was issued, either a snapshot position
/// or a log serial, and the fingerprint of the log up to that serial, signed with a cursor key
/// (``signed(with:)``, ``Signed``), so that a client can only send back what the server issued.
struct PullCursor: Codable, Hashable {
    var dataset: String
    var snapshot: SnapshotPosition?
    var serial: Int64?
    /// The dataset's incarnation (``DatasetState/incarnation``); absent for a dataset that has
    /// none (made before incarnations existed and not restored since).
    var incarnation: String?
    /// The fingerprint of the log up to ``logSerial`` (``LogChain``) when the cursor was issued;
    /// absent at serial 0 and for an entry stored before fingerprints.
    var mark: Int64?
    /// Where the scoped reads of a subject stand, for a dataset with scope rules (then neither
    /// `snapshot` nor `serial` is set), with the subject it was issued to and the digest of the
    /// claims its rules read (``ScopedIdentityDigest``).
    var scope: ScopedCursor?
    var subject: String?
    var claims: String?

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

    static func scoped(
        _ scope: ScopedCursor, dataset: String, incarnation: String?, subject: String, claims: String
    ) -> PullCursor {
        var cursor = PullCursor(dataset: dataset, snapshot: nil, serial: nil, incarnation: incarnation, mark: nil)
        cursor.scope = scope
        cursor.subject = subject
        cursor.claims = claims
        return cursor
    }

    /// The log serial this cursor has read up to: the log phase resumes after it.
    var logSerial: Int64 {
        serial ?? snapshot?.startSerial ?? scope.map { ScopePosition.serial(of: $0.from ?? 0) } ?? 0
    }

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

    /// The cursor as clients hold it: `ID.PAYLOAD.MAC`, where ID is the decimal id of `key`,
    /// PAYLOAD the base64url of the cursor's JSON and MAC the base64url of the HMAC-SHA256 of
    /// `ID.PAYLOAD` under `key`. The MAC covers everything the cursor says (dataset, incarnation,
    /// position, fingerprint) and the key it names.
    func signed(with key: CursorKey) throws(ServerError) -> String {
        let json = (try? ProtocolJSON.encode(self)) ?? Data()
        let text = "\(key.id).\(json.base64URLEncoded)"
        return text + "." + (try Crypto.hmacSHA256(key: key.secret, message: Data(text.utf8))).base64URLEncoded
    }

    /// A cursor's text taken apart, not trusted yet: the key it names, then ``open(with:dataset:)``
    /// checks its MAC under that key before anything of its content is read. Its length is bounded
    /// by the request's (`Limits.maxBodyBytes`) alone: a snapshot cursor holds the last row's key, as
    /// long as a push may make it, and a shorter bound stopped every download at such a row.
    struct Signed {
        let keyID: Int64
        /// `ID.PAYLOAD`: what the MAC covers.
        private let text: Substring
        private let payload: Substring
        private let mac: Data

        /// Refuses at once what no server issued in this form: cursors of releases before cursors
        /// were signed are a single base64url string, with no key id and no MAC.
        init(_ cursor: String) throws(ErrorBody) {
            let parts = cursor.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, (1...18).contains(parts[0].utf8.count),
                parts[0].utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                let keyID = Int64(parts[0]), let mac = Data(base64URLEncoded: parts[2])
            else {
                throw ErrorBody(
                    .invalidCursor,
                    "the cursor is not one this server issued (cursors of releases before they were signed are "
                        + "refused too); pull again without a cursor")
            }
            self.keyID = keyID
            self.mac = mac
            payload = parts[1]
            text = cursor[..<parts[1].endIndex]
        }

        /// The cursor, once its MAC proves `key` signed it, and it belongs to `dataset`.
        func open(with key: CursorKey, dataset: String) throws -> PullCursor {
            let expected = try Crypto.hmacSHA256(key: key.secret, message: Data(text.utf8))
            guard Crypto.constantTimeEqual(expected, mac), let json = Data(base64URLEncoded: payload),
                let cursor = try? JSONDecoder().decode(PullCursor.self, from: json),
                [cursor.snapshot != nil, cursor.serial != nil, cursor.scope != nil].filter({ $0 }).count == 1
            else {
                throw ErrorBody(
                    .invalidCursor,
                    "the cursor is not one this server issued, or was changed; pull again without a cursor")
            }
            guard cursor.dataset == dataset else {
                throw ErrorBody(.invalidCursor, "the cursor belongs to another dataset; pull again without a cursor")
            }
            return cursor
        }
    }

    private init(dataset: String, snapshot: SnapshotPosition?, serial: Int64?, incarnation: String?, mark: Int64?) {
        self.dataset = dataset
        self.snapshot = snapshot
        self.serial = serial
        self.incarnation = incarnation
        self.mark = mark
    }
}
