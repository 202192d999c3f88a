import Foundation
import SyncProtocol
import SyncServer

/// A storage that hands every call to `inner`, but those its type implements itself: what a test
/// storage that watches or holds up a few calls builds on.
protocol ForwardingStorage: SyncStorage {
    var inner: any SyncStorage { get }
}

extension ForwardingStorage {
    func createDataset(named name: String) throws(ServerError) { try inner.createDataset(named: name) }
    func datasets() throws(ServerError) -> [DatasetSummary] { try inner.datasets() }
    func datasetStats(_ dataset: String) throws(ServerError) -> DatasetStats { try inner.datasetStats(dataset) }
    func createToken(dataset: String, readOnly: Bool, identity: TokenIdentity) throws(ServerError) -> CreatedToken {
        try inner.createToken(dataset: dataset, readOnly: readOnly, identity: identity)
    }
    func revokeToken(id: String) throws(ServerError) { try inner.revokeToken(id: id) }
    func tokens() throws(ServerError) -> [TokenSummary] { try inner.tokens() }
    func rotateCursorKeys() throws(ServerError) -> CursorKeyRotation { try inner.rotateCursorKeys() }
    func checkHealth() throws(ServerError) { try inner.checkHealth() }
    func cursorKeys() throws(ServerError) -> [CursorKey] { try inner.cursorKeys() }
    func grant(forTokenDigest digest: Data) throws(ServerError) -> TokenGrant? {
        try inner.grant(forTokenDigest: digest)
    }
    func schemaVersion(of dataset: String) throws(ServerError) -> SchemaVersion? {
        try inner.schemaVersion(of: dataset)
    }
    func schemaDefinitions(of dataset: String) throws(ServerError) -> [SchemaVersion: SchemaDefinition] {
        try inner.schemaDefinitions(of: dataset)
    }
    func recordSchema(_ schema: SchemaDescription, dataset: String, mayMoveDataset: Bool) throws -> SchemaVersion? {
        try inner.recordSchema(schema, dataset: dataset, mayMoveDataset: mayMoveDataset)
    }
    func allowMajor(_ major: Int, dataset: String) throws(ServerError) { try inner.allowMajor(major, dataset: dataset) }
    func claimSite(_ site: SiteID, dataset: String, token: String) throws -> Int64 {
        try inner.claimSite(site, dataset: dataset, token: token)
    }
    func storeBatch(_ batch: BatchJSON, site: SiteID, clientSchema: SchemaVersion, dataset: String, token: String?)
        throws -> StoredBatch
    {
        try inner.storeBatch(batch, site: site, clientSchema: clientSchema, dataset: dataset, token: token)
    }
    func readLog(dataset: String, after serial: Int64, excluding site: SiteID?, limit: Int) throws(ServerError)
        -> LogPage
    {
        try inner.readLog(dataset: dataset, after: serial, excluding: site, limit: limit)
    }
    func readSnapshot(dataset: String, after position: SnapshotPosition?, limit: Int) throws(ServerError)
        -> SnapshotPage
    {
        try inner.readSnapshot(dataset: dataset, after: position, limit: limit)
    }
    func datasetState(_ dataset: String, site: SiteID) throws(ServerError) -> DatasetState {
        try inner.datasetState(dataset, site: site)
    }
    func logChain(dataset: String, serial: Int64) throws(ServerError) -> Int64? {
        try inner.logChain(dataset: dataset, serial: serial)
    }
    func setScopeRules(_ text: String, dataset: String) throws(ServerError) {
        try inner.setScopeRules(text, dataset: dataset)
    }
    func scopeRules(of dataset: String) throws(ServerError) -> ScopeRulesSummary? { try inner.scopeRules(of: dataset) }
}
