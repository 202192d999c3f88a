/// A statement the server prepares once per connection (`PQprepare`) and then executes by name
/// with bound parameters (`PQexecPrepared`): the SQL text never holds a value. Parameter types
/// are declared so binary parameters are read as the intended type.
///
/// ```swift
/// static let datasetByName = PostgresStatement(
///     "datasetByName", "SELECT id FROM server_datasets WHERE name = $1", [.text])
/// ```
///
/// See <https://www.postgresql.org/docs/15/libpq-exec.html#LIBPQ-PQPREPARE>.
struct PostgresStatement: Sendable, Hashable {
    let name: String
    let sql: String
    let parameterTypes: [PostgresType]

    init(_ name: String, _ sql: String, _ parameterTypes: [PostgresType]) {
        self.name = name
        self.sql = sql
        self.parameterTypes = parameterTypes
    }
}
