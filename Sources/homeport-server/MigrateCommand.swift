import HomeportCommandLine
import HomeportServer

/// `homeport-server migrate`
enum MigrateCommand {
    static let spec = CommandSpec(
        name: "homeport-server migrate",
        summary: "Apply pending database migrations and exit. 'serve' does this too on start.",
        options: [ServerCLI.databaseOption],
        discussion: "Safe to run while other replicas start or run: migrations are serialised and idempotent.")

    static func run(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard let parsed = try ServerCLI.parse(spec, arguments) else { return .success }
        let url = try ServerCLI.database(parsed, spec, environment)
        let database = try url.open()
        defer { database.close() }
        let applied = try HomeportSchema.migrator.migrate(database)
        let all = try HomeportSchema.migrator.appliedVersions(database)
        if applied.isEmpty {
            Output.line("\(url): up to date (schema version \(all.last ?? 0))")
        } else {
            Output.line(
                "\(url): applied \(applied.map(String.init).joined(separator: ", ")); schema version \(all.last ?? 0)")
        }
        return .success
    }
}
