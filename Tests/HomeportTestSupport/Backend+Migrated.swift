import Foundation
import HomeportServer
import HomeportStorage

extension Backend {
    /// A fresh database of this backend that already has Homeport's schema, and a function that removes it.
    ///
    /// It is a copy of one database this process migrated once: a file copy on SQLite, `CREATE DATABASE …
    /// TEMPLATE` on PostgreSQL. Migrating every test's database took ~0.2 s on PostgreSQL, about a
    /// minute of the cluster's CPU over the suite; the migrations themselves are tested on empty databases
    /// (``makeDatabaseURL()``), and a server started on a copy still runs its migrator, which finds
    /// Homeport's migrations applied and applies only a product's own.
    package func makeMigratedDatabaseURL() throws -> (url: DatabaseURL, cleanUp: @Sendable () -> Void) {
        switch self {
        case .sqlite:
            let template = try MigratedTemplates.sqlite()
            let directory = try TemporaryDirectory()
            let path = directory.file("homeport.sqlite")
            do {
                try FileManager.default.copyItem(atPath: template, toPath: path)
            } catch {
                directory.remove()
                throw error
            }
            return (.sqlite(path: path), { directory.remove() })
        case .postgres:
            let created = try TestPostgres.createDatabase(template: try MigratedTemplates.postgres())
            return (.postgres(url: created.url), { try? TestPostgres.dropDatabase(created.name) })
        }
    }
}

/// The migrated databases of this process that ``Backend/makeMigratedDatabaseURL()`` copies, made on
/// first use and removed when the process exits.
private enum MigratedTemplates {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var sqliteDirectory: TemporaryDirectory?
    nonisolated(unsafe) private static var postgresName: String?

    /// The path of a migrated SQLite file, closed so that everything is in the main file (no WAL beside it).
    static func sqlite() throws -> String {
        try lock.withLock {
            if let sqliteDirectory { return sqliteDirectory.file("template.sqlite") }
            let directory = try TemporaryDirectory()
            let path = directory.file("template.sqlite")
            do {
                try migrate(DatabaseURL.sqlite(path: path).open(options: DatabaseOptions(maximumConnections: 1)))
                guard !FileManager.default.fileExists(atPath: path + "-wal") else {
                    throw RawHTTPError("the migrated SQLite template kept a WAL file beside it: \(path)")
                }
            } catch {
                directory.remove()
                throw error
            }
            removeAtExit()
            sqliteDirectory = directory
            return path
        }
    }

    /// The name of a migrated PostgreSQL database no one stays connected to (a template must have none).
    ///
    /// Templates over a day old are dropped first, so that a developer's long-lived cluster does
    /// not collect those of runs that were killed.
    static func postgres() throws -> String {
        try lock.withLock {
            if let postgresName { return postgresName }
            try TestPostgres.dropStaleTemplates()
            let created = try TestPostgres.createDatabase(named: TestPostgres.templateName())
            do {
                try migrate(PostgresDatabase(url: created.url, options: DatabaseOptions(maximumConnections: 1)))
            } catch {
                try? TestPostgres.dropDatabase(created.name)
                throw error
            }
            removeAtExit()
            postgresName = created.name
            return created.name
        }
    }

    nonisolated(unsafe) private static var registered = false

    /// Asks, once, for the templates to be removed when the process exits.
    private static func removeAtExit() {
        guard !registered else { return }
        registered = true
        atexit {
            MigratedTemplates.lock.withLock {
                MigratedTemplates.sqliteDirectory?.remove()
                if let name = MigratedTemplates.postgresName { try? TestPostgres.dropDatabase(name) }
            }
        }
    }

    /// Migrates `database`, then closes it, thrown or not.
    private static func migrate(_ database: any Database) throws {
        defer { database.close() }
        try HomeportSchema.migrator.migrate(database)
    }
}
