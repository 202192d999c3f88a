import SyncProtocol

extension ErrorBody {
    /// Throws `upgrade_required` unless a client at `client` may sync with a dataset at `dataset`
    /// (``Compatibility/maySync(client:dataset:)``). A push is told its changes stay queued, since
    /// the client keeps them until it upgrades.
    ///
    /// ```swift
    /// try ErrorBody.requireMaySync(client: push.schemaVersion, dataset: datasetSchema, pushing: true)
    /// ```
    static func requireMaySync(client: SchemaVersion, dataset: SchemaVersion?, pushing: Bool) throws(ErrorBody) {
        guard !Compatibility.maySync(client: client, dataset: dataset), let dataset else { return }
        throw ErrorBody(
            .upgradeRequired,
            "this dataset is at schema \(dataset); upgrade the app to major version \(dataset.major)"
                + (pushing ? " and push again (your changes stay queued)" : ""),
            requiredMajorVersion: dataset.major)
    }
}
