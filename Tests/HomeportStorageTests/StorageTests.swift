import Foundation
import HomeportStorage
import HomeportTestSupport
import Testing

/// Opens a fresh database of `backend` for the duration of `body`.
func withDatabase<T>(
    _ backend: Backend, options: DatabaseOptions = DatabaseOptions(), _ body: (any Database, DatabaseURL) throws -> T
) throws -> T {
    let (url, cleanUp) = try backend.makeDatabaseURL()
    defer { cleanUp() }
    let database = try url.open(options: options)
    defer { database.close() }
    return try body(database, url)
}

@Suite("Storage, on SQLite and PostgreSQL", .tags(.postgres))
struct StorageTests {
    @Test("values of every type round-trip through $N placeholders", arguments: Backend.allCases)
    func roundTrip(backend: Backend) throws {
        try withDatabase(backend) { database, _ in
            let blobType = database.dialect == .postgres ? "BYTEA" : "BLOB"
            let realType = database.dialect == .postgres ? "DOUBLE PRECISION" : "REAL"
            try database.execute(
                "CREATE TABLE t (i BIGINT, r \(realType), s TEXT, b \(blobType), n TEXT)")
            let bytes: [UInt8] = [0, 1, 2, 0xFF, 0x5C, 0x78]
            try database.execute(
                "INSERT INTO t (i, r, s, b, n) VALUES ($1, $2, $3, $4, $5)",
                [.integer(Int64.max), .real(2.5), .text("héllo 'quoted' $1 ✓"), .blob(bytes), .null])
            let row = try #require(try database.execute("SELECT i, r, s, b, n FROM t").first)
            #expect(row["i"] == .integer(Int64.max))
            #expect(row["r"] == .real(2.5))
            #expect(row["s"] == .text("héllo 'quoted' $1 ✓"))
            #expect(row["b"] == .blob(bytes))
            #expect(row["n"] == .null)
            // A placeholder may repeat and appear out of order.
            let again = try database.execute("SELECT $2 || $1 || $2 AS joined", [.text("a"), .text("b")])
            #expect(again.first?.string("joined") == "bab")
        }
    }

    @Test("a transaction commits when its body returns and rolls back when it throws", arguments: Backend.allCases)
    func transactions(backend: Backend) throws {
        struct Abort: Error {}
        try withDatabase(backend) { database, _ in
            try database.execute("CREATE TABLE t (v INTEGER)")
            _ = try database.transaction { try $0.execute("INSERT INTO t (v) VALUES (1)", []) }
            #expect(throws: Abort.self) {
                try database.transaction { connection in
                    _ = try connection.execute("INSERT INTO t (v) VALUES (2)", [])
                    throw Abort()
                }
            }
            let values = try database.execute("SELECT v FROM t ORDER BY v").compactMap { $0.int("v") }
            #expect(values == [1])
        }
    }

    @Test("many threads writing at once lose no update", arguments: Backend.allCases)
    func concurrentWrites(backend: Backend) throws {
        try withDatabase(backend) { database, _ in
            try database.execute("CREATE TABLE counter (id INTEGER PRIMARY KEY, n BIGINT NOT NULL)")
            try database.execute("INSERT INTO counter (id, n) VALUES (1, 0)")
            // SQLite's BEGIN IMMEDIATE serialises writers; PostgreSQL needs the row lock.
            let lock = database.dialect == .postgres ? " FOR UPDATE" : ""
            let failures = Failures()
            DispatchQueue.concurrentPerform(iterations: 16) { _ in
                for _ in 0..<25 {
                    do {
                        try database.transaction { connection in
                            let n = try connection.execute("SELECT n FROM counter WHERE id = 1\(lock)", []).first?.int(
                                "n")
                            _ = try connection.execute(
                                "UPDATE counter SET n = $1 WHERE id = 1", [.integer((n ?? -1) + 1)])
                        }
                    } catch {
                        failures.add(error)
                    }
                }
            }
            #expect(failures.all.isEmpty, "\(failures.all)")
            let n = try database.execute("SELECT n FROM counter WHERE id = 1").first?.int("n")
            #expect(n == 400)
        }
    }

    @Test("a PostgreSQL connection killed by the server is replaced on the next call")
    func brokenConnectionIsReplaced() throws {
        try withDatabase(.postgres, options: DatabaseOptions(maximumConnections: 1)) { database, url in
            let pid = try database.execute("SELECT pg_backend_pid() AS pid").first?.int("pid")
            let admin = try DatabaseURL.postgres(url: TestPostgres.adminURL()).open()
            defer { admin.close() }
            try admin.execute("SELECT pg_terminate_backend($1)", [.integer(pid ?? 0)])
            // The killed connection fails once (the server is gone from under it)…
            #expect(throws: StorageError.self) { try database.execute("SELECT 1") }
            // …and is discarded: the next call opens a fresh one.
            let newPid = try database.execute("SELECT pg_backend_pid() AS pid").first?.int("pid")
            #expect(newPid != nil && newPid != pid)
        }
    }

    @Test("a statement error says what failed and leaves the pool usable", arguments: Backend.allCases)
    func statementErrors(backend: Backend) throws {
        try withDatabase(backend) { database, _ in
            #expect {
                try database.execute("SELECT * FROM no_such_table")
            } throws: { error in
                guard case StorageError.statementFailed(_, let message) = error else { return false }
                return message.contains("no_such_table")
            }
            let one = try database.execute("SELECT 1 AS one").first?.int("one")
            #expect(one == 1)
        }
    }

    @Test("a lock held past the lock timeout fails with busy instead of hanging", arguments: Backend.allCases)
    func lockTimeout(backend: Backend) throws {
        let options = DatabaseOptions(maximumConnections: 4, lockTimeout: .milliseconds(300))
        try withDatabase(backend, options: options) { database, url in
            try database.execute("CREATE TABLE t (v INTEGER)")
            let lock = try TableLock(url, table: "t")
            #expect {
                try database.execute("INSERT INTO t (v) VALUES (1)")
            } throws: { error in
                if case StorageError.busy = error { return true }
                return false
            }
            lock.release()
            try database.execute("INSERT INTO t (v) VALUES (1)")
        }
    }

    @Test(
        "SQLite: a writer of this process waits for the one before it in the process, and past the lock timeout is busy"
    )
    func writersWaitInTurn() throws {
        let options = DatabaseOptions(maximumConnections: 4, lockTimeout: .milliseconds(300))
        try withDatabase(.sqlite, options: options) { database, _ in
            try database.execute("CREATE TABLE t (v INTEGER)")
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let done = DispatchSemaphore(value: 0)
            let failures = Failures()
            Thread.detachNewThread {
                do {
                    try database.transaction { db in
                        try db.execute("INSERT INTO t (v) VALUES (1)")
                        holding.signal()
                        release.wait()
                    }
                } catch {
                    failures.add(error)
                }
                done.signal()
            }
            holding.wait()
            // The second writer waits in the process, not in SQLite's busy handler: past the lock
            // timeout it is told another of this process's transactions held the database.
            #expect {
                try database.transaction { db in try db.execute("INSERT INTO t (v) VALUES (2)") }
            } throws: { error in
                guard case StorageError.busy(let message) = error else { return false }
                return message.contains("this process")
            }
            // A reader is not held up by the writer.
            #expect(try database.execute("SELECT COUNT(*) AS n FROM t").first?.int("n") == 0)
            release.signal()
            done.wait()
            _ = try database.transaction { db in try db.execute("INSERT INTO t (v) VALUES (3)") }
            #expect(try database.execute("SELECT v FROM t ORDER BY v").compactMap { $0.int("v") } == [1, 3])
            #expect(failures.all.isEmpty, "\(failures.all)")
        }
    }
}

final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var errors: [String] = []
    func add(_ error: any Error) { lock.withLock { errors.append(String(describing: error)) } }
    var all: [String] { lock.withLock { errors } }
}
