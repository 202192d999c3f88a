/// The PostgreSQL types the server's statements use, by their built-in OIDs (`pg_type.oid`),
/// which are fixed for every PostgreSQL release.
///
/// See <https://www.postgresql.org/docs/15/datatype-oid.html> and `src/include/catalog/pg_type.dat`.
enum PostgresType: UInt32, Sendable, Hashable {
    case bool = 16
    case bytea = 17
    case int8 = 20
    case int2 = 21
    case int4 = 23
    case text = 25
    case float8 = 701
    case boolArray = 1000
    case byteaArray = 1001
    case int2Array = 1005
    case textArray = 1009
    case int8Array = 1016
    case float8Array = 1022
}
