extension Statement {
    /// Binds `values` to the parameters in order, steps once and hands `read` the first row (nil
    /// when there is none) while it is current, then resets: for a lookup a loop runs thousands
    /// of times, on a statement it holds, without building SQL text or copying the row.
    ///
    /// ```swift
    /// let exists = try lookup.withFirstRow(binding: [.text(id)]) { $0 != nil }
    /// ```
    ///
    /// See <https://www.sqlite.org/c3ref/step.html>.
    package func withFirstRow<Result>(binding values: [DatabaseValue], _ read: (Row?) throws -> Result) throws -> Result
    {
        guard values.count == parameterCount else { throw argumentCountError(given: values.count, arguments: values) }
        guard !isIterating else {
            throw DatabaseError.misuse("the statement is being read by a cursor; prepare another one", sql: sql)
        }
        defer { reset() }
        for (index, value) in values.enumerated() { try bind(value, toParameter: index + 1) }
        return try read(try step(arguments: values) ? Row(statement: self) : nil)
    }
}

extension Statement {
    /// Binds `values` to the parameters in order and runs the statement to completion: a write a
    /// loop repeats on a statement it holds, without building SQL text or naming arguments.
    ///
    /// ```swift
    /// try insert.run(binding: [.text(id), .text(title)])
    /// ```
    package func run(binding values: [DatabaseValue]) throws(DatabaseError) {
        guard values.count == parameterCount else { throw argumentCountError(given: values.count, arguments: values) }
        for (index, value) in values.enumerated() { try bind(value, toParameter: index + 1) }
        try runToCompletion(arguments: values)
    }
}
