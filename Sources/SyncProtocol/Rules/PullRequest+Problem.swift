extension PullRequest {
    /// What makes this pull request invalid beyond its JSON shape (section 5.3), as the message of a
    /// `400 invalid_message`; nil when nothing does. A server checks it after the protocol version
    /// and the schema version (section 11.2).
    ///
    /// ```swift
    /// if let problem = pull.problem { throw ErrorBody(.invalidMessage, problem) }
    /// ```
    public var problem: String? {
        if let limit, limit < 1 {
            return "limit is \(limit); ask for at least 1 change (or leave it out)"
        }
        guard let wait else { return nil }
        guard protocolVersion >= ProtocolVersion.livePulls else {
            return "wait needs protocol version \(ProtocolVersion.livePulls) or later; this pull names version "
                + "\(protocolVersion)"
        }
        guard wait >= 0 else {
            return "wait is \(wait); ask for 0 or more milliseconds (or leave it out)"
        }
        return nil
    }
}
