extension Duration {
    /// The duration in seconds, as `Thread.sleep` and `Date` take it.
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
