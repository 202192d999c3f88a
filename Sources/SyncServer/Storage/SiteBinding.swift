import SyncProtocol

/// Which token a site of a dataset belongs to: the first read-write token that said hello or
/// pushed as it. Only that token may push as the site (or say hello as it with a read-write token),
/// so one token holder cannot raise another device's high-water mark and have its real pushes
/// acknowledged and dropped. A binding to a token since revoked passes to the next token that uses
/// the site: an operator who replaces a device's token, and revokes the old one, does not lock the
/// device out. Both backends read it with the site's high-water mark, in the statement a push or a
/// hello reads that mark with, and decide with ``claim(by:)``.
///
/// ```swift
/// let binding = SiteBinding(site: site, dataset: "family", token: boundTokenID, tokenIsLive: true)
/// if try binding.claim(by: grant.tokenID) { /* write grant.tokenID as the site's token */ }
/// ```
struct SiteBinding: Sendable, Hashable {
    let site: SiteID
    let dataset: String
    /// The token the site is bound to; nil for a site never used, or used only before the server
    /// kept bindings (or only by the operator's own calls, which pass no token).
    let token: String?
    /// Whether ``token`` may still be used: it exists and is not revoked, or it is a subject's
    /// (``TokenGrant/isSubjectTokenID(_:)``), which no revocation ends.
    let tokenIsLive: Bool

    /// The binding of `site` to `token`, live when the storage found it so (`tokenIsLive`: a stored
    /// token, not revoked) or when it is a subject's.
    init(site: SiteID, dataset: String, token: String?, tokenIsLive: Bool) {
        self.site = site
        self.dataset = dataset
        self.token = token
        self.tokenIsLive = tokenIsLive || token.map(TokenGrant.isSubjectTokenID) == true
    }

    /// Whether `token` must write itself as the site's token (the site is unbound, or its token was
    /// revoked); false when the site is its already. Throws `403 site_forbidden` when another token,
    /// still valid, holds the site.
    func claim(by token: String) throws(ErrorBody) -> Bool {
        if self.token == token { return false }
        guard self.token == nil || !tokenIsLive else {
            throw ErrorBody(
                .siteForbidden,
                "site \(site) of dataset \(dataset) belongs to another token; nothing was stored. A store copied "
                    + "from another device must take a new site id; a device given a new token syncs again once the "
                    + "operator revokes its old one (`ostore-server token revoke ID`)")
        }
        return true
    }
}
