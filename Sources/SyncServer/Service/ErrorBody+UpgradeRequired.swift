import SyncProtocol

extension ErrorBody {
    /// Throws `upgrade_required` unless a client at `client` may sync with a dataset at `dataset`
    /// (``Compatibility/maySync(client:dataset:)``). A push is told its changes stay queued, since
    /// the client keeps them until it upgrades.
    ///
    /// A push of a major above the dataset's is refused with `major_not_allowed`
    /// (``Compatibility/pushNeedsHello(client:dataset:)``): only a hello moves a dataset's major.
    ///
    /// ```swift
    /// try ErrorBody.requireMaySync(client: push.schemaVersion, dataset: datasetSchema, pushing: true)
    /// ```
    static func requireMaySync(client: SchemaVersion, dataset: SchemaVersion?, pushing: Bool) throws(ErrorBody) {
        if pushing, Compatibility.pushNeedsHello(client: client, dataset: dataset), let dataset {
            throw ErrorBody(
                .majorNotAllowed,
                "this dataset is at schema \(dataset); a push of schema \(client) needs a hello first, which moves the "
                    + "dataset to major version \(client.major) if its operator allows it; say hello, then push again "
                    + "(your changes stay queued)")
        }
        guard !Compatibility.maySync(client: client, dataset: dataset), let dataset else { return }
        throw ErrorBody(
            .upgradeRequired,
            "this dataset is at schema \(dataset); upgrade the app to major version \(dataset.major)"
                + (pushing ? " and push again (your changes stay queued)" : ""),
            requiredMajorVersion: dataset.major)
    }
}
