/// Lints the statements stage code executes through a ``MigrationContext``, with what the
/// migrator knows: which tables are synced in the target schema and how many rows tables hold.
struct StageLinter {
    let targetSchema: SchemaSnapshot

    init(targetSchema: SchemaSnapshot) {
        self.targetSchema = targetSchema
    }

    func statements(in script: String) throws -> [String] {
        [script]
    }

    func check(_ sql: String, in context: MigrationContext) throws {
    }
}
