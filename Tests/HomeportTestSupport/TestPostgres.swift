import Foundation
import HomeportStorage

/// The PostgreSQL cluster that `scripts/test` starts, reached through `HOMEPORT_TEST_POSTGRES_URL`.
///
/// PostgreSQL tests never skip: without the variable they fail and say how to run them.
package enum TestPostgres {
    /// The admin URL, or an error telling how to get one.
    package static func adminURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["HOMEPORT_TEST_POSTGRES_URL"], !url.isEmpty else {
            throw RawHTTPError(
                "HOMEPORT_TEST_POSTGRES_URL is not set: run the suite with scripts/test, which starts a throwaway cluster"
            )
        }
        return url
    }

    /// Creates a new database, empty or a copy of `template`, and returns its URL.
    package static func createDatabase(template: String? = nil) throws -> (name: String, url: String) {
        try createDatabase(
            named: "homeport_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16),
            template: template)
    }

    /// Creates the database `name`, empty or a copy of `template`, and returns its URL.
    package static func createDatabase(named name: String, template: String? = nil) throws -> (
        name: String, url: String
    ) {
        let admin = try adminURL()
        let database = try PostgresDatabase(url: admin, options: DatabaseOptions(maximumConnections: 1))
        defer { database.close() }
        try database.execute("CREATE DATABASE \(name)" + (template.map { " TEMPLATE \($0)" } ?? ""))
        return (name, databaseURL(admin, name: name))
    }

    /// How the names of migrated templates begin: then the Unix time it was made, `_`, and random
    /// hex (a process ID would not do: test processes in two containers can share one cluster and
    /// one process ID).
    package static let templatePrefix = "homeport_template_"

    /// A new template's name, made at `now`.
    package static func templateName(now: Int = Int(Date().timeIntervalSince1970)) -> String {
        templatePrefix + "\(now)_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
    }

    /// Drops the migrated templates made over a day ago: a run that ended without dropping its own
    /// (killed, or stopped in a debugger) leaves one, and no test run lasts a day.
    package static func dropStaleTemplates(now: Int = Int(Date().timeIntervalSince1970)) throws {
        let database = try PostgresDatabase(url: try adminURL(), options: DatabaseOptions(maximumConnections: 1))
        defer { database.close() }
        let names = try database.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE $1", [.text(templatePrefix + "%")]
        ).compactMap { $0.string("datname") }
        for name in names {
            guard let made = Int(name.dropFirst(templatePrefix.count).prefix { $0 != "_" }), now - made > 86_400
            else { continue }
            try database.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        }
    }

    /// Drops a database, disconnecting anyone still connected.
    package static func dropDatabase(_ name: String) throws {
        let database = try PostgresDatabase(url: try adminURL(), options: DatabaseOptions(maximumConnections: 1))
        defer { database.close() }
        try database.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }

    private static func databaseURL(_ admin: String, name: String) -> String {
        var components = URLComponents(string: admin)!
        components.path = "/" + name
        return components.string!
    }
}

/// The two storage backends, for tests that must pass on both.
package enum Backend: String, CaseIterable, Sendable, CustomStringConvertible {
    /// An SQLite file in a temporary directory.
    case sqlite
    /// A fresh PostgreSQL database in the test cluster.
    case postgres

    /// The name shown in test output.
    package var description: String { rawValue }

    /// A fresh, empty database of this backend and a function that removes it.
    package func makeDatabaseURL() throws -> (url: DatabaseURL, cleanUp: @Sendable () -> Void) {
        switch self {
        case .sqlite:
            let directory = try TemporaryDirectory()
            return (.sqlite(path: directory.file("homeport.sqlite")), { directory.remove() })
        case .postgres:
            let created = try TestPostgres.createDatabase()
            return (.postgres(url: created.url), { try? TestPostgres.dropDatabase(created.name) })
        }
    }
}

extension DatabaseURL {
    /// The URL as the command line takes it (with any password).
    package var rawText: String {
        switch self {
        case .sqlite(let path): "sqlite:" + path
        case .postgres(let url): url
        }
    }
}
