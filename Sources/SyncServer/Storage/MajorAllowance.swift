import SyncProtocol

/// How far the operator lets a dataset's schema move (`ostore-server dataset allow-major`): one
/// client announcing a major far ahead in a hello would otherwise move the dataset there, and every
/// real client would be told to upgrade to an app that does not exist. Both backends keep the
/// allowance with the dataset (NULL when none was given) and check it in the transaction that
/// records a hello's schema.
///
/// ```swift
/// try MajorAllowance.requireAllowed(schema.version, dataset: "family", current: current, allowed: allowed)
/// ```
enum MajorAllowance {
    /// The highest an allowance can name: a schema version's part has at most 9 digits.
    static let largest = 999_999_999

    /// The highest major a dataset at `current` may move to when the operator allows `allowed`:
    /// nil (no bound) for a dataset no client has joined and no allowance names, so a new dataset
    /// takes its first hello's major; otherwise the higher of the dataset's major and the
    /// allowance, so versions of the current major always pass and a new major needs the
    /// operator's word.
    ///
    /// ```swift
    /// #expect(MajorAllowance.highest(current: SchemaVersion(1, 4), allowed: nil) == 1)
    /// ```
    static func highest(current: SchemaVersion?, allowed: Int?) -> Int? {
        guard let current else { return allowed }
        return max(current.major, allowed ?? current.major)
    }

    /// Throws `409 major_not_allowed` when a hello announcing `client` would move dataset `name`
    /// (at `current`) past the major its operator allows: the dataset stays, so every other device
    /// goes on syncing, and the newer app keeps its changes queued and tries again later.
    static func requireAllowed(_ client: SchemaVersion, dataset name: String, current: SchemaVersion?, allowed: Int?)
        throws(ErrorBody)
    {
        guard let highest = highest(current: current, allowed: allowed), client.major > highest else { return }
        throw ErrorBody(
            .majorNotAllowed,
            "dataset \(name) may move to schema major version \(highest) at most, and this app has \(client): "
                + "nothing was recorded and other devices sync as before. Keep your changes queued and sync again "
                + "later; the server's operator lets the dataset move with "
                + "`ostore-server dataset allow-major --dataset \(name) \(client.major)`")
    }

    /// Checks an allowance of `major` for dataset `name` at `current` before it is stored: a major
    /// version the protocol can carry, and none below the dataset's, which it never moves back to.
    static func check(_ major: Int, dataset name: String, current: SchemaVersion?) throws(ServerError) {
        guard (0...largest).contains(major) else {
            throw ServerError(
                .invalidArgument, "\(major) is not a major schema version",
                fix: "give a number from 0 to \(largest)")
        }
        if let current, major < current.major {
            throw ServerError(
                .conflict, "dataset \(name) is at schema \(current) already and never moves back",
                fix: "allow major \(current.major) or above")
        }
    }
}
