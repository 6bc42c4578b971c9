import Foundation
import HomeportCrypto
import HomeportServer
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

/// Opens a fresh database of `backend` with Homeport's schema (a copy of one migrated once per process).
func withMigratedDatabase<T>(
    _ backend: Backend, options: DatabaseOptions = DatabaseOptions(),
    _ body: (any Database, DatabaseURL) throws -> T
) throws -> T {
    let (url, cleanUp) = try backend.makeMigratedDatabaseURL()
    defer { cleanUp() }
    let database = try url.open(options: options)
    defer { database.close() }
    return try body(database, url)
}

/// Random bytes that count how often they were asked for.
final class CountingRandom: RandomSource, @unchecked Sendable {
    private let lock = NSLock()
    private var calls = 0
    func bytes(_ count: Int) throws -> [UInt8] {
        lock.withLock { calls += 1 }
        return try SystemRandom().bytes(count)
    }
    var callCount: Int { lock.withLock { calls } }
}

@Suite("Identity store, on SQLite and PostgreSQL", .tags(.postgres))
struct IdentityStoreTests {
    @Test(
        "the identity is created on first use, stored, and then read rather than recreated", arguments: Backend.allCases
    )
    func createdOnceThenRead(backend: Backend) throws {
        try withMigratedDatabase(backend) { database, _ in
            let store = IdentityStore(database: database)
            #expect(try store.storedInstanceID() == nil, "nothing exists before first use")
            let first = try store.instanceID()
            #expect(try store.storedInstanceID()?.instanceID == first)
            let random = CountingRandom()
            let another = IdentityStore(database: database, random: random)
            #expect(try another.instanceID() == first)
            #expect(random.callCount == 0, "a stored identity is never regenerated")
        }
    }

    @Test("threads racing on first use with separate stores all get one identifier", arguments: Backend.allCases)
    func concurrentFirstUse(backend: Backend) throws {
        try withMigratedDatabase(backend) { database, url in
            let seen = Seen()
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                do {
                    let own = try url.open(options: DatabaseOptions(maximumConnections: 1))
                    defer { own.close() }
                    seen.add(try IdentityStore(database: own).instanceID().description)
                } catch {
                    seen.add("error: \(error)")
                }
            }
            #expect(seen.all.count == 8)
            #expect(Set(seen.all).count == 1, "\(Set(seen.all))")
            let rows = try database.execute("SELECT COUNT(*) AS n FROM server_identity").first?.int("n")
            #expect(rows == 1)
        }
    }

    @Test("once read, the identity is served from memory even if the table goes away", arguments: Backend.allCases)
    func cachedPerProcess(backend: Backend) throws {
        try withMigratedDatabase(backend) { database, _ in
            let store = IdentityStore(database: database)
            let id = try store.instanceID()
            try database.execute("DROP TABLE server_identity")
            #expect(try store.instanceID() == id)
            #expect(throws: StorageError.self) { try IdentityStore(database: database).instanceID() }
        }
    }

    @Test(
        "a row that does not hold a UUID is an error, never replaced by a new identifier", arguments: Backend.allCases)
    func corruptRow(backend: Backend) throws {
        try withMigratedDatabase(backend) { database, _ in
            try database.execute("INSERT INTO server_identity (id, instance_id, created_at) VALUES (1, 'garbage', 0)")
            #expect(throws: IdentityError.corrupt) { try IdentityStore(database: database).instanceID() }
            #expect(
                try database.execute("SELECT instance_id FROM server_identity").first?.string("instance_id")
                    == "garbage")
        }
    }

    @Test("the table refuses a second identity row", arguments: Backend.allCases)
    func singleton(backend: Backend) throws {
        try withMigratedDatabase(backend) { database, _ in
            _ = try IdentityStore(database: database).instanceID()
            #expect(throws: StorageError.self) {
                try database.execute(
                    "INSERT INTO server_identity (id, instance_id, created_at) VALUES (2, $1, 0)",
                    [.text(UUID().uuidString.lowercased())])
            }
        }
    }

    @Test("reset removes the row; the next use creates a different identifier", arguments: Backend.allCases)
    func reset(backend: Backend) throws {
        try withMigratedDatabase(backend) { database, _ in
            let store = IdentityStore(database: database)
            let before = try store.instanceID()
            #expect(try store.reset() == .removed(before))
            #expect(try store.storedInstanceID() == nil)
            let after = try store.instanceID()
            #expect(after != before)
        }
    }
}

final class Seen: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String] = []
    func add(_ value: String) { lock.withLock { values.append(value) } }
    var all: [String] { lock.withLock { values } }
}
