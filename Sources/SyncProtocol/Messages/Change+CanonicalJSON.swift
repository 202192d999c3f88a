extension Change {
    /// The change as ``ProtocolJSON/encode(_:)`` writes it, through ``CanonicalJSONWriter``: what a
    /// server keeps in its log and splices into pull pages.
    ///
    /// ```swift
    /// let body = try change.canonicalJSON()  // {"clock":"1764000000000-3","columns":{…},…}
    /// ```
    public func canonicalJSON() throws -> String {
        var writer = CanonicalJSONWriter()
        try writer.write(self)
        return writer.text
    }

    /// The row's key as ``ProtocolJSON/encode(_:)`` writes it: one key, one text.
    ///
    /// ```swift
    /// let keyText = try change.canonicalKeyJSON()  // {"id":{"text":"r1"}}
    /// ```
    public func canonicalKeyJSON() throws -> String {
        var writer = CanonicalJSONWriter(capacity: 64)
        try writer.write(key)
        return writer.text
    }
}
