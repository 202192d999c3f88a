import Foundation
import OfflineStore
import Testing

/// Lints `sql` as one script with a fresh linter.
private func lint(_ sql: String, _ environment: any LintEnvironment = StandaloneLintEnvironment()) throws
    -> [LintFinding]
{
    var linter = SQLLinter()
    return try linter.lint(script: sql, environment: environment)
}

/// The rule ids `sql` is reported for, in line order.
private func ruleIDs(_ sql: String, _ environment: any LintEnvironment = StandaloneLintEnvironment()) throws
    -> [String]
{
    try lint(sql, environment).map(\.rule.id)
}

/// Every finding's rule id, except the CREATE warnings a test is not about.
private func ruleIDsIgnoringCreate(_ sql: String, _ environment: any LintEnvironment = StandaloneLintEnvironment())
    throws -> [String]
{
    try ruleIDs(sql, environment).filter { $0 != LintRule.createWithoutIfNotExists.id }
}

/// A database whose tables have known row counts and are not synced, so only the rule under test fires.
private let emptyUnsyncedTables = KnownLintEnvironment(
    rowCounts: ["notes": 0, "tags": 0], syncedTables: ["notes": false, "tags": false])

@Suite("Migration SQL linter")
enum LinterTests {
    @Suite("Tokenizer")
    struct Tokenizer {
        @Test func unquotesNamesAndRemembersTheyWereQuoted() throws {
            let tokens = try SQLTokenizer.tokenize(#"SELECT "a ""b""", `c``d`, [e f], g$1, café FROM t"#).tokens
            let names = tokens.filter { $0.kind == .identifier }
            #expect(names.map(\.text) == ["SELECT", #"a "b""#, "c`d", "e f", "g$1", "café", "FROM", "t"])
            #expect(names.map(\.isQuoted) == [false, true, true, true, false, false, false, false])
            #expect(names[0].keyword == "SELECT")
            #expect(names[1].keyword == nil)  // a quoted word is never a keyword
            #expect(names[6].isKeyword("FROM"))
        }

        @Test func quotedKeywordIsAName() throws {
            let tokens = try SQLTokenizer.tokenize(#"DROP TABLE "table""#).tokens
            #expect(tokens[2].text == "table")
            #expect(!tokens[2].isKeyword("TABLE"))
        }

        @Test func literalsParametersAndOperators() throws {
            let tokens = try SQLTokenizer.tokenize(
                "'it''s' x'0aFF' X'' 1 1.5 .5 1e10 2.5E-3 0x1F ? ?12 :a @b $c || <> ->> -> != <= == ( ) ;"
            ).tokens
            #expect(
                tokens.map(\.kind) == [
                    .string, .blob, .blob, .number, .number, .number, .number, .number, .number,
                    .parameter, .parameter, .parameter, .parameter, .parameter,
                    .symbol, .symbol, .symbol, .symbol, .symbol, .symbol, .symbol, .symbol, .symbol, .symbol,
                ])
            #expect(
                tokens.map(\.text) == [
                    "it's", "0aFF", "", "1", "1.5", ".5", "1e10", "2.5E-3", "0x1F", "?", "?12", ":a", "@b", "$c",
                    "||", "<>", "->>", "->", "!=", "<=", "==", "(", ")", ";",
                ])
        }

        @Test func aLoneXIsANameNotABlob() throws {
            let tokens = try SQLTokenizer.tokenize("SELECT x, x1 FROM x").tokens
            #expect(tokens.filter { $0.kind == .blob }.isEmpty)
            #expect(tokens.map(\.text) == ["SELECT", "x", ",", "x1", "FROM", "x"])
        }

        @Test func commentsAreSetAsideWithTheirLines() throws {
            let tokenized = try SQLTokenizer.tokenize(
                """
                -- DROP TABLE a;
                SELECT 1 /* DELETE FROM b;
                   still a comment */ , 'DROP TABLE c' -- trailing
                - 2--no space needed
                """)
            #expect(tokenized.tokens.map(\.text) == ["SELECT", "1", ",", "DROP TABLE c", "-", "2"])
            #expect(
                tokenized.comments.map(\.text) == [
                    " DROP TABLE a;", " DELETE FROM b;\n   still a comment ", " trailing", "no space needed",
                ])
            #expect(tokenized.comments.map(\.line) == [1, 2, 3, 4])
            #expect(tokenized.comments.map(\.endLine) == [1, 3, 3, 4])
            #expect(tokenized.comments.map(\.isBlock) == [false, true, false, false])
        }

        @Test func everyTokenCarriesItsLine() throws {
            let tokens = try SQLTokenizer.tokenize("SELECT\n  'two\nlines'\r\n, [a\nb], c\n\n-- x\nd").tokens
            #expect(tokens.map(\.line) == [1, 2, 4, 4, 5, 5, 8])
            let shifted = try SQLTokenizer.tokenize("a\nb", firstLine: 10).tokens
            #expect(shifted.map(\.line) == [10, 11])
        }

        @Test func tokenRangesPointIntoTheSource() throws {
            let sql = "SELECT 'é', [a b]"
            let utf8 = Array(sql.utf8)
            let sources = try SQLTokenizer.tokenize(sql).tokens.map {
                String(decoding: utf8[$0.utf8Range], as: UTF8.self)
            }
            #expect(sources == ["SELECT", "'é'", ",", "[a b]"])
        }

        @Test(arguments: [
            ("SELECT 1;\nSELECT 'oops\nmore", SQLSyntaxError.Kind.unterminatedString, 2),
            ("SELECT 1;\n\nSELECT \"name", .unterminatedQuotedIdentifier, 3),
            ("SELECT [name", .unterminatedQuotedIdentifier, 1),
            ("SELECT `name", .unterminatedQuotedIdentifier, 1),
            ("SELECT\nx'00", .unterminatedBlob, 2),
            ("SELECT 1;\n/* never\nclosed", .unterminatedBlockComment, 2),
            ("SELECT 'it''", .unterminatedString, 1),
        ])
        func unterminatedConstructsThrowWithTheirLine(sql: String, kind: SQLSyntaxError.Kind, line: Int) {
            #expect(throws: SQLSyntaxError(kind: kind, line: line)) {
                try SQLTokenizer.tokenize(sql)
            }
        }

        @Test func syntaxErrorsDescribeTheLine() {
            let error = SQLSyntaxError(kind: .unterminatedString, line: 7)
            #expect(error.description == "line 7: unterminated string literal (a ' is never closed)")
        }

        @Test func theLinterReportsUnterminatedSQLAsAnError() {
            var linter = SQLLinter()
            #expect(throws: SQLSyntaxError(kind: .unterminatedString, line: 3)) {
                try linter.lint(script: "DROP TABLE a;\n\nDELETE FROM b WHERE c = 'x")
            }
        }
    }

    @Suite("Statement splitter")
    struct Splitter {
        @Test func splitsOnTopLevelSemicolons() throws {
            let statements = try SQLStatementSplitter.split(
                """
                CREATE TABLE a (x TEXT DEFAULT ';');;
                -- a comment; with a semicolon
                INSERT INTO "we;ird" VALUES (';', [;]);

                SELECT 1 /* ; */
                """)
            #expect(
                statements.map(\.text) == [
                    "CREATE TABLE a (x TEXT DEFAULT ';')", #"INSERT INTO "we;ird" VALUES (';', [;])"#, "SELECT 1",
                ])
            #expect(statements.map(\.line) == [1, 3, 5])
            #expect(statements.map(\.endLine) == [1, 3, 5])
        }

        @Test func keepsATriggerBodyTogether() throws {
            let statements = try SQLStatementSplitter.split(
                """
                CREATE TEMP TRIGGER IF NOT EXISTS t AFTER UPDATE ON a
                WHEN CASE WHEN new.x THEN 1 ELSE 0 END
                BEGIN
                    UPDATE a SET y = CASE WHEN new.x > 1 THEN 'big' ELSE 'small' END WHERE id = new.id;
                    DELETE FROM b WHERE id = old.id;
                END;
                BEGIN;
                SELECT CASE 1 WHEN 1 THEN 'a' END;
                END;
                """)
            #expect(statements.count == 4)
            #expect(statements[0].line == 1)
            #expect(statements[0].endLine == 6)
            #expect(statements[0].text.hasSuffix("DELETE FROM b WHERE id = old.id;\nEND"))
            #expect(statements[1...].map(\.text) == ["BEGIN", "SELECT CASE 1 WHEN 1 THEN 'a' END", "END"])
            #expect(statements[1...].map(\.line) == [7, 8, 9])
        }

        @Test func lastStatementNeedsNoSemicolon() throws {
            let statements = try SQLStatementSplitter.split("SELECT 1;\nSELECT 2")
            #expect(statements.map(\.text) == ["SELECT 1", "SELECT 2"])
            #expect(try SQLStatementSplitter.split("  ;; -- nothing\n").isEmpty)
        }

        @Test func commentsBelongToTheStatementTheyDescribe() throws {
            let statements = try SQLStatementSplitter.split(
                """
                -- before a
                SELECT 'a' /* inside a */; -- after a, same line

                -- before b
                SELECT 'b'; SELECT 'c'; -- same line as b's end, but c starts there: c's
                """)
            #expect(
                statements.map { $0.comments.map(\.text) } == [
                    [" before a", " inside a ", " after a, same line"], [" before b"],
                    [" same line as b's end, but c starts there: c's"],
                ])
        }
    }

    @Suite("Rules")
    struct Rules {
        @Test func catalogue() {
            #expect(
                LintRule.all.map(\.id) == [
                    "drop-table-with-rows", "drop-column", "add-column-not-null-without-default",
                    "rename-old-table-first", "foreign-keys-pragma-in-transaction", "create-without-if-not-exists",
                    "column-type-change-in-place", "unbounded-write-on-synced-table", "unknown-lint-directive",
                ])
            let warnings = LintRule.all.filter { $0.severity == .warning }.map(\.id)
            #expect(warnings == ["create-without-if-not-exists", "unknown-lint-directive"])
            for rule in LintRule.all {
                #expect(!rule.reason.isEmpty && !rule.fix.isEmpty)
                #expect(!rule.reason.contains("\n"))
                #expect(rule.id.allSatisfy { $0.isLowercase || $0 == "-" })
                #expect(LintRule(id: rule.id) == rule)
            }
            #expect(LintRule(id: "no-such-rule") == nil)
            #expect(LintRule.renameOldTableFirst.fix.contains("MigrationContext.rebuildTable"))
            #expect(LintRule.renameOldTableFirst.fix.contains("12-step"))
            #expect(LintRule.foreignKeysPragmaInTransaction.fix.contains("defer_foreign_keys"))
        }

        // MARK: drop-table-with-rows

        @Test func dropTableOfUnknownSizeIsReported() throws {
            let findings = try lint("DROP TABLE IF EXISTS main.notes")
            #expect(findings.map(\.rule) == [.dropTableWithRows])
            #expect(
                findings[0].message == "DROP TABLE main.\"notes\" deletes a table that may have rows (count unknown)")
        }

        @Test func dropTableWithKnownRowsNamesTheCount() throws {
            let findings = try lint("DROP TABLE Notes", KnownLintEnvironment(rowCounts: ["notes": 12]))
            #expect(findings.map(\.message) == ["DROP TABLE \"Notes\" deletes its 12 rows"])
        }

        @Test func dropTableThatIsEmptyOrDisposableIsFine() throws {
            #expect(try ruleIDs("DROP TABLE notes", KnownLintEnvironment(rowCounts: ["notes": 0])).isEmpty)
            #expect(try ruleIDs("DROP TABLE temp.scratch; DROP INDEX notes_by_title; DROP VIEW recent").isEmpty)
            // Created by the same script and never filled: nothing to lose.
            #expect(try ruleIDsIgnoringCreate("CREATE TABLE staging (x); DROP TABLE staging").isEmpty)
            #expect(
                try ruleIDs(
                    "CREATE TEMP TABLE IF NOT EXISTS scratch (x); INSERT INTO scratch VALUES (1); DROP TABLE scratch"
                ).isEmpty)
        }

        @Test func dropTableAfterFillingItIsReported() throws {
            #expect(
                try ruleIDsIgnoringCreate(
                    "CREATE TABLE staging (x); INSERT INTO staging VALUES (1); DROP TABLE staging")
                    == ["drop-table-with-rows"])
            #expect(
                try ruleIDsIgnoringCreate("CREATE TABLE copy AS SELECT * FROM notes; DROP TABLE copy") == [
                    "drop-table-with-rows"
                ])
        }

        @Test func dropAfterCopyingTheRowsIsTheRebuildAndIsFine() throws {
            let rebuild = """
                CREATE TABLE IF NOT EXISTS new_notes (id TEXT PRIMARY KEY NOT NULL, body TEXT, tagID TEXT REFERENCES tags(id));
                INSERT INTO new_notes (id, body, tagID) SELECT n.id, n.body, t.id FROM notes AS n LEFT JOIN tags AS t ON t.id = n.tag;
                DROP TABLE notes;
                ALTER TABLE new_notes RENAME TO notes;
                """
            #expect(try ruleIDs(rebuild).isEmpty)
            // The joined table was not copied, only read.
            #expect(try ruleIDs(rebuild + "DROP TABLE tags;") == ["drop-table-with-rows"])
        }

        @Test func dropOfARenamedTableUsesTheOriginalsRowCount() throws {
            let environment = KnownLintEnvironment(rowCounts: ["notes": 5])
            let findings = try lint("ALTER TABLE notes RENAME TO notes_v1; DROP TABLE notes_v1", environment)
            #expect(findings.map(\.message) == ["DROP TABLE \"notes_v1\" deletes its 5 rows"])
        }

        // MARK: drop-column

        @Test func dropColumnIsReportedWithItsTableAndColumn() throws {
            let findings = try lint(#"ALTER TABLE "notes" DROP COLUMN [body]; ALTER TABLE main.tags DROP legacy"#)
            #expect(findings.map(\.rule) == [.dropColumn, .dropColumn])
            #expect(
                findings.map(\.message) == [
                    #"ALTER TABLE "notes" drops column "body" and its data"#,
                    #"ALTER TABLE main."tags" drops column "legacy" and its data"#,
                ])
        }

        @Test func otherAlterTableFormsAreNotDropColumn() throws {
            #expect(
                try ruleIDs("ALTER TABLE notes ADD COLUMN drop_reason TEXT; ALTER TABLE notes RENAME COLUMN a TO b")
                    .isEmpty)
        }

        // MARK: add-column-not-null-without-default

        @Test(arguments: [
            "ALTER TABLE notes ADD COLUMN title TEXT NOT NULL",
            "ALTER TABLE notes ADD title TEXT NOT NULL DEFAULT NULL",
            "ALTER TABLE notes ADD COLUMN title TEXT DEFAULT (NULL) NOT NULL ON CONFLICT REPLACE",
            "ALTER TABLE notes ADD COLUMN title TEXT NOT NULL CHECK (title <> '')",
        ])
        func notNullColumnWithoutDefaultIsReported(sql: String) throws {
            let findings = try lint(sql)
            #expect(findings.map(\.rule) == [.addColumnNotNullWithoutDefault])
            #expect(
                findings.first?.message
                    == #"ALTER TABLE "notes" adds column "title" NOT NULL without a non-NULL DEFAULT"#)
        }

        @Test(arguments: [
            "ALTER TABLE notes ADD COLUMN title TEXT",
            "ALTER TABLE notes ADD COLUMN title TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE notes ADD COLUMN count INTEGER DEFAULT 0 NOT NULL",
            "ALTER TABLE notes ADD COLUMN count INTEGER NOT NULL DEFAULT -1",
            "ALTER TABLE notes ADD COLUMN title TEXT CHECK (title IS NOT NULL)",
            "ALTER TABLE notes ADD COLUMN parent TEXT REFERENCES notes(id) ON DELETE SET NULL",
            "ALTER TABLE notes ADD COLUMN slug TEXT NOT NULL GENERATED ALWAYS AS (lower(title)) VIRTUAL",
            "ALTER TABLE notes ADD COLUMN 'not null' TEXT",
        ])
        func nullableOrDefaultedColumnIsFine(sql: String) throws {
            #expect(try ruleIDs(sql).isEmpty)
        }

        // MARK: rename-old-table-first

        @Test func renamingTheOldTableFirstIsReportedAtTheRename() throws {
            let findings = try lint(
                """
                PRAGMA foreign_keys = OFF;
                ALTER TABLE notes RENAME TO notes_old;
                CREATE TABLE IF NOT EXISTS notes (id TEXT PRIMARY KEY NOT NULL, body TEXT NOT NULL DEFAULT '');
                INSERT INTO notes SELECT id, coalesce(body, '') FROM notes_old;
                DROP TABLE notes_old;
                """)
            #expect(findings.map(\.rule) == [.renameOldTableFirst])
            #expect(findings[0].line == 2)
            #expect(findings[0].statement == "ALTER TABLE notes RENAME TO notes_old")
            #expect(
                findings[0].message.contains(#"table "notes" is renamed to "notes_old" and then re-created at line 3"#))
        }

        @Test func renamingTheNewTableOntoTheOldNameIsTheSameHazard() throws {
            let findings = try lint(
                """
                CREATE TABLE IF NOT EXISTS notes_new (id TEXT PRIMARY KEY NOT NULL);
                INSERT INTO notes_new SELECT id FROM notes;
                ALTER TABLE notes RENAME TO notes_old;
                ALTER TABLE notes_new RENAME TO notes;
                DROP TABLE notes_old;
                """)
            #expect(findings.map(\.rule) == [.renameOldTableFirst])
            #expect(findings.map(\.line) == [3])
            #expect(
                findings[0].message.hasPrefix(
                    #"table "notes" is renamed to "notes_old" and then replaced by "notes_new" at line 4"#))
        }

        @Test func renamingBackIsFine() throws {
            #expect(try ruleIDs("ALTER TABLE notes RENAME TO scratch; ALTER TABLE scratch RENAME TO notes").isEmpty)
        }

        @Test func newTableFirstIsFine() throws {
            #expect(
                try ruleIDs(
                    """
                    CREATE TABLE IF NOT EXISTS new_notes (id TEXT PRIMARY KEY NOT NULL);
                    INSERT INTO new_notes SELECT id FROM notes;
                    DROP TABLE notes;
                    ALTER TABLE new_notes RENAME TO notes;
                    CREATE INDEX IF NOT EXISTS notes_by_id ON notes (id);
                    """
                ).isEmpty)
        }

        @Test func renameWithoutRecreatingIsFine() throws {
            #expect(
                try ruleIDs("ALTER TABLE notes RENAME TO archived_notes; CREATE TABLE IF NOT EXISTS other (x)").isEmpty)
            #expect(try ruleIDs("CREATE TABLE IF NOT EXISTS drafts (x); ALTER TABLE drafts RENAME TO notes").isEmpty)
        }

        @Test func renameAndRecreateAcrossStatementByStatementCalls() throws {
            var linter = SQLLinter()
            #expect(try linter.lint(statement: "ALTER TABLE `Notes` RENAME TO notes_old", startingLine: 10).isEmpty)
            let findings = try linter.lint(statement: "CREATE TABLE IF NOT EXISTS notes (id TEXT)", startingLine: 11)
            #expect(findings.map(\.rule) == [.renameOldTableFirst])
            #expect(findings.map(\.line) == [10])
        }

        // MARK: foreign-keys-pragma-in-transaction

        @Test func foreignKeysPragmaInsideATransactionIsReported() throws {
            let findings = try lint(
                """
                PRAGMA foreign_keys = OFF;
                BEGIN IMMEDIATE;
                PRAGMA main.foreign_keys = ON;
                PRAGMA foreign_keys(0);
                COMMIT;
                """)
            #expect(findings.map(\.rule) == [.foreignKeysPragmaInTransaction, .foreignKeysPragmaInTransaction])
            #expect(findings.map(\.line) == [3, 4])
            #expect(
                findings[0].message == "PRAGMA foreign_keys = ON inside a transaction is silently ignored by SQLite")
        }

        @Test func theEnvironmentSaysWhetherTheScriptStartsInATransaction() throws {
            let stage = KnownLintEnvironment(isInsideTransaction: true)
            #expect(try ruleIDs("PRAGMA foreign_keys = OFF", stage) == ["foreign-keys-pragma-in-transaction"])
            #expect(try ruleIDs("COMMIT; PRAGMA foreign_keys = OFF; BEGIN", stage).isEmpty)
        }

        @Test func foreignKeysPragmaOutsideATransactionIsFine() throws {
            #expect(
                try ruleIDs(
                    """
                    PRAGMA foreign_keys = OFF;
                    BEGIN; SELECT 1; COMMIT;
                    PRAGMA foreign_keys = ON;
                    BEGIN TRANSACTION; END TRANSACTION;
                    PRAGMA foreign_keys = OFF;
                    BEGIN; ROLLBACK;
                    PRAGMA foreign_keys = ON;
                    SAVEPOINT outer; SAVEPOINT inner; RELEASE SAVEPOINT OUTER;
                    PRAGMA foreign_keys = OFF;
                    """
                ).isEmpty)
        }

        @Test func readingForeignKeysOrDeferringThemInATransactionIsFine() throws {
            #expect(
                try ruleIDs(
                    "BEGIN; PRAGMA foreign_keys; PRAGMA defer_foreign_keys = ON; PRAGMA foreign_key_check; COMMIT"
                ).isEmpty)
        }

        @Test func savepointsKeepOrStartATransaction() throws {
            #expect(
                try ruleIDs("SAVEPOINT a; PRAGMA foreign_keys = OFF; RELEASE a") == [
                    "foreign-keys-pragma-in-transaction"
                ])
            #expect(
                try ruleIDs("BEGIN; SAVEPOINT a; RELEASE a; PRAGMA foreign_keys = OFF")
                    == ["foreign-keys-pragma-in-transaction"])
            #expect(
                try ruleIDs("BEGIN; SAVEPOINT a; ROLLBACK TO SAVEPOINT a; PRAGMA foreign_keys = OFF")
                    == ["foreign-keys-pragma-in-transaction"])
            #expect(
                try ruleIDs("SAVEPOINT a; SAVEPOINT b; RELEASE b; PRAGMA foreign_keys = OFF")
                    == ["foreign-keys-pragma-in-transaction"])
        }

        // MARK: create-without-if-not-exists

        @Test(arguments: [
            (
                "CREATE TABLE notes (id TEXT)",
                #"CREATE TABLE "notes" has no IF NOT EXISTS; it fails where the table exists"#
            ),
            (
                "CREATE TEMP TABLE scratch (x)",
                #"CREATE TEMP TABLE "scratch" has no IF NOT EXISTS; it fails where the table exists"#
            ),
            (
                "CREATE INDEX notes_by_title ON notes (title)",
                #"CREATE INDEX "notes_by_title" has no IF NOT EXISTS; it fails where the index exists"#
            ),
            (
                "CREATE UNIQUE INDEX main.u ON notes (title)",
                #"CREATE UNIQUE INDEX main."u" has no IF NOT EXISTS; it fails where the unique index exists"#
            ),
            (
                "CREATE VIRTUAL TABLE search USING fts5(body)",
                #"CREATE VIRTUAL TABLE "search" has no IF NOT EXISTS; it fails where the virtual table exists"#
            ),
            (
                "CREATE TRIGGER t AFTER INSERT ON notes BEGIN SELECT 1; END",
                #"CREATE TRIGGER "t" has no IF NOT EXISTS; it fails where it exists"#
            ),
            (
                "CREATE TEMPORARY TRIGGER t AFTER INSERT ON notes BEGIN SELECT 1; END",
                #"CREATE TRIGGER "t" has no IF NOT EXISTS; it fails where it exists"#
            ),
            (
                "CREATE VIEW recent AS SELECT * FROM notes",
                #"CREATE VIEW "recent" has no IF NOT EXISTS; it fails where the view exists"#
            ),
            (
                "CREATE TEMP VIEW recent AS SELECT 1",
                #"CREATE TEMP VIEW "recent" has no IF NOT EXISTS; it fails where the temp view exists"#
            ),
        ])
        func createWithoutIfNotExistsIsAWarning(sql: String, message: String) throws {
            let findings = try lint(sql)
            #expect(findings.map(\.rule) == [.createWithoutIfNotExists])
            #expect(findings.first?.message == message)
            #expect(findings.first?.rule.severity == .warning)
        }

        @Test(arguments: [
            "CREATE TABLE IF NOT EXISTS notes (id TEXT)",
            "CREATE TEMP TABLE IF NOT EXISTS scratch (x)",
            "CREATE INDEX IF NOT EXISTS notes_by_title ON notes (title)",
            "CREATE UNIQUE INDEX IF NOT EXISTS u ON notes (title)",
            "CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5(body)",
            "CREATE TRIGGER IF NOT EXISTS t AFTER INSERT ON notes BEGIN SELECT 1; END",
            "CREATE VIEW IF NOT EXISTS recent AS SELECT * FROM notes",
        ])
        func createIfNotExistsIsFine(sql: String) throws {
            #expect(try ruleIDs(sql).isEmpty)
        }

        // MARK: column-type-change-in-place

        @Test(arguments: [
            (
                "ALTER TABLE notes ALTER COLUMN title TYPE INTEGER",
                #"ALTER TABLE "notes" ALTER "title" tries to change column "title" in place"#
            ),
            (
                "ALTER TABLE notes MODIFY title INTEGER",
                #"ALTER TABLE "notes" MODIFY "title" tries to change column "title" in place"#
            ),
            ("PRAGMA writable_schema = ON", "PRAGMA writable_schema = ON opens sqlite_schema to direct edits"),
            ("PRAGMA main.writable_schema = 1", "PRAGMA writable_schema = 1 opens sqlite_schema to direct edits"),
            ("PRAGMA writable_schema(true)", "PRAGMA writable_schema = TRUE opens sqlite_schema to direct edits"),
            (
                "UPDATE sqlite_master SET sql = 'x' WHERE name = 'notes'",
                #"UPDATE of "sqlite_master" edits the schema in place"#
            ),
            ("UPDATE main.sqlite_schema SET sql = 'x'", #"UPDATE of main."sqlite_schema" edits the schema in place"#),
            ("DELETE FROM sqlite_schema WHERE name = 'x'", #"DELETE of "sqlite_schema" edits the schema in place"#),
        ])
        func changingAColumnInPlaceIsReported(sql: String, message: String) throws {
            let findings = try lint(sql)
            #expect(findings.map(\.rule) == [.columnTypeChangeInPlace])
            #expect(findings.first?.message == message)
        }

        @Test func readingTheSchemaOrTurningWritableSchemaOffIsFine() throws {
            #expect(
                try ruleIDs(
                    """
                    PRAGMA writable_schema; PRAGMA writable_schema = OFF; PRAGMA writable_schema = RESET;
                    SELECT sql FROM sqlite_schema WHERE name = 'notes';
                    ALTER TABLE notes RENAME COLUMN title TO heading;
                    ALTER TABLE notes ADD COLUMN title_v2 INTEGER;
                    UPDATE notes SET title_v2 = CAST(heading AS INTEGER) WHERE title_v2 IS NULL;
                    """
                ).isEmpty)
        }

        // MARK: unbounded-write-on-synced-table

        @Test(arguments: [
            (
                "DELETE FROM notes",
                #"DELETE FROM "notes" without WHERE deletes every row of a table that may be synced (unknown)"#
            ),
            (
                "UPDATE notes SET title = ''",
                #"UPDATE "notes" without WHERE rewrites every row of a table that may be synced (unknown)"#
            ),
            (
                "WITH old AS (SELECT id FROM notes WHERE done) DELETE FROM main.\"notes\"",
                #"DELETE FROM main."notes" without WHERE deletes every row of a table that may be synced (unknown)"#
            ),
            (
                "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 5), m AS NOT MATERIALIZED (SELECT 2) UPDATE `notes` SET a = 1",
                #"UPDATE "notes" without WHERE rewrites every row of a table that may be synced (unknown)"#
            ),
            (
                "UPDATE OR REPLACE [notes] SET title = (SELECT name FROM tags WHERE tags.id = notes.tag)",
                #"UPDATE "notes" without WHERE rewrites every row of a table that may be synced (unknown)"#
            ),
            (
                "DELETE FROM notes RETURNING id",
                #"DELETE FROM "notes" without WHERE deletes every row of a table that may be synced (unknown)"#
            ),
        ])
        func unboundedWriteOnATableThatMayBeSyncedIsReported(sql: String, message: String) throws {
            let findings = try lint(sql)
            #expect(findings.map(\.rule) == [.unboundedWriteOnSyncedTable])
            #expect(findings.first?.message == message)
        }

        @Test func unboundedWriteOnAKnownSyncedTableSaysSo() throws {
            let findings = try lint("DELETE FROM Notes", KnownLintEnvironment(syncedTables: ["notes": true]))
            #expect(
                findings.map(\.message) == [#"DELETE FROM "Notes" without WHERE deletes every row of a synced table"#])
        }

        @Test func boundedOrUnsyncedOrEmptyWritesAreFine() throws {
            #expect(
                try ruleIDs(
                    """
                    DELETE FROM notes WHERE done = 1;
                    UPDATE notes SET title = '' WHERE title IS NULL;
                    UPDATE OR IGNORE notes SET a = b FROM tags WHERE tags.id = notes.tag;
                    WITH old AS (SELECT id FROM notes) DELETE FROM notes WHERE id IN old;
                    DELETE FROM temp.scratch;
                    """
                ).isEmpty)
            #expect(
                try ruleIDs(
                    "DELETE FROM cache; UPDATE cache SET x = 1", KnownLintEnvironment(syncedTables: ["cache": false])
                ).isEmpty)
            #expect(try ruleIDs("DELETE FROM notes", KnownLintEnvironment(rowCounts: ["notes": 0])).isEmpty)
            #expect(
                try ruleIDs("CREATE TEMP TABLE IF NOT EXISTS s (x); INSERT INTO s VALUES (1); DELETE FROM s").isEmpty)
        }

        @Test func triggerBodiesAreCheckedAtTheirOwnLines() throws {
            let findings = try lint(
                """
                CREATE TRIGGER IF NOT EXISTS cleanup AFTER DELETE ON notes
                BEGIN
                    DELETE FROM tags WHERE noteID = old.id;
                    UPDATE counters SET n = CASE WHEN n > 0 THEN n - 1 ELSE 0 END;
                    DELETE FROM local_log;
                END;
                """, KnownLintEnvironment(syncedTables: ["local_log": false]))
            #expect(findings.map(\.rule) == [.unboundedWriteOnSyncedTable])
            #expect(findings.map(\.line) == [4])
            #expect(findings.map(\.statement) == ["UPDATE counters SET n = CASE WHEN n > 0 THEN n - 1 ELSE 0 END"])
        }

        @Test func triggerWithBoundedWritesIsFine() throws {
            #expect(
                try ruleIDs(
                    """
                    CREATE TEMP TRIGGER IF NOT EXISTS touch AFTER UPDATE OF body ON notes
                    WHEN CASE WHEN new.body IS NULL THEN 0 ELSE 1 END
                    BEGIN
                        UPDATE notes SET updatedAt = unixepoch() WHERE id = new.id;
                        DELETE FROM tags WHERE noteID = new.id AND name = 'DELETE FROM notes';
                        SELECT RAISE(ABORT, 'no') WHERE new.body = '';
                    END;
                    """
                ).isEmpty)
        }
    }

    @Suite("Directives")
    struct Directives {
        @Test func allowSuppressesTheNamedRulesForTheNextStatementOnly() throws {
            let findings = try lint(
                """
                -- ostore-lint: allow drop-column, drop-table-with-rows
                ALTER TABLE notes DROP COLUMN legacy;
                ALTER TABLE notes DROP COLUMN other;
                """)
            #expect(findings.map(\.rule) == [.dropColumn])
            #expect(findings.map(\.line) == [3])
        }

        @Test func directiveInsideOrAfterTheStatementOrInABlockComment() throws {
            #expect(
                try ruleIDs(
                    """
                    ALTER TABLE notes /* ostore-lint: allow drop-column */ DROP COLUMN a;
                    DELETE FROM notes; -- ostore-lint: allow unbounded-write-on-synced-table
                    CREATE TABLE t (x)  -- ostore-lint: allow create-without-if-not-exists
                    ;
                    """
                ).isEmpty)
        }

        @Test func directiveAllowsOnlyTheRulesItNames() throws {
            let findings = try lint(
                """
                -- ostore-lint: allow drop-column
                DROP TABLE notes;
                """)
            #expect(findings.map(\.rule) == [.dropTableWithRows])
        }

        @Test func unknownRuleInADirectiveIsReported() throws {
            let findings = try lint(
                """
                SELECT 1;
                -- ostore-lint: allow drop-colum, drop-table-with-rows
                ALTER TABLE notes DROP COLUMN legacy;
                DROP TABLE notes;
                """)
            // The known id still applies, to line 3's statement only; the misspelt one suppresses nothing.
            #expect(findings.map(\.rule) == [.unknownLintDirective, .dropColumn, .dropTableWithRows])
            #expect(findings.map(\.line) == [2, 3, 4])
            #expect(findings[0].message == #"lint directive allows "drop-colum", which is not a lint rule"#)
            #expect(findings[0].rule.severity == .warning)
        }

        @Test func malformedAndStrayDirectivesAreReported() throws {
            let findings = try lint(
                """
                -- ostore-lint: ignore drop-column
                ALTER TABLE notes DROP COLUMN legacy;
                -- ostore-lint: allow
                SELECT 1;
                -- ostore-lint: allow typo-rule
                """)
            #expect(
                findings.map(\.rule) == [
                    .unknownLintDirective, .dropColumn, .unknownLintDirective, .unknownLintDirective,
                ])
            #expect(findings.map(\.line) == [1, 2, 3, 5])
            #expect(findings[3].statement == "")
        }

        @Test func renameDirectiveOnTheRenameSuppressesTheLaterFinding() throws {
            #expect(
                try ruleIDs(
                    """
                    -- ostore-lint: allow rename-old-table-first
                    ALTER TABLE notes RENAME TO notes_old;
                    CREATE TABLE IF NOT EXISTS notes (id TEXT);
                    """
                ).isEmpty)
            #expect(
                try ruleIDs(
                    """
                    ALTER TABLE notes RENAME TO notes_old;
                    -- ostore-lint: allow rename-old-table-first
                    CREATE TABLE IF NOT EXISTS notes (id TEXT);
                    """
                ).isEmpty)
        }

        @Test func directiveMayGiveAReasonAfterAnotherDoubleDash() throws {
            let findings = try lint(
                """
                -- ostore-lint: allow drop-column -- unused since 2.0, never synced
                ALTER TABLE notes DROP COLUMN legacy;
                """)
            #expect(findings.isEmpty)
        }

        @Test func commentsThatAreNotDirectivesAreIgnored() throws {
            #expect(try ruleIDs("-- ostore lint allow everything\n-- allow drop-column\nSELECT 1").isEmpty)
        }
    }

    @Suite("Findings and environments")
    struct FindingsAndEnvironments {
        @Test func goodMigrationHasNoFindings() throws {
            let migration = """
                -- Stage 3: titles and tags.
                PRAGMA foreign_keys = ON;
                BEGIN;
                PRAGMA defer_foreign_keys = ON;
                CREATE TABLE IF NOT EXISTS tags (
                    id TEXT PRIMARY KEY NOT NULL,
                    name TEXT NOT NULL DEFAULT '' CHECK (name IS NOT NULL),
                    note TEXT REFERENCES notes(id) ON DELETE CASCADE);
                CREATE UNIQUE INDEX IF NOT EXISTS tags_by_name ON tags (name) WHERE name <> '';
                ALTER TABLE notes ADD COLUMN title TEXT;
                ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
                UPDATE notes SET title = substr(body, 1, 40) WHERE title IS NULL;
                INSERT INTO tags (id, name) VALUES ('t1', 'DROP TABLE notes; DELETE FROM notes');
                /* Older versions did ALTER TABLE notes DROP COLUMN legacy; we keep it. */
                SELECT 'UPDATE notes SET x = 1', "name" FROM tags WHERE id = :id;
                CREATE VIEW IF NOT EXISTS pinned_notes AS SELECT * FROM notes WHERE pinned;
                PRAGMA foreign_key_check;
                COMMIT;
                """
            #expect(try lint(migration).isEmpty)
        }

        @Test func findingsPointAtTheirLinesAndStatements() throws {
            let findings = try lint(
                """
                CREATE TABLE IF NOT EXISTS a (x);

                ALTER TABLE a
                    DROP COLUMN x;
                /* two
                   lines */ DROP TABLE
                    b;
                """)
            #expect(findings.map(\.line) == [3, 6])
            #expect(findings.map(\.statement) == ["ALTER TABLE a\n    DROP COLUMN x", "DROP TABLE\n    b"])
            #expect(findings[0].description == #"line 3: drop-column: ALTER TABLE "a" drops column "x" and its data"#)
        }

        @Test func statementByStatementLintingKeepsLinesAndState() throws {
            var linter = SQLLinter()
            #expect(try linter.lint(statement: "BEGIN", startingLine: 1).isEmpty)
            let findings = try linter.lint(statement: "\nPRAGMA foreign_keys = OFF", startingLine: 5)
            #expect(findings.map(\.line) == [6])
            #expect(findings.map(\.rule) == [.foreignKeysPragmaInTransaction])
            let statement = try #require(try SQLStatementSplitter.split("COMMIT").first)
            #expect(linter.lint(statement).isEmpty)
            #expect(try linter.lint(statement: "PRAGMA foreign_keys = OFF").isEmpty)
        }

        @Test func knownEnvironmentComparesNamesCaseInsensitively() {
            let environment = KnownLintEnvironment(rowCounts: ["Notes": 3], syncedTables: ["TAGS": true])
            #expect(environment.rowCount(ofTable: "NOTES") == 3)
            #expect(environment.rowCount(ofTable: "other") == nil)
            #expect(environment.isSynced(table: "tags") == true)
            #expect(environment.isSynced(table: "notes") == nil)
            #expect(!environment.isInsideTransaction)
            let standalone = StandaloneLintEnvironment()
            #expect(standalone.rowCount(ofTable: "notes") == nil && standalone.isSynced(table: "notes") == nil)
        }

        @Test func databaseEnvironmentCountsRowsOfExistingTables() throws {
            let directory = try TemporaryDirectory()
            let path = directory.path("app.sqlite")
            let writer = try Database(path: path)
            try writer.executeScript(
                """
                CREATE TABLE notes (id TEXT PRIMARY KEY);
                INSERT INTO notes VALUES ('a'), ('b');
                CREATE TABLE "empty table" (x);
                """)
            var configuration = Configuration()
            configuration.readonly = true
            let reader = try Database(path: path, configuration: configuration)
            let environment = DatabaseLintEnvironment(reader)
            #expect(environment.rowCount(ofTable: "notes") == 2)
            #expect(environment.rowCount(ofTable: "empty table") == 0)
            #expect(environment.rowCount(ofTable: "missing") == 0)
            #expect(environment.isSynced(table: "notes") == nil)

            let findings = try lint(
                #"DROP TABLE notes; DROP TABLE "empty table"; DROP TABLE IF EXISTS missing"#, environment)
            #expect(findings.map(\.message) == [#"DROP TABLE "notes" deletes its 2 rows"#])

            #expect(!environment.isInsideTransaction)
            try reader.execute("BEGIN")
            #expect(environment.isInsideTransaction)
            var linter = SQLLinter()
            #expect(try linter.lint(statement: "PRAGMA foreign_keys = OFF", environment: environment).count == 1)
            try reader.execute("COMMIT")
        }
    }
}
