import Foundation
import HomeportStorage
import HomeportTestSupport
import Testing

@Suite("PostgreSQL prepares each statement once per connection", .tags(.postgres))
struct PreparedStatementTests {
    @Test("a statement with parameters is prepared once and executed many times")
    func preparedOnce() throws {
        try withDatabase(.postgres, options: DatabaseOptions(maximumConnections: 1)) { database, _ in
            try database.execute("CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT)")
            let insert = "INSERT INTO items (id, name) VALUES ($1, $2)"
            let select = "SELECT name FROM items WHERE id = $1"
            for id in 1...20 {
                try database.execute(insert, [.integer(Int64(id)), .text("item \(id)")])
                #expect(try database.execute(select, [.integer(Int64(id))]).first?.string("name") == "item \(id)")
            }
            let count = "SELECT count(*) AS n FROM pg_prepared_statements WHERE statement = $1"
            #expect(try database.execute(count, [.text(insert)]).first?.int("n") == 1)
            #expect(try database.execute(count, [.text(select)]).first?.int("n") == 1)
            // A statement without parameters is not kept.
            try database.execute("SELECT 1")
            #expect(try database.execute(count, [.text("SELECT 1")]).first?.int("n") == 0)
        }
    }

    @Test("a schema change under a prepared statement is absorbed outside a transaction, and once inside one")
    func schemaChange() throws {
        try withDatabase(.postgres, options: DatabaseOptions(maximumConnections: 1)) { database, url in
            try database.execute("CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT)")
            try database.execute("INSERT INTO notes (id, body) VALUES ($1, $2)", [.integer(1), .text("a")])
            let select = "SELECT * FROM notes WHERE id = $1"
            #expect(try database.execute(select, [.integer(1)]).first?.string("body") == "a")
            // Another process (a replica migrating) changes the table's shape.
            let other = try url.open()
            defer { other.close() }
            try other.execute("ALTER TABLE notes ADD COLUMN extra TEXT DEFAULT 'x'")
            #expect(try database.execute(select, [.integer(1)]).first?.string("extra") == "x")

            try other.execute("ALTER TABLE notes ADD COLUMN more TEXT DEFAULT 'y'")
            #expect(throws: StorageError.self) {
                try database.transaction { try $0.execute(select, [.integer(1)]) }
            }
            let row = try database.transaction { try $0.execute(select, [.integer(1)]) }.first
            #expect(row?.string("more") == "y")
        }
    }

    @Test("a value with a NUL is refused before it reaches a prepared statement")
    func nulRefused() throws {
        try withDatabase(.postgres) { database, _ in
            #expect(throws: StorageError.self) { try database.execute("SELECT $1::text AS t", [.text("a\u{0}b")]) }
            let plain = try database.execute("SELECT $1::text AS t", [.text("ab")])
            #expect(plain.first?.string("t") == "ab")
        }
    }
}

@Suite("The connection pool counts the callers it made wait", .tags(.postgres))
struct PoolWaitTests {
    @Test("a caller that finds every connection lent out is counted once", arguments: Backend.allCases)
    func waitsAreCounted(backend: Backend) throws {
        try withDatabase(backend, options: DatabaseOptions(maximumConnections: 1)) { database, _ in
            #expect(database.poolWaits == 0)
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let done = DispatchSemaphore(value: 0)
            let shared = database
            Thread.detachNewThread {
                _ = try? shared.withConnection { _ in
                    holding.signal()
                    release.wait()
                }
                done.signal()
            }
            holding.wait()
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { release.signal() }
            try database.execute("SELECT 1")
            done.wait()
            #expect(database.poolWaits == 1)
            try database.execute("SELECT 1")
            #expect(database.poolWaits == 1, "a free connection costs no wait")
        }
    }
}
