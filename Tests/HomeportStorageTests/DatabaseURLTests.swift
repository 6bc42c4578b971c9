import HomeportStorage
import Testing

@Suite("Database URLs", .tags(.postgres))
struct DatabaseURLTests {
    @Test("sqlite: and postgres:// URLs parse; others are refused with a message")
    func parsing() throws {
        #expect(try DatabaseURL(parsing: "sqlite:data/h.sqlite") == .sqlite(path: "data/h.sqlite"))
        #expect(try DatabaseURL(parsing: "sqlite:///var/h.sqlite") == .sqlite(path: "/var/h.sqlite"))
        #expect(try DatabaseURL(parsing: "postgres://u@h/db") == .postgres(url: "postgres://u@h/db"))
        #expect(try DatabaseURL(parsing: "postgresql://u@h/db") == .postgres(url: "postgresql://u@h/db"))
        for bad in ["mysql://u:pw@h/db", "sqlite:", "", "/tmp/h.sqlite"] {
            #expect {
                try DatabaseURL(parsing: bad)
            } throws: { error in
                guard case StorageError.invalidURL(let message) = error else { return false }
                return message.contains("sqlite:PATH") && !message.contains("pw@")
            }
        }
    }

    @Test("a printed URL never shows a password")
    func redaction() throws {
        #expect(
            try DatabaseURL(parsing: "postgres://homeport:s3cret@db:5432/h").description
                == "postgres://homeport:***@db:5432/h")
        #expect(
            try DatabaseURL(parsing: "postgres://db/h?user=x&password=s3cret&sslmode=require").description
                == "postgres://db/h?user=x&password=***&sslmode=require")
    }

    @Test("a SQLite path in a missing directory is created; an unusable one fails clearly")
    func sqlitePaths() throws {
        #expect {
            try DatabaseURL.sqlite(path: "/proc/homeport-cannot-be-here/h.sqlite").open()
        } throws: { error in
            if case StorageError.connectionFailed = error { return true }
            return false
        }
    }

    @Test("an unreachable PostgreSQL fails with connectionFailed, not a crash")
    func unreachablePostgres() throws {
        #expect {
            try DatabaseURL.postgres(url: "postgres://nobody@127.0.0.1:1/none").open()
        } throws: { error in
            if case StorageError.connectionFailed = error { return true }
            return false
        }
    }
}
