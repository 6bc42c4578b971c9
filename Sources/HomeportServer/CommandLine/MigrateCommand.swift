import HomeportCommandLine
import HomeportStorage

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
        let components = try ServerCLI.migrate(database)
        for (component, applied, all) in components {
            // Homeport's own line reads as it always has; a product's names its component.
            let name = component == Migrator.homeportComponent ? "\(url)" : "\(url) [\(component)]"
            if applied.isEmpty {
                ServerCLI.line("\(name): up to date (schema version \(all.last ?? 0))")
            } else {
                ServerCLI.line(
                    "\(name): applied \(applied.map(String.init).joined(separator: ", ")); schema version \(all.last ?? 0)"
                )
            }
        }
        return .success
    }
}
