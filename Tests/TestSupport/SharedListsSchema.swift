import SyncProtocol

/// The schema the scope tests share: lists with an owner, shared through a membership table
/// (`listMembers`); reminders belong to a list; a team's notice board is read by the team; tags
/// are everyone's.
public enum SharedListsSchema {
    public static let definition = SchemaDefinition(tables: [
        .init(
            name: "lists", isStrict: true,
            columns: [
                .init(name: "id", type: "TEXT", isNotNull: true, primaryKeyPosition: 1),
                .init(name: "ownerID", type: "TEXT"),
                .init(name: "name", type: "TEXT"),
                .init(name: "position", type: "INTEGER"),
            ]),
        .init(
            name: "listMembers", isStrict: true,
            columns: [
                .init(name: "listID", type: "TEXT", isNotNull: true, primaryKeyPosition: 1),
                .init(name: "userID", type: "TEXT", isNotNull: true, primaryKeyPosition: 2),
            ],
            foreignKeys: [.init(columns: ["listID"], parentTable: "lists", parentColumns: ["id"])]),
        .init(
            name: "reminders", isStrict: true,
            columns: [
                .init(name: "id", type: "TEXT", isNotNull: true, primaryKeyPosition: 1),
                .init(name: "listID", type: "TEXT"),
                .init(name: "title", type: "TEXT"),
                .init(name: "isDone", type: "INTEGER"),
            ],
            foreignKeys: [.init(columns: ["listID"], parentTable: "lists", parentColumns: ["id"])]),
        .init(
            name: "notices",
            columns: [
                .init(name: "id", type: "INTEGER", isNotNull: true, primaryKeyPosition: 1),
                .init(name: "team", type: "VARCHAR(40)"),
            ]),
        .init(name: "tags", columns: [.init(name: "name", type: "TEXT", isNotNull: true, primaryKeyPosition: 1)]),
    ])
}
