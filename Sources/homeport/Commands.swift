import Foundation
import HomeportClient
import HomeportCommandLine
import HomeportWire

/// The `homeport` commands: what they share.
enum Commands {
    static func home(_ environment: [String: String]) -> String {
        if let home = environment["HOMEPORT_HOME"], !home.isEmpty { return home }
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") { return xdg + "/homeport" }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/.config/homeport"
    }

    /// The network path: `$HOMEPORT_NETWORK_PATH` when set, else derived from the system.
    static func networkPath(_ environment: [String: String]) -> (path: String, source: String) {
        if let path = environment["HOMEPORT_NETWORK_PATH"], !path.isEmpty { return (path, "HOMEPORT_NETWORK_PATH") }
        return (SystemNetworkPath.current(), "system")
    }

    /// The client over `$HOMEPORT_HOME`, sending through the proxy `--proxy` names and trusting
    /// the CA file `--ca-file` names, when `parsed` has them (directly, and the system's CAs,
    /// otherwise). Events are printed to standard error and kept in `events`.
    static func client(
        _ environment: [String: String], _ parsed: ParsedArguments? = nil, events: Events = Events(),
        configure: (inout ClientConfiguration) -> Void = { _ in }
    ) throws -> HomeportClient {
        let transport = try parsed.map(transport) ?? HomeportClient.defaultTransport()
        let home = home(environment)
        var lockTimeout = Duration.seconds(10)
        if let text = environment["HOMEPORT_LOCK_TIMEOUT"] {
            guard let seconds = Int(text), (1...3600).contains(seconds) else {
                throw UsageError("HOMEPORT_LOCK_TIMEOUT is seconds, from 1 to 3600, not '\(text)'")
            }
            lockTimeout = .seconds(seconds)
        }
        let directory = try ServerDirectory(directory: home, lockTimeout: lockTimeout)
        #if os(Linux)
            let vault: any CredentialVault = try FileVault(directory: home + "/vault")
        #else
            let vault: any CredentialVault = KeychainVault()
        #endif
        var configuration = ClientConfiguration()
        // Read again before every choice, so that a long-running command (notifications watch)
        // notices a move; a path set by hand stays as it is.
        let path = networkPath(environment)
        if path.source == "system" { configuration.networkPathSource = { SystemNetworkPath.current() } }
        configure(&configuration)
        return HomeportClient(
            directory: directory, vault: vault, transport: transport,
            configuration: configuration, networkPath: networkPath(environment).path,
            onEvent: { event in
                events.add(event)
                if let text = describe(event, directory) { warn("homeport: " + text) }
            })
    }

    /// A sentence about an event worth telling the person, or `nil`.
    static func describe(_ event: ClientEvent, _ directory: ServerDirectory) -> String? {
        switch event {
        case .identityChanged(let server, let old, let new, let alternatives):
            let primary = directory.server(server)?.primary.url ?? server
            return "\(primary) now answers as installation \(new) (was \(old))"
                + (alternatives.isEmpty
                    ? "."
                    : "; its other addresses are unverified until checked again: homeport address verify \(primary)")
        case .sessionReplaced(let server, let email, let outcome):
            switch outcome {
            case .revoked:
                return "the session this device held for \(email) on \(server) was ended on the server"
            case .notConfirmed(let reason):
                return "the session this device held for \(email) on \(server) was replaced here, but the server "
                    + "did not confirm that it ended (\(reason)); it may stay valid until it expires"
            }
        case .pushDevice(let server, let outcome):
            switch outcome {
            case .registered: return nil
            case .unregistered: return "withdrew this device's push token from \(server)"
            case .registrationFailed(let reason):
                return "could not register this device's push token with \(server) (\(reason)); "
                    + "run 'homeport push register' again later"
            case .unregistrationNotConfirmed(let reason):
                return "\(server) did not confirm that it dropped this device's push token (\(reason)); "
                    + "it was forgotten here, and the server drops it when the session ends"
            }
        case .primaryMoved(let server, let from, let to):
            return
                "\(server) moved from \(from) to \(to), which answered as the same installation: it is the primary now"
        case .signedOut, .pathChanged: return nil
        }
    }

    /// Parses and answers `--help`; `nil` means the caller should go on.
    static func parse(_ spec: CommandSpec, _ arguments: [String]) throws -> ParsedArguments? {
        try spec.parseOrShowHelp(arguments)
    }

    /// The `--proxy` option's URL, if given.
    static func proxy(_ parsed: ParsedArguments) throws -> URL? {
        guard let text = parsed.options["proxy"] else { return nil }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
            url.host != nil
        else { throw UsageError("--proxy needs a URL such as http://proxy.example.net:3128") }
        return url
    }

    /// The transport for `--proxy` and `--ca-file`.
    static func transport(_ parsed: ParsedArguments) throws -> any ClientTransport {
        let proxy = try proxy(parsed)
        guard let caFile = try caFile(parsed) else { return HomeportClient.defaultTransport(proxy: proxy) }
        #if os(Linux)
            return CurlTransport(proxy: proxy, certificateAuthorities: caFile)
        #else
            _ = caFile
            return HomeportClient.defaultTransport(proxy: proxy)
        #endif
    }

    /// `--ca-file`'s path, once it names a readable file; on Apple platforms, refused (URLSession
    /// trusts the system's CAs only).
    static func caFile(_ parsed: ParsedArguments) throws -> String? {
        guard let path = parsed.options["ca-file"] else { return nil }
        #if os(Linux)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                FileManager.default.isReadableFile(atPath: path)
            else { throw UsageError("--ca-file \(path): no readable file there") }
            return path
        #else
            throw UsageError("--ca-file needs libcurl (Linux); here, add the CA to the system's trust instead")
        #endif
    }

    /// Prints a result line, without any terminal control a server's text could have carried.
    static func say(_ text: String) {
        Output.line(ServerText.clean(text, limit: nil))
    }

    /// Prints a message to standard error, without terminal controls.
    static func warn(_ text: String) {
        Output.error(ServerText.clean(text, limit: nil))
    }

    /// Prints `object` as JSON (string values cannot carry terminal controls either).
    static func printJSON(_ object: Any) throws {
        for line in try Output.json(object).split(separator: "\n", omittingEmptySubsequences: false) {
            say(String(line))
        }
    }

    /// Reads one line of standard input (a password); a blank one is a usage error.
    static func readSecret(_ what: String) throws -> String {
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            throw UsageError("no \(what) on standard input")
        }
        return line
    }

    /// The password from the first line of standard input, which `command` takes only with
    /// `--password-stdin`.
    static func passwordFromStandardInput(_ parsed: ParsedArguments, for command: String) throws -> String {
        guard parsed.flag("password-stdin") else {
            throw UsageError("\(command) needs --password-stdin (passwords are never taken as arguments)")
        }
        return try readSecret("password")
    }

    static let serverArgument = CommandSpec.Argument(
        "SERVER", help: "Instance id, label (homeport servers rename), unique prefix, or primary URL.")
    static let jsonOption = CommandSpec.Option.flag("json", help: "Print the result as JSON.")
    static let proxyOption = CommandSpec.Option.value(
        "proxy", "URL",
        help: "Send every request through this HTTP proxy. It sees every request, the session token included, "
            + "and can answer identity probes itself: use only a proxy you trust as much as the server. "
            + "No proxy is ever taken from the environment (http_proxy, ALL_PROXY, …).")
    static let caFileOption = CommandSpec.Option.value(
        "ca-file", "PATH",
        help: "Trust the CAs in this PEM file instead of the system's (a private CA, such as Caddy's internal "
            + "one). The name in the certificate is still checked.")
}

/// The events of one command, for its JSON result.
final class Events: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [ClientEvent] = []

    func add(_ event: ClientEvent) { lock.withLock { events.append(event) } }
    var all: [ClientEvent] { lock.withLock { events } }
}
