import Foundation
import HomeportCommandLine

/// `homeport-server oidc add|list|remove`: the OpenID Connect providers people sign in with.
enum OIDCCommand {
    static func spec(_ action: String) -> CommandSpec {
        switch action {
        case "add":
            CommandSpec(
                name: "homeport-server oidc add",
                summary: "Let people sign in with an OpenID Connect provider (Authentik, Authelia, Keycloak, …).",
                arguments: [
                    .init(
                        "ID", help: "The provider's id here, as apps name it: 1–64 of a-z 0-9 . _ - (e.g. 'authentik')."
                    )
                ],
                options: [
                    ServerCLI.databaseOption,
                    .value(
                        "issuer", "URL",
                        help:
                            "The provider's issuer, exactly as its ID tokens say it (its discovery document is ISSUER/.well-known/openid-configuration). HTTPS; plain http:// only on a loopback address (a provider on this machine, tests)."
                    ),
                    .value("client-id", "CID", help: "The client id Homeport is registered with at the provider."),
                    .value(
                        "client-secret-file", "FILE",
                        help:
                            "A file holding that client's secret, for the web door's sign-in (read when it is used; only its path is stored; one every user may open is warned of)."
                    ),
                    .value("name", "NAME", help: "The name on buttons and in apps.", default: "ID"),
                    .value(
                        "app-client-id", "CID",
                        help:
                            "A client id the provider issues tokens to apps with (a public client; give it once per id). Apps run the provider's flow with the first; tokens for any of them, or for --client-id, are accepted.",
                        default: "--client-id"),
                    .value("scopes", "SCOPES", help: "The scopes asked for.", default: OIDCProvider.defaultScopes),
                    .flag(
                        "link-verified-email",
                        help:
                            "Sign a person's first provider sign-in in to the account with the same address, when the provider says the address is verified (email_verified: true). Without it, such a sign-in asks for another address: trust a provider with this only if it verifies addresses and nobody can choose theirs."
                    ),
                ],
                discussion: """
                    Takes effect at once on every server that shares the database. The provider must
                    be reachable from the server (its discovery document and keys are fetched when
                    first needed; a CA of your own: HOMEPORT_OIDC_CA_FILE when serving).
                    """)
        case "remove":
            CommandSpec(
                name: "homeport-server oidc remove",
                summary:
                    "Stop accepting sign-ins through a provider (its links to accounts are kept, for if it is added again).",
                arguments: [.init("ID", help: "The provider's id.")], options: [ServerCLI.databaseOption])
        default:
            CommandSpec(
                name: "homeport-server oidc list", summary: "List the OpenID Connect providers.",
                options: [
                    ServerCLI.databaseOption,
                    .flag(
                        "json",
                        help:
                            "Print a JSON array of {id, name, issuer, clientId, appClientIds, scopes, linkVerifiedEmail, clientSecretFile}."
                    ),
                ])
        }
    }

    static let overview = """
        Usage: homeport-server oidc add|list|remove [ID] [options]

        The OpenID Connect providers people sign in with, besides a password: an app hands the
        server an ID token it got from the provider (auth/provider/token). Kept in the database,
        so every replica serves the same ones.
        """

    static func run(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard
            let (action, rest) = try ServerCLI.action(
                of: "oidc", among: ["add", "list", "remove"], overview: overview, arguments)
        else { return .success }
        let spec = spec(action)
        guard let parsed = try ServerCLI.parse(spec, rest) else { return .success }
        let provider = action == "add" ? try provider(parsed, spec, environment) : nil
        let database = try ServerCLI.database(parsed, spec, environment).open()
        defer { database.close() }
        try ServerCLI.migrate(database)
        let store = OIDCProviderStore(database)
        switch action {
        case "add":
            guard let provider else { return .failure }
            guard try store.add(provider, now: Int64(Date().timeIntervalSince1970)) else {
                ServerCLI.error("homeport-server: a provider named '\(provider.id)' exists; remove it first")
                return .failure
            }
            ServerCLI.line("\(provider.id): added (\(provider.issuer))")
        case "remove":
            let id = parsed.positionals[0]
            guard try store.remove(id: id) else {
                ServerCLI.error("homeport-server: no provider is named '\(id)'")
                return .failure
            }
            ServerCLI.line("\(id): removed")
        default:
            let providers = try store.all()
            if parsed.flag("json") {
                try ServerCLI.printJSON(
                    providers.map {
                        [
                            "id": $0.id, "name": $0.name, "issuer": $0.issuer, "clientId": $0.clientID,
                            "appClientIds": $0.appClientIDs, "scopes": $0.scopes,
                            "linkVerifiedEmail": $0.linkVerifiedEmail,
                            "clientSecretFile": $0.clientSecretFile ?? NSNull(),
                        ] as [String: Any]
                    })
            } else if providers.isEmpty {
                ServerCLI.line("no OpenID Connect providers yet")
            } else {
                for provider in providers {
                    ServerCLI.line(
                        "\(provider.id)  \(provider.name)  \(provider.issuer)  client \(provider.clientID)"
                            + (provider.appClientIDs.isEmpty
                                ? "" : "  apps \(provider.appClientIDs.joined(separator: ","))")
                            + (provider.linkVerifiedEmail ? "  links verified addresses" : ""))
                }
            }
        }
        return .success
    }

    /// The provider `oidc add` describes, checked before the database is opened.
    static func provider(_ parsed: ParsedArguments, _ spec: CommandSpec, _ environment: [String: String]) throws
        -> OIDCProvider
    {
        let id = parsed.positionals[0]
        guard OIDCProvider.isValidID(id) else {
            throw UsageError("a provider's id is 1–64 of a-z 0-9 . _ -, not '\(id)'")
        }
        guard let issuer = parsed.value("issuer", spec: spec, environment: environment) else {
            throw UsageError("oidc add needs --issuer URL")
        }
        if let problem = OIDCProvider.issuerProblem(issuer) { throw UsageError("--issuer \(issuer): \(problem)") }
        guard let clientID = parsed.value("client-id", spec: spec, environment: environment),
            Self.isClientID(clientID)
        else { throw UsageError("oidc add needs --client-id CID (printable, without spaces)") }
        let appClientIDs = parsed.values("app-client-id")
        if let bad = appClientIDs.first(where: { !Self.isClientID($0) }) {
            throw UsageError("--app-client-id must be printable, without spaces, not '\(bad)'")
        }
        var secretFile: String?
        if let file = parsed.value("client-secret-file", spec: spec, environment: environment) {
            // Read now only to refuse a file the server could not read; the secret is not kept.
            guard let secret = try? String(contentsOfFile: file, encoding: .utf8),
                !secret.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
            else { throw UsageError("cannot read a secret from --client-secret-file \(file)") }
            secretFile = URL(fileURLWithPath: file).standardizedFileURL.path
            if let warning = PrivateFile.exposure(file, what: "client secret file") { ServerCLI.error(warning) }
        }
        let scopes = parsed.value("scopes", spec: spec, environment: environment) ?? OIDCProvider.defaultScopes
        let scopeList = scopes.split(separator: " ")
        guard scopeList.contains("openid"), scopeList.allSatisfy({ Self.isClientID(String($0)) }) else {
            throw UsageError("--scopes must be space-separated and include openid, not '\(scopes)'")
        }
        let name = parsed.value("name", spec: spec, environment: environment) ?? id
        guard (1...64).contains(name.count), !name.contains(where: { $0.isNewline }) else {
            throw UsageError("--name is 1–64 characters on one line")
        }
        return OIDCProvider(
            id: id, name: name, issuer: issuer, clientID: clientID, clientSecretFile: secretFile,
            appClientIDs: appClientIDs, scopes: scopeList.joined(separator: " "),
            linkVerifiedEmail: parsed.flag("link-verified-email"))
    }

    /// Whether `text` can be a client id or a scope: 1–255 printable ASCII characters, no spaces.
    static func isClientID(_ text: String) -> Bool {
        (1...255).contains(text.utf8.count) && text.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }
}
