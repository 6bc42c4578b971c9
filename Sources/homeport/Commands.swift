import Foundation
import HomeportClient
import HomeportCommandLine
import HomeportWire

/// The `homeport` commands.
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

    /// The client over `$HOMEPORT_HOME`, sending through `proxy` only when one was named.
    /// Events worth telling are printed to standard error.
    static func client(_ environment: [String: String], proxy: URL? = nil) throws -> HomeportClient {
        let home = home(environment)
        let directory = try ServerDirectory(directory: home)
        #if os(Linux)
            let vault: any CredentialVault = try FileVault(directory: home + "/vault")
        #else
            let vault: any CredentialVault = KeychainVault()
        #endif
        return HomeportClient(
            directory: directory, vault: vault, transport: HomeportClient.defaultTransport(proxy: proxy),
            networkPath: networkPath(environment).path,
            onEvent: { event in
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
        case .signedOut, .pathChanged: return nil
        }
    }

    /// The `--proxy` option's URL, if given.
    static func proxy(_ parsed: ParsedArguments) throws -> URL? {
        guard let text = parsed.options["proxy"] else { return nil }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
            url.host != nil
        else { throw UsageError("--proxy needs a URL such as http://proxy.example.net:3128") }
        return url
    }

    static let proxyOption = CommandSpec.Option.value(
        "proxy", "URL",
        help: "Send every request through this HTTP proxy. It sees every request, the session token included, "
            + "and can answer identity probes itself: use only a proxy you trust as much as the server. "
            + "No proxy is ever taken from the environment (http_proxy, ALL_PROXY, …).")

    /// Parses and answers `--help`; `nil` means the caller should go on.
    static func parse(_ spec: CommandSpec, _ arguments: [String]) throws -> ParsedArguments? {
        try spec.parseOrShowHelp(arguments)
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
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false) {
            say(String(line))
        }
    }

    // MARK: login

    static let loginSpec = CommandSpec(
        name: "homeport login", summary: "Sign in at URL; it becomes the server's primary address.",
        arguments: [.init("URL", help: "The server's address, such as https://books.example.net.")],
        options: [
            .value("email", "EMAIL", help: "The account's address."),
            .flag("password-stdin", help: "Read the password from standard input (the only way to pass it)."),
            .flag("allow-http", help: "Allow plain HTTP for this address."),
            .flag("signup", help: "Create the account first."), proxyOption,
        ],
        discussion: """
            The password is sent once and never stored; the session token goes to the vault.
            Signing in again replaces the session this device held for the server; the old one is ended on
            the server first, and you are told if the server did not confirm that. An address that says it is
            a server enrolled at another address is believed only when that server, reached at its own
            verified addresses, knows the new session.
            """)

    static func login(_ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
        guard let parsed = try parse(loginSpec, arguments) else { return 0 }
        guard let email = parsed.options["email"] else { throw UsageError("login needs --email EMAIL") }
        guard parsed.flag("password-stdin") else {
            throw UsageError("login needs --password-stdin (passwords are never taken as arguments)")
        }
        let password = (readLine(strippingNewline: true) ?? "")
        guard !password.isEmpty else { throw UsageError("no password on standard input") }
        let address = try ServerAddress(parsing: parsed.positionals[0], allowHTTP: parsed.flag("allow-http"))
        let client = try client(environment, proxy: try proxy(parsed))
        let result =
            parsed.flag("signup")
            ? try await client.signup(at: address, email: email, password: password)
            : try await client.login(at: address, email: email, password: password)
        switch result {
        case .signedIn(let record):
            say("signed in to \(record.product ?? "server") \(record.key) as \(record.email) via \(address.url)")
            if record.instanceID == nil {
                say(
                    "\(address.url) gave no installation id (an older server, or its identity cannot be read "
                        + "now): it is used at this address only, and alternative addresses cannot be added")
            }
            return 0
        case .pending(let standing):
            let why =
                switch standing {
                case .waiting: "the account waits for approval"
                case .held: "the account is on hold"
                case .mailFailed: "the server could not send a mail it needed"
                case nil: "the server gave no reason"
                }
            warn("homeport: not signed in: \(why)")
            return 1
        }
    }

    // MARK: servers

    static let serversSpec = CommandSpec(
        name: "homeport servers", summary: "List enrolled servers and their addresses.",
        options: [.flag("json", help: "Print JSON.")])

    static func servers(_ arguments: [String], _ environment: [String: String]) throws -> Int32 {
        guard let parsed = try parse(serversSpec, arguments) else { return 0 }
        let client = try client(environment)
        let path = client.networkPath
        let records = client.directory.all
        if parsed.flag("json") {
            try printJSON(
                records.map { record -> [String: Any] in
                    [
                        "server": record.key, "instanceId": record.instanceID?.description ?? NSNull(),
                        "product": record.product ?? NSNull(), "email": record.email, "primary": record.primary.url,
                        "signedIn": !record.signedOut,
                        "alternatives": record.alternatives.map {
                            [
                                "address": $0.address.url, "verifiedHere": $0.verifiedPaths[path] != nil,
                                "verified": $0.isVerified,
                            ] as [String: Any]
                        },
                    ]
                })
            return 0
        }
        if records.isEmpty { say("no servers yet: homeport login URL --email EMAIL --password-stdin") }
        for record in records {
            say(
                "\(record.key)  \(record.product ?? "")  \(record.email)\(record.signedOut ? "  (signed out)" : "")")
            say("  primary      \(record.primary.url)")
            for alternative in record.alternatives {
                let state =
                    alternative.verifiedPaths[path] != nil
                    ? "verified on this network" : alternative.isVerified ? "verified elsewhere" : "unverified"
                say("  alternative  \(alternative.address.url)  (\(state))")
            }
        }
        return 0
    }

    // MARK: address

    static func addressSpec(_ action: String) -> CommandSpec {
        CommandSpec(
            name: "homeport address \(action)",
            summary: action == "add"
                ? "Add an alternative address after checking it is the same installation (nothing secret is sent)."
                : action == "remove"
                    ? "Remove an alternative address." : "Probe every address of SERVER on this network.",
            arguments: action == "verify"
                ? [.init("SERVER", help: "Instance id, unique prefix, or primary URL.")]
                : [
                    .init("SERVER", help: "Instance id, unique prefix, or primary URL."),
                    .init("URL", help: "The address."),
                ],
            options: action == "add"
                ? [.flag("allow-http", help: "Allow plain HTTP for this address."), proxyOption]
                : action == "verify" ? [proxyOption] : [])
    }

    static func address(_ action: String, _ arguments: [String], _ environment: [String: String]) async throws -> Int32
    {
        guard ["add", "remove", "verify"].contains(action) else {
            throw UsageError("unknown address action '\(action)'; use add, remove or verify")
        }
        guard let parsed = try parse(addressSpec(action), arguments) else { return 0 }
        let client = try client(environment, proxy: try proxy(parsed))
        let server = parsed.positionals[0]
        switch action {
        case "add":
            let address = try ServerAddress(parsing: parsed.positionals[1], allowHTTP: parsed.flag("allow-http"))
            let existed = try client.directory.find(server).alternatives.contains { $0.address.url == address.url }
            let record = try await client.addAddress(address, to: server)
            if existed {
                say(
                    "\(address.url) was already an alternative of \(record.key); it still answers as it: "
                        + "verified again on this network")
            } else {
                say("\(address.url) answers as \(record.key): added, and verified on this network")
            }
        case "remove":
            let address = try ServerAddress(parsing: parsed.positionals[1], allowHTTP: true)
            let record = try client.directory.find(server)
            try client.removeAddress(address, from: server)
            say("removed \(address.url) from \(record.key)")
        default:
            let results = try await client.verifyAddresses(of: server)
            var allGood = true
            for (address, outcome) in results {
                allGood = allGood && outcome.isMatch
                say("\(address.url)  \(outcome.isMatch ? "verified" : outcome.description)")
            }
            return allGood ? 0 : 3
        }
        return 0
    }

    // MARK: whoami, logout, remove

    static let whoamiSpec = CommandSpec(
        name: "homeport whoami", summary: "Call app-info through the address chosen on this network, and say which.",
        arguments: [.init("SERVER", help: "Instance id, unique prefix, or primary URL.")],
        options: [.flag("json", help: "Print JSON: {server, via, appInfo}."), proxyOption])

    static func whoami(_ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
        guard let parsed = try parse(whoamiSpec, arguments) else { return 0 }
        let client = try client(environment, proxy: try proxy(parsed))
        let before = try client.directory.find(parsed.positionals[0])
        let (info, via) = try await client.appInfo(before.key)
        // After an identity change the server is stored under its new id.
        let record = info.instanceId.flatMap { client.directory.server($0.description) } ?? before
        if parsed.flag("json") {
            try printJSON([
                "server": record.key, "email": record.email, "via": via.url,
                "appInfo": [
                    "product": info.product, "version": info.version, "protocolVersion": info.protocolVersion,
                    "features": info.features, "instanceId": info.instanceId?.description ?? NSNull(),
                ] as [String: Any],
            ])
        } else {
            say(
                "\(record.email) on \(info.product) \(info.version) (\(record.key)) via \(via.url)"
                    + (info.instanceId == nil ? "; the server could not say its installation id now" : ""))
        }
        return 0
    }

    static func serverOnly(_ name: String, _ summary: String, options: [CommandSpec.Option] = []) -> CommandSpec {
        CommandSpec(
            name: "homeport \(name)", summary: summary,
            arguments: [.init("SERVER", help: "Instance id, unique prefix, or primary URL.")], options: options)
    }

    static func logout(_ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
        guard
            let parsed = try parse(
                serverOnly(
                    "logout", "Sign out; the local session is erased even when the server cannot be asked.",
                    options: [proxyOption]), arguments)
        else { return 0 }
        switch try await client(environment, proxy: try proxy(parsed)).logout(parsed.positionals[0]) {
        case .revoked:
            say("signed out: the server ended the session")
        case .notConfirmed(let reason):
            say(
                "signed out on this device only: the server did not confirm that the session ended (\(reason)); "
                    + "it may stay valid until it expires")
        }
        return 0
    }

    static func remove(_ arguments: [String], _ environment: [String: String]) throws -> Int32 {
        guard let parsed = try parse(serverOnly("remove", "Forget SERVER locally (not a remote sign-out)."), arguments)
        else { return 0 }
        let client = try client(environment)
        let record = try client.directory.find(parsed.positionals[0])
        try client.remove(record.key)
        say("removed \(record.key) and its credential from this device (the server was not asked to end the session)")
        return 0
    }

    // MARK: network

    static let networkSpec = CommandSpec(
        name: "homeport network",
        summary: "Show the network path the client is on: verifications made on another path do not count here.",
        options: [.flag("json", help: "Print JSON: {networkPath, source}.")],
        discussion: """
            On Linux the path is derived from the default route: its interface, its gateway and the gateway's
            hardware address (from the neighbour table). $HOMEPORT_NETWORK_PATH overrides it.
            """)

    static func network(_ arguments: [String], _ environment: [String: String]) throws -> Int32 {
        guard let parsed = try parse(networkSpec, arguments) else { return 0 }
        let (path, source) = networkPath(environment)
        if parsed.flag("json") {
            try printJSON(["networkPath": path, "source": source])
        } else {
            say("\(path)  (from \(source == "system" ? "the system" : "$" + source))")
        }
        return 0
    }
}
