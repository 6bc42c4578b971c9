import HomeportCommandLine
import HomeportServer
import HomeportStorage

/// `homeport-server`: argument parsing and wiring; the behaviour lives in HomeportServer.
enum ServerCLI {
    static let version = ServerDefaults.version

    static let overview = """
        homeport-server \(version): a Homeport server: installation identity, accounts and session tokens for native apps.

        Usage: homeport-server COMMAND [options]

        Commands:
          serve             Run the HTTP server (migrates the database first).
          migrate           Apply pending database migrations and exit.
          identity show     Print this installation's instanceId.
          identity reset    Forget the instanceId, for an independent clone (all replicas stopped).
          users             List accounts; approve, reject or hold one.
          push send         Notify an account (in-app stream and pushes).
          push devices      List the devices registered for pushes.

        Run 'homeport-server COMMAND --help' for a command's options.
        Exit codes: 0 success, 1 failure, 2 bad command line, 3 refused without confirmation.
        """

    static func run(_ arguments: [String], environment: [String: String]) -> ExitCode {
        guard let command = arguments.first else {
            Output.line(overview)
            return .success
        }
        let rest = Array(arguments.dropFirst())
        do {
            switch command {
            case "-h", "--help", "help":
                Output.line(overview)
                return .success
            case "--version", "version":
                Output.line("homeport-server \(version)")
                return .success
            case "serve":
                return try ServeCommand.run(rest, environment: environment)
            case "migrate":
                return try MigrateCommand.run(rest, environment: environment)
            case "identity":
                return try IdentityCommand.run(rest, environment: environment)
            case "users":
                return try UsersCommand.run(rest, environment: environment)
            case "push":
                return try PushCommand.run(rest, environment: environment)
            default:
                throw UsageError("unknown command '\(command)'; run 'homeport-server --help'")
            }
        } catch let error as UsageError {
            Output.error("homeport-server: \(error.description)")
            return .usage
        } catch {
            Output.error("homeport-server: error: \(error)")
            return .failure
        }
    }

    /// Parses and answers `--help`; `nil` means the caller should go on.
    static func parse(_ spec: CommandSpec, _ arguments: [String]) throws -> ParsedArguments? {
        try spec.parseOrShowHelp(arguments)
    }

    static let databaseOption = CommandSpec.Option.value(
        "database", "URL", help: "Database: sqlite:PATH or postgres://USER@HOST:PORT/DB.",
        environment: "HOMEPORT_DATABASE", default: "sqlite:$HOMEPORT_DATA_DIR/homeport.sqlite")

    static func database(_ parsed: ParsedArguments, _ spec: CommandSpec, _ environment: [String: String]) throws
        -> DatabaseURL
    {
        guard let text = parsed.value("database", spec: spec, environment: environment) else {
            return ServerDefaults.database(environment: environment)
        }
        do {
            return try DatabaseURL(parsing: text)
        } catch let error as StorageError {
            throw UsageError(error.description)
        }
    }

    static func integer(
        _ name: String, _ parsed: ParsedArguments, _ spec: CommandSpec, _ environment: [String: String],
        range: ClosedRange<Int>
    ) throws -> Int? {
        guard let text = parsed.value(name, spec: spec, environment: environment) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw UsageError(
                "--\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return value
    }
}
