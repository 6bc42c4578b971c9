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

/// Applies one component's migrations in order and records each, so that Homeport's own schema
/// and a product's (or several products') never collide: each component numbers its migrations
/// from 1 on its own.
///
/// Homeport's component (``homeportComponent``) records in `schema_migrations`, as it always has;
/// every other component records in `component_migrations`, under its name.
///
/// Safe to run from several processes at once: PostgreSQL serialises runs with an advisory
/// lock, SQLite with its write lock; each migration and its record commit together.
package struct Migrator: Sendable {
    /// The component whose migrations these are.
    package let component: String
    /// The migrations, in any order; they apply by ascending version.
    package let migrations: [Migration]

    /// The name of Homeport's own component.
    package static let homeportComponent = "homeport"

    private static let advisoryLockKey: Int64 = 0x486F_6D65_706F_7274  // "Homeport"

    /// Creates a migrator of `component`; versions must be unique, and a component's name is
    /// lowercase letters, digits, `-` and `_` (it names the component's tables too).
    package init(component: String = Migrator.homeportComponent, migrations: [Migration]) {
        precondition(Self.isComponentName(component), "a component's name is 1–64 of a-z 0-9 - _")
        precondition(Set(migrations.map(\.version)).count == migrations.count, "duplicate migration version")
        self.component = component
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// Whether `name` can name a component: 1–64 of `a-z 0-9 - _`, starting with a letter.
    package static func isComponentName(_ name: String) -> Bool {
        guard let first = name.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first) else {
            return false
        }
        return name.utf8.count <= 64
            && name.utf8.allSatisfy {
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
            }
    }

    /// Homeport's own records keep their table; other components share one, keyed by name.
    private var isHomeport: Bool { component == Self.homeportComponent }
    private var recordTable: String { isHomeport ? "schema_migrations" : "component_migrations" }
    /// The condition (and its parameter) that selects this component's records; `$1` is the version
    /// where one is compared, so the component is `$2`.
    private var componentCondition: String { isHomeport ? "" : " AND component = $2" }
    private var componentParameters: [SQLValue] { isHomeport ? [] : [.text(component)] }

    /// Applies every pending migration and returns the versions applied by this call.
    ///
    /// On SQLite, several processes starting at once on one file take turns with the write lock;
    /// one that waits past the busy timeout (a loaded machine) tries again, for up to a minute,
    /// skipping what the others applied meanwhile.
    @discardableResult
    package func migrate(_ database: any Database) throws -> [Int] {
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
                isHomeport
                    ? """
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        version INTEGER PRIMARY KEY,
                        name TEXT NOT NULL,
                        applied_at BIGINT NOT NULL
                    )
                    """
                    : """
                    CREATE TABLE IF NOT EXISTS component_migrations (
                        component TEXT NOT NULL,
                        version INTEGER NOT NULL,
                        name TEXT NOT NULL,
                        applied_at BIGINT NOT NULL,
                        PRIMARY KEY (component, version)
                    )
                    """, [])
            for migration in migrations where try apply(migration, connection, database.dialect) {
                applied.append(migration.version)
            }
        }
    }

    /// The versions recorded as applied, ascending; empty when nothing was ever migrated.
    package func appliedVersions(_ database: any Database) throws -> [Int] {
        let exists: Bool
        switch database.dialect {
        case .sqlite:
            exists =
                !(try database.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name = $1", [.text(recordTable)])).isEmpty
        case .postgres:
            exists =
                try database.execute("SELECT to_regclass($1) IS NOT NULL AS present", [.text(recordTable)])
                .first?.int("present") == 1
        }
        guard exists else { return [] }
        let condition = isHomeport ? "" : " WHERE component = $1"
        return try database.execute(
            "SELECT version FROM \(recordTable)\(condition) ORDER BY version", componentParameters
        )
        .compactMap { $0.int("version").map(Int.init) }
    }

    /// The versions this migrator knows that are not applied yet, ascending.
    package func pendingVersions(_ database: any Database) throws -> [Int] {
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
                "SELECT version FROM \(recordTable) WHERE version = $1\(componentCondition)",
                [.integer(Int64(migration.version))] + componentParameters)
            guard recorded.isEmpty else {
                _ = try connection.execute("COMMIT", [])
                return false
            }
            for statement in migration.statements(for: dialect) {
                guard let idempotent = try Self.idempotent(statement, dialect: dialect, connection) else { continue }
                _ = try connection.execute(idempotent, [])
            }
            let record: [SQLValue] = [
                .integer(Int64(migration.version)), .text(migration.name),
                .integer(Int64(Date().timeIntervalSince1970)),
            ]
            _ = try connection.execute(
                isHomeport
                    ? "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)"
                    : "INSERT INTO component_migrations (version, name, applied_at, component) VALUES ($1, $2, $3, $4)",
                record + componentParameters)
            _ = try connection.execute("COMMIT", [])
            return true
        } catch {
            if !connection.isBroken { _ = try? connection.execute("ROLLBACK", []) }
            throw StorageError.migrationFailed(version: migration.version, message: String(describing: error))
        }
    }
}

extension Migrator {
    /// `statement` made safe to run again, or `nil` when it has nothing left to do: an
    /// `ALTER TABLE T ADD COLUMN C …` is `ADD COLUMN IF NOT EXISTS` on PostgreSQL, and is left
    /// out on SQLite (which has no such clause) when `T` has a column `C` already. (A migration
    /// runs again when its record is lost; every other statement is written idempotent.)
    static func idempotent(_ statement: String, dialect: SQLDialect, _ connection: any DatabaseConnection) throws
        -> String?
    {
        let words = statement.split(whereSeparator: \.isWhitespace)
        guard words.count > 6, words[0].uppercased() == "ALTER", words[1].uppercased() == "TABLE",
            words[3].uppercased() == "ADD", words[4].uppercased() == "COLUMN", words[5].uppercased() != "IF"
        else { return statement }
        let table = String(words[2])
        let column = String(words[5])
        switch dialect {
        case .postgres:
            guard let range = statement.range(of: String(words[4]) + " ") else { return statement }
            return statement.replacingCharacters(in: range, with: String(words[4]) + " IF NOT EXISTS ")
        case .sqlite:
            let present = try connection.execute(
                "SELECT 1 FROM pragma_table_info($1) WHERE name = $2", [.text(table), .text(column)])
            return present.isEmpty ? statement : nil
        }
    }
}
