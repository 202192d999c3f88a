extension PostgresSyncStorage {
    /// Gives every dataset (or those named) a new incarnation, so every pull cursor issued before is
    /// refused and its device downloads the dataset again, while its hello tells it which of its
    /// pushes the database lacks: what `ostore-server restore --postgres URL` runs once `pg_restore`
    /// has put a dump back (docs/POSTGRES.md), before any server serves the database again. Returns
    /// how many datasets were renewed.
    ///
    /// ```swift
    /// // after: pg_restore --clean --if-exists --single-transaction -d "$URL" ostore.dump
    /// let renewed = try PostgresSyncStorage(url: url, connections: 1).renewIncarnations()
    /// ```
    ///
    /// See <https://www.postgresql.org/docs/15/app-pgrestore.html>.
    @discardableResult
    public func renewIncarnations(of names: Set<String>? = nil) throws(ServerError) -> Int {
        try serverWork("renewing the datasets' incarnations") { connection in
            try connection.transaction {
                // Each dataset's row lock, as a push takes it: a push in flight finishes first.
                let rows = try connection.execute(Statements.datasetNamesForUpdate)
                let renewed = try (0..<rows.rowCount).map { row in try rows.string(row: row, column: 0) }
                    .filter { names?.contains($0) ?? true }
                let incarnations = try renewed.map { _ in PostgresValue.text(try DatasetState.newIncarnation()) }
                try connection.execute(
                    Statements.renewIncarnations,
                    [.array(.text, renewed.map { .text($0) }), .array(.text, incarnations)])
                return renewed.count
            }
        }
    }
}
