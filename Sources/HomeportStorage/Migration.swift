import Foundation

/// One numbered schema change. Its statements must be idempotent (`IF NOT EXISTS`), so a
/// database that already holds the change (from an earlier build) migrates cleanly.
public struct Migration: Sendable {
    /// The version number; migrations apply in ascending order, each once.
    public let version: Int
    /// A short name, recorded with the version.
    public let name: String
    private let statementsFor: @Sendable (SQLDialect) -> [String]

    /// A migration whose statements are the same on every backend.
    public init(version: Int, name: String, statements: [String]) {
        self.version = version
        self.name = name
        self.statementsFor = { _ in statements }
    }

    /// A migration whose statements differ by backend.
    public init(version: Int, name: String, statements: @escaping @Sendable (SQLDialect) -> [String]) {
        self.version = version
        self.name = name
        self.statementsFor = statements
    }

    /// The statements to run on `dialect`.
    public func statements(for dialect: SQLDialect) -> [String] {
        statementsFor(dialect)
    }
}

/// Applies migrations in order and records each in `schema_migrations`.
///
/// Safe to run from several processes at once: PostgreSQL serialises runs with an advisory
/// lock, SQLite with its write lock; each migration and its record commit together.
public struct Migrator: Sendable {
    /// The migrations, in any order; they apply by ascending version.
    public let migrations: [Migration]

    private static let advisoryLockKey: Int64 = 0x486F_6D65_706F_7274  // "Homeport"

    /// Creates a migrator; versions must be unique.
    public init(migrations: [Migration]) {
        precondition(Set(migrations.map(\.version)).count == migrations.count, "duplicate migration version")
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// Applies every pending migration and returns the versions applied by this call.
    ///
    /// On SQLite, several processes starting at once on one file take turns with the write lock;
    /// one that waits past the busy timeout (a loaded machine) tries again, for up to a minute,
    /// skipping what the others applied meanwhile.
    @discardableResult
    public func migrate(_ database: any Database) throws -> [Int] {
        let deadline = ContinuousClock.now.advanced(by: .seconds(60))
        var applied: [Int] = []
        while true {
            do {
                try migrateOnce(database, applied: &applied)
                return applied
            } catch StorageError.busy where database.dialect == .sqlite && ContinuousClock.now < deadline {
                continue
            } catch StorageError.migrationFailed(_, let message)
                where database.dialect == .sqlite && ContinuousClock.now < deadline && message.contains("locked")
            {
                continue
            }
        }
    }

    private func migrateOnce(_ database: any Database, applied: inout [Int]) throws {
        try database.withConnection { connection in
            if database.dialect == .postgres {
                _ = try connection.execute("SELECT pg_advisory_lock($1)", [.integer(Self.advisoryLockKey)])
            }
            defer {
                if database.dialect == .postgres && !connection.isBroken {
                    _ = try? connection.execute("SELECT pg_advisory_unlock($1)", [.integer(Self.advisoryLockKey)])
                }
            }
            _ = try connection.execute(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    applied_at BIGINT NOT NULL
                )
                """, [])
            for migration in migrations where try apply(migration, connection, database.dialect) {
                applied.append(migration.version)
            }
        }
    }

    /// The versions recorded as applied, ascending; empty when nothing was ever migrated.
    public func appliedVersions(_ database: any Database) throws -> [Int] {
        let exists: Bool
        switch database.dialect {
        case .sqlite:
            exists =
                !(try database.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")).isEmpty
        case .postgres:
            exists =
                try database.execute("SELECT to_regclass('schema_migrations') IS NOT NULL AS present")
                .first?.int("present") == 1
        }
        guard exists else { return [] }
        return try database.execute("SELECT version FROM schema_migrations ORDER BY version")
            .compactMap { $0.int("version").map(Int.init) }
    }

    /// The versions this migrator knows that are not applied yet, ascending.
    public func pendingVersions(_ database: any Database) throws -> [Int] {
        let applied = Set(try appliedVersions(database))
        return migrations.map(\.version).filter { !applied.contains($0) }
    }

    /// Runs one migration in its own transaction unless it is already recorded.
    private func apply(_ migration: Migration, _ connection: any DatabaseConnection, _ dialect: SQLDialect) throws
        -> Bool
    {
        _ = try connection.execute(dialect == .sqlite ? "BEGIN IMMEDIATE" : "BEGIN", [])
        do {
            let recorded = try connection.execute(
                "SELECT version FROM schema_migrations WHERE version = $1", [.integer(Int64(migration.version))])
            guard recorded.isEmpty else {
                _ = try connection.execute("COMMIT", [])
                return false
            }
            for statement in migration.statements(for: dialect) {
                _ = try connection.execute(statement, [])
            }
            _ = try connection.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
                [
                    .integer(Int64(migration.version)), .text(migration.name),
                    .integer(Int64(Date().timeIntervalSince1970)),
                ])
            _ = try connection.execute("COMMIT", [])
            return true
        } catch {
            if !connection.isBroken { _ = try? connection.execute("ROLLBACK", []) }
            throw StorageError.migrationFailed(version: migration.version, message: String(describing: error))
        }
    }
}
