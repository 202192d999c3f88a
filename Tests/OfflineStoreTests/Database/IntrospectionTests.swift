import Foundation
import OfflineStore
import Testing

@Suite("Schema introspection")
struct IntrospectionTests {
    static let schema = """
        CREATE TABLE authors (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL DEFAULT 'anonymous',
            email TEXT UNIQUE);
        CREATE TABLE books (
            isbn TEXT NOT NULL,
            edition INTEGER NOT NULL DEFAULT 1,
            authorID INTEGER REFERENCES authors(id) ON DELETE CASCADE,
            title TEXT,
            slug TEXT GENERATED ALWAYS AS (lower(title)) VIRTUAL,
            titleLength INTEGER GENERATED ALWAYS AS (length(title)) STORED,
            PRIMARY KEY (isbn, edition));
        CREATE TABLE reviews (
            id INTEGER PRIMARY KEY,
            isbn TEXT, edition INTEGER, stars,
            FOREIGN KEY (isbn, edition) REFERENCES books (isbn, edition) ON UPDATE CASCADE ON DELETE SET NULL,
            FOREIGN KEY (id) REFERENCES authors);
        CREATE INDEX books_title ON books (title);
        CREATE UNIQUE INDEX books_author_title ON books (authorID, title) WHERE title IS NOT NULL;
        CREATE INDEX books_lower ON books (lower(title));
        CREATE TRIGGER books_after_insert AFTER INSERT ON books BEGIN SELECT 1; END;
        CREATE TRIGGER books_before_delete BEFORE DELETE ON books BEGIN SELECT 2; END;
        CREATE TRIGGER authors_after_update AFTER UPDATE ON authors BEGIN SELECT 3; END;
        CREATE VIEW recent_books AS SELECT * FROM books;
        """

    let db: Database

    init() throws {
        db = try Database.inMemory()
        try db.executeScript(Self.schema)
    }

    @Test func tableNames() throws {
        // Sorted, without views and without SQLite's own sqlite_sequence (created by AUTOINCREMENT).
        #expect(try db.scalar(Int.self, "SELECT count(*) FROM sqlite_schema WHERE name = 'sqlite_sequence'") == 1)
        #expect(try db.tableNames() == ["authors", "books", "reviews"])
        #expect(try Database.inMemory().tableNames() == [])
    }

    @Test func tableExists() throws {
        #expect(try db.tableExists("books"))
        #expect(try db.tableExists("BOOKS"))
        #expect(try !db.tableExists("missing"))
        #expect(try !db.tableExists("recent_books"))
        #expect(try db.tableExists("recent_books", includingViews: true))
        #expect(try !db.tableExists("books_title"))
    }

    @Test func columns() throws {
        let columns = try db.columns(in: "books")
        #expect(columns.map(\.name) == ["isbn", "edition", "authorID", "title", "slug", "titleLength"])
        #expect(columns.map(\.declaredType) == ["TEXT", "INTEGER", "INTEGER", "TEXT", "TEXT", "INTEGER"])
        #expect(columns.map(\.isNotNull) == [true, true, false, false, false, false])
        #expect(columns.map(\.defaultValueSQL) == [nil, "1", nil, nil, nil, nil])
        #expect(columns.map(\.primaryKeyPosition) == [1, 2, 0, 0, 0, 0])
        #expect(columns.map(\.visibility) == [.normal, .normal, .normal, .normal, .generatedVirtual, .generatedStored])

        let authors = try db.columns(in: "Authors")
        #expect(authors.map(\.name) == ["id", "name", "email"])
        #expect(authors[0].primaryKeyPosition == 1)
        #expect(authors[1].defaultValueSQL == "'anonymous'")
        #expect(authors[1].isNotNull)

        let untyped = try db.columns(in: "reviews")
        #expect(untyped.last?.name == "stars")
        #expect(untyped.last?.declaredType == "")
    }

    @Test func columnsOfAMissingTableThrow() throws {
        let error = try #require(throws: DatabaseError.self) { try db.columns(in: "missing") }
        #expect(error.message.contains("'missing'"))
        #expect(throws: DatabaseError.self) { try db.indexes(on: "missing") }
        #expect(throws: DatabaseError.self) { try db.foreignKeys(on: "missing") }
    }

    @Test func columnExists() throws {
        #expect(try db.columnExists("title", in: "books"))
        #expect(try db.columnExists("TITLE", in: "Books"))
        #expect(try db.columnExists("slug", in: "books"))
        #expect(try !db.columnExists("subtitle", in: "books"))
        #expect(try !db.columnExists("title", in: "missing"))
    }

    @Test func indexes() throws {
        let indexes = try db.indexes(on: "books")
        #expect(
            indexes.map(\.name) == ["books_author_title", "books_lower", "books_title", "sqlite_autoindex_books_1"])

        let partial = try #require(indexes.first { $0.name == "books_author_title" })
        #expect(partial.isUnique)
        #expect(partial.isPartial)
        #expect(partial.origin == .createIndex)
        #expect(partial.columns == ["authorID", "title"])
        #expect(partial.table == "books")
        #expect(partial.sql?.contains("WHERE title IS NOT NULL") == true)

        let plain = try #require(indexes.first { $0.name == "books_title" })
        #expect(!plain.isUnique)
        #expect(!plain.isPartial)
        #expect(plain.columns == ["title"])

        let expression = try #require(indexes.first { $0.name == "books_lower" })
        #expect(expression.columns == [nil])

        let primaryKey = try #require(indexes.first { $0.name == "sqlite_autoindex_books_1" })
        #expect(primaryKey.origin == .primaryKey)
        #expect(primaryKey.isUnique)
        #expect(primaryKey.columns == ["isbn", "edition"])
        #expect(primaryKey.sql == nil)

        let authorIndexes = try db.indexes(on: "authors")
        #expect(authorIndexes.count == 1)
        #expect(authorIndexes.first?.origin == .uniqueConstraint)
        #expect(authorIndexes.first?.columns == ["email"])
        #expect(try db.indexes(on: "reviews").isEmpty)
    }

    @Test func foreignKeys() throws {
        let books = try db.foreignKeys(on: "books")
        #expect(books.count == 1)
        let author = try #require(books.first)
        #expect(author.destinationTable == "authors")
        #expect(author.originColumns == ["authorID"])
        #expect(author.destinationColumns == ["id"])
        #expect(author.onDelete == "CASCADE")
        #expect(author.onUpdate == "NO ACTION")

        let reviews = try db.foreignKeys(on: "reviews")
        #expect(reviews.count == 2)
        let composite = try #require(reviews.first { $0.destinationTable == "books" })
        #expect(composite.originColumns == ["isbn", "edition"])
        #expect(composite.destinationColumns == ["isbn", "edition"])
        #expect(composite.onDelete == "SET NULL")
        #expect(composite.onUpdate == "CASCADE")
        // A reference without columns points at the parent's primary key.
        let implicit = try #require(reviews.first { $0.destinationTable == "authors" })
        #expect(implicit.destinationColumns == [nil])

        #expect(try db.foreignKeys(on: "authors").isEmpty)
    }

    @Test func foreignKeyOnDeleteActionIsEnforced() throws {
        try db.execute("INSERT INTO authors (id, name) VALUES (\(1), \("Ann"))")
        try db.execute("INSERT INTO books (isbn, authorID, title) VALUES (\("1-2"), \(1), \("Book"))")
        try db.execute("DELETE FROM authors WHERE id = \(1)")
        #expect(try db.count("books") == 0)
    }

    @Test func triggers() throws {
        let triggers = try db.triggers(on: "books")
        #expect(triggers.map(\.name) == ["books_after_insert", "books_before_delete"])
        #expect(triggers.allSatisfy { $0.table == "books" })
        #expect(triggers.first?.sql.contains("AFTER INSERT ON books") == true)
        #expect(try db.triggers(on: "AUTHORS").map(\.name) == ["authors_after_update"])
        #expect(try db.triggers(on: "reviews").isEmpty)
    }

    @Test func attachedSchema() throws {
        let directory = try TemporaryDirectory()
        try db.execute("ATTACH DATABASE \(directory.path("archive.sqlite")) AS archive")
        try db.executeScript(
            """
            CREATE TABLE archive.notes (id INTEGER PRIMARY KEY, bookISBN TEXT REFERENCES books_copy ON DELETE RESTRICT,
                                        body TEXT NOT NULL);
            CREATE TABLE archive.books_copy (isbn TEXT PRIMARY KEY);
            CREATE INDEX archive.notes_body ON notes (body);
            CREATE TRIGGER archive.notes_trigger AFTER INSERT ON notes BEGIN SELECT 1; END;
            """)

        #expect(try db.tableNames(schema: "archive") == ["books_copy", "notes"])
        #expect(try db.tableNames() == ["authors", "books", "reviews"])
        #expect(try db.tableExists("notes", schema: "archive"))
        #expect(try !db.tableExists("notes"))
        #expect(try db.columns(in: "notes", schema: "archive").map(\.name) == ["id", "bookISBN", "body"])
        #expect(try db.columnExists("body", in: "notes", schema: "archive"))
        #expect(try db.indexes(on: "notes", schema: "archive").map(\.name) == ["notes_body"])
        let key = try #require(try db.foreignKeys(on: "notes", schema: "archive").first)
        #expect(key.destinationTable == "books_copy")
        #expect(key.onDelete == "RESTRICT")
        #expect(try db.triggers(on: "notes", schema: "archive").map(\.name) == ["notes_trigger"])
        #expect(throws: DatabaseError.self) { try db.columns(in: "notes") }
    }

    @Test func tempSchema() throws {
        try db.execute("CREATE TEMP TABLE scratch (x INTEGER NOT NULL)")
        #expect(try db.tableNames(schema: "temp") == ["scratch"])
        #expect(try db.tableExists("scratch", schema: "temp"))
        #expect(try db.columns(in: "scratch", schema: "temp").first?.isNotNull == true)
    }
}
