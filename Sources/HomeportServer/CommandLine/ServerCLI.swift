import Foundation
import HomeportCommandLine
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import Synchronization

/// The server's command line — `serve`, `migrate`, `identity`, `users`, `invites`, `push`,
/// `product-keys`, `oidc` — for Homeport on
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
        main(product: product, adding: [])
    }

    /// Runs the process's command line for `product`, with `commands` added to it (as
    /// `homeport-server` adds the push gateway's), and exits with its code.
    package static func main(product: Product = .homeport, adding commands: [AddedCommand]) -> Never {
        // Before anything uses OpenSSL: a push still in its TLS handshake when the process exits
        // must not find OpenSSL's state freed under it.
        CryptoLibrary.keepStateAtExit()
        ServerCLI.added.withLock { $0 = commands }
        exit(
            run(
                Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment,
                product: product))
    }
}

/// A command a program adds to the server's command line: `homeport-server` adds `gateway`, from
/// HomeportGateway, which builds on this module.
package struct AddedCommand: Sendable {
    /// The word that runs it.
    package var name: String
    /// Its lines in the overview's list of commands.
    package var overview: [String]
    /// Runs it with the arguments after its name.
    package var run: @Sendable (_ arguments: [String], _ environment: [String: String]) throws -> ExitCode

    /// Declares a command.
    package init(
        _ name: String, overview: [String],
        run: @escaping @Sendable (_ arguments: [String], _ environment: [String: String]) throws -> ExitCode
    ) {
        self.name = name
        self.overview = overview
        self.run = run
    }
}

/// The command line's shared parts; the behaviour lives in the rest of HomeportServer.
package enum ServerCLI {
    /// The product this process serves (set once, before any command runs).
    static let product = Mutex<Product>(.homeport)

    /// The commands the program added (set once, before any command runs).
    static let added = Mutex<[AddedCommand]>([])

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
    package static func line(_ text: String) { Output.line(named(text)) }

    /// Prints a message to standard error.
    package static func error(_ text: String) { Output.error(named(text)) }

    /// Prints `object` as one line of JSON with sorted keys: a command's `--json` answer. Not
    /// renamed for a product, as ``line(_:)`` is: the data is printed as it is (JSON escapes
    /// every control character, so none reaches the terminal).
    package static func printJSON(_ object: Any) throws {
        Output.line(try Output.json(object, compact: true))
    }

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
          users             List accounts; approve, reject or hold one; give groups.
          invites           Make, list or revoke invitations (sign-up without waiting for approval).
          push send         Notify an account (in-app stream and pushes).
          push devices      List the devices registered for pushes.
          push vapid-key    Print the VAPID public key Web Push subscribes with.
          product-keys      Make, list or revoke keys of the product API (serve --product-listen).
          oidc              Add, list or remove OpenID Connect providers people sign in with.\
        \(added.withLock { $0.flatMap(\.overview) }.map { "\n  \($0)" }.joined())

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
            case "invites":
                return try InvitesCommand.run(rest, environment: environment)
            case "oidc":
                return try OIDCCommand.run(rest, environment: environment)
            default:
                guard let added = added.withLock({ $0.first { $0.name == command } }) else {
                    throw UsageError("unknown command '\(command)'; run 'homeport-server --help'")
                }
                return try added.run(rest, environment)
            }
        } catch let usage as UsageError {
            error("homeport-server: \(usage.description)")
            return .usage
        } catch {
            self.error("homeport-server: error: \(error)")
            return .failure
        }
    }

    /// The action of a command that has several (`invites create`), and the arguments after it;
    /// `nil` when `--help` asked for the command's `overview` (printed). No action, or one not
    /// among `actions`, is a usage error that names them.
    package static func action(of command: String, among actions: [String], overview: String, _ arguments: [String])
        throws -> (name: String, rest: [String])?
    {
        let named =
            actions.count < 2
            ? actions.joined() : actions.dropLast().joined(separator: ", ") + " or " + (actions.last ?? "")
        guard let action = arguments.first, !action.hasPrefix("-") else {
            if arguments.contains("--help") || arguments.contains("-h") {
                line(overview)
                return nil
            }
            throw UsageError("\(command) needs an action: \(named)")
        }
        guard actions.contains(action) else { throw UsageError("unknown \(command) action '\(action)'; use \(named)") }
        return (action, Array(arguments.dropFirst()))
    }

    /// Parses and answers `--help`; `nil` means the caller should go on.
    package static func parse(_ spec: CommandSpec, _ arguments: [String]) throws -> ParsedArguments? {
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
    package static func logLevel(_ parsed: ParsedArguments, _ spec: CommandSpec, _ environment: [String: String]) throws
        -> Logger.Level?
    {
        guard let text = parsed.value("log-level", spec: spec, environment: environment) else { return nil }
        guard let level = Logger.Level(name: text) else {
            throw UsageError("--log-level must be debug, info, notice, warning or error, not '\(text)'")
        }
        return level
    }

    package static func integer(
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
