import Foundation
import HomeportCommandLine
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import Synchronization

/// The server's command line — `serve`, `migrate`, `identity`, `users`, `push` — for Homeport on
/// its own (`homeport-server`) and for any product built on it (`bookorbit-server`), which gets
/// every command, flag and `--help` by calling ``main(product:)`` from its `main.swift`.
public enum ServerCommandLine {
    /// Runs the command in `arguments` (without the program's name) for `product`; returns the
    /// exit code (0 success, 1 failure, 2 bad command line, 3 refused without confirmation). A
    /// product whose declaration breaks a rule runs no command at all (`migrate` included).
    public static func run(_ arguments: [String], environment: [String: String], product: Product = .homeport)
        -> Int32
    {
        do {
            try product.validate()
        } catch {
            Output.error("\(product.commandName): \(error)")
            return ExitCode.failure.rawValue
        }
        ServerCLI.product.withLock { $0 = product }
        return ServerCLI.run(arguments, environment: environment).rawValue
    }

    /// Runs the process's command line for `product` and exits with its code.
    public static func main(product: Product = .homeport) -> Never {
        // Before anything uses OpenSSL: a push still in its TLS handshake when the process exits
        // must not find OpenSSL's state freed under it.
        CryptoLibrary.keepStateAtExit()
        exit(
            run(
                Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment,
                product: product))
    }
}

/// The command line's shared parts; the behaviour lives in the rest of HomeportServer.
enum ServerCLI {
    /// The product this process serves (set once, before any command runs).
    static let product = Mutex<Product>(.homeport)

    /// The product's command, in place of `homeport-server` in every help text and message.
    static var programName: String { product.withLock { $0.commandName } }

    static var version: String {
        product.withLock {
            $0.isHomeport ? ServerDefaults.version : "\($0.version) (Homeport \(ServerDefaults.version))"
        }
    }

    /// `text` with the program's name in place of `homeport-server`.
    static func named(_ text: String) -> String {
        let name = programName
        return name == "homeport-server" ? text : text.replacingOccurrences(of: "homeport-server", with: name)
    }

    /// Prints a line of the command's output.
    static func line(_ text: String) { Output.line(named(text)) }

    /// Prints a message to standard error.
    static func error(_ text: String) { Output.error(named(text)) }

    static var overview: String {
        """
        homeport-server \(version): \(product.withLock { $0.isHomeport }
            ? "a Homeport server: installation identity, accounts and session tokens for native apps."
            : "a server built on Homeport: its API behind Homeport's sign-in, sessions and notifications.")

        Usage: homeport-server COMMAND [options]

        Commands:
          serve             Run the HTTP server (migrates the database first).
          migrate           Apply pending database migrations and exit.
          identity show     Print this installation's instanceId.
          identity reset    Forget the instanceId, for an independent clone (all replicas stopped).
          users             List accounts; approve, reject or hold one.
          push send         Notify an account (in-app stream and pushes).
          push devices      List the devices registered for pushes.
          product-keys      Make, list or revoke keys of the product API (serve --product-listen).
          gateway serve     Run a push gateway that holds the app's APNs key for servers run by others.
          gateway servers   Enroll, list or revoke the servers that push through a gateway.

        Run 'homeport-server COMMAND --help' for a command's options.
        Exit codes: 0 success, 1 failure, 2 bad command line, 3 refused without confirmation.
        """
    }

    static func run(_ arguments: [String], environment: [String: String]) -> ExitCode {
        guard let command = arguments.first else {
            line(overview)
            return .success
        }
        let rest = Array(arguments.dropFirst())
        do {
            switch command {
            case "-h", "--help", "help":
                line(overview)
                return .success
            case "--version", "version":
                line("homeport-server \(version)")
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
            case "product-keys":
                return try ProductKeysCommand.run(rest, environment: environment)
            case "gateway":
                return try GatewayCommand.run(rest, environment: environment)
            default:
                throw UsageError("unknown command '\(command)'; run 'homeport-server --help'")
            }
        } catch let usage as UsageError {
            error("homeport-server: \(usage.description)")
            return .usage
        } catch {
            self.error("homeport-server: error: \(error)")
            return .failure
        }
    }

    /// Parses and answers `--help`; `nil` means the caller should go on.
    static func parse(_ spec: CommandSpec, _ arguments: [String]) throws -> ParsedArguments? {
        try served(spec).parseOrShowHelp(arguments)
    }

    /// `spec` as this process's product shows it: its command's name, and the defaults it brings.
    static func served(_ spec: CommandSpec) -> CommandSpec {
        let product = product.withLock { $0 }
        var spec = spec.renamingProgram("homeport-server", to: product.commandName)
        guard !product.isHomeport else { return spec }
        for index in spec.options.indices {
            switch spec.options[index].name {
            case "product": spec.options[index].defaultDescription = product.name
            case "push-key": spec.options[index].defaultDescription = product.pushAppDataKey ?? "homeport"
            default: break
            }
        }
        return spec
    }

    /// Applies every pending migration of every component (Homeport's, then the product's);
    /// returns the versions applied, by component.
    @discardableResult
    static func migrate(_ database: any Database) throws -> [(component: String, applied: [Int], all: [Int])] {
        try product.withLock { $0 }.migrators.map { migrator in
            let applied = try migrator.migrate(database)
            return (migrator.component, applied, try migrator.appliedVersions(database))
        }
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

    /// `--log-level`, checked; `nil` when not given.
    static func logLevel(_ parsed: ParsedArguments, _ spec: CommandSpec, _ environment: [String: String]) throws
        -> Logger.Level?
    {
        guard let text = parsed.value("log-level", spec: spec, environment: environment) else { return nil }
        guard let level = Logger.Level(name: text) else {
            throw UsageError("--log-level must be debug, info, notice, warning or error, not '\(text)'")
        }
        return level
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
