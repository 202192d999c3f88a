/// The namespace of the schema model: versions, and the snapshot of a whole schema.
///
/// An app declares each released version of its schema as a ``VersionedSchema`` whose
/// ``Model`` types each declare one table with a ``TableDefinition``. The migrator
/// (``Migrator``) compares those declarations with what a live database holds.
public enum Schema {}
