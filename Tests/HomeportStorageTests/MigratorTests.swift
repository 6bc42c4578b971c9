import Foundation
import HomeportStorage
import HomeportTestSupport
import Testing

@Suite("Migrations, on SQLite and PostgreSQL", .tags(.postgres))
struct MigratorTests {
    static let migrations = [
        Migration(
            version: 1, name: "things",
            statements: ["CREATE TABLE IF NOT EXISTS things (id INTEGER PRIMARY KEY, name TEXT NOT NULL)"]),
        Migration(
            version: 2, name: "things_index",
            statements: ["CREATE INDEX IF NOT EXISTS things_name ON things (name)"]),
    ]

    @Test("migrations apply once, in order, and are recorded", arguments: Backend.allCases)
    func appliesOnce(backend: Backend) throws {
        try withDatabase(backend) { database, _ in
            let migrator = Migrator(migrations: Self.migrations.reversed())
            #expect(try migrator.appliedVersions(database) == [])
            #expect(try migrator.migrate(database) == [1, 2])
            #expect(try migrator.migrate(database) == [])
            #expect(try migrator.appliedVersions(database) == [1, 2])
            let names = try database.execute("SELECT name FROM schema_migrations ORDER BY version").compactMap {
                $0.string("name")
            }
            #expect(names == ["things", "things_index"])
        }
    }

    @Test("components number their migrations apart: the same versions apply once each", arguments: Backend.allCases)
    func components(backend: Backend) throws {
        try withDatabase(backend) { database, _ in
            let own = Migrator(migrations: Self.migrations)
            let product = Migrator(
                component: "shelf",
                migrations: [
                    Migration(
                        version: 1, name: "shelf", statements: ["CREATE TABLE IF NOT EXISTS shelf_items (id INTEGER)"])
                ])
            #expect(try own.migrate(database) == [1, 2])
            #expect(try product.pendingVersions(database) == [1], "Homeport's version 1 is not the product's")
            #expect(try product.migrate(database) == [1])
            #expect(try product.migrate(database) == [])
            #expect(try own.appliedVersions(database) == [1, 2])
            #expect(try product.appliedVersions(database) == [1])
            #expect(try Migrator(component: "other", migrations: []).appliedVersions(database) == [])
            let recorded = try database.execute("SELECT component, version FROM component_migrations")
            #expect(recorded.map { $0.string("component") } == ["shelf"])
        }
    }

    @Test("a table an earlier build already created migrates cleanly (IF NOT EXISTS)", arguments: Backend.allCases)
    func preexistingTable(backend: Backend) throws {
        try withDatabase(backend) { database, _ in
            try database.execute("CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
            try database.execute("INSERT INTO things (id, name) VALUES (1, 'kept')")
            #expect(try Migrator(migrations: Self.migrations).migrate(database) == [1, 2])
            #expect(try database.execute("SELECT name FROM things").first?.string("name") == "kept")
        }
    }

    @Test("a failing migration is rolled back, not recorded, and stops the run", arguments: Backend.allCases)
    func failureRollsBack(backend: Backend) throws {
        try withDatabase(backend) { database, _ in
            let broken =
                Self.migrations + [
                    Migration(
                        version: 3, name: "broken",
                        statements: ["CREATE TABLE IF NOT EXISTS half (v INTEGER)", "THIS IS NOT SQL"]),
                    Migration(version: 4, name: "after", statements: ["CREATE TABLE IF NOT EXISTS after (v INTEGER)"]),
                ]
            #expect {
                try Migrator(migrations: broken).migrate(database)
            } throws: { error in
                if case StorageError.migrationFailed(version: 3, _) = error { return true }
                return false
            }
            let recorded = try Migrator(migrations: broken).appliedVersions(database)
            #expect(recorded == [1, 2])
            if database.dialect == .postgres {
                // PostgreSQL DDL is transactional: the half-done table is gone too.
                #expect(throws: StorageError.self) { try database.execute("SELECT * FROM half") }
            }
            #expect(throws: StorageError.self) { try database.execute("SELECT * FROM after") }
        }
    }

    @Test("several processes' worth of migrators racing apply each migration once", arguments: Backend.allCases)
    func concurrentMigrators(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let failures = Failures()
        let applied = Failures()
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            do {
                let database = try url.open(options: DatabaseOptions(maximumConnections: 1))
                defer { database.close() }
                for version in try Migrator(migrations: Self.migrations).migrate(database) {
                    applied.add(VersionApplied(version: version))
                }
            } catch {
                failures.add(error)
            }
        }
        #expect(failures.all.isEmpty, "\(failures.all)")
        #expect(applied.all.sorted() == ["1", "2"])
        let database = try url.open()
        defer { database.close() }
        #expect(try database.execute("SELECT COUNT(*) AS n FROM schema_migrations").first?.int("n") == 2)
    }
}

struct VersionApplied: Error, CustomStringConvertible {
    var version: Int
    var description: String { String(version) }
}
