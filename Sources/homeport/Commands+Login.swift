import Foundation
import HomeportClient
import HomeportCommandLine
import HomeportWire

extension Commands {
    static let loginSpec = CommandSpec(
        name: "homeport login", summary: "Sign in at URL; it becomes the server's primary address.",
        arguments: [
            .init(
                "URL",
                help:
                    "The server's address, such as https://books.example.net; or the pairing link its web account page shows (homeport://pair?…)."
            )
        ],
        options: [
            .value(
                "email", "EMAIL",
                help:
                    "The account's address (with --provider: the address for a new account when the provider gives none, or one that has an account)."
            ),
            .flag("password-stdin", help: "Read the password from standard input (the only way to pass it)."),
            .value(
                "provider", "ID",
                help:
                    "Sign in with this identity provider of the server (homeport-server oidc add) instead of a password."
            ),
            .flag(
                "browser",
                help:
                    "Sign in in a web browser (any way the server's sign-in page offers, a second factor included): prints the page to open (and opens it when there is a display), listens on 127.0.0.1 for the browser to come back, as gh auth login --web does."
            ),
            .value(
                "device-name", "NAME", help: "With --browser: what the server's confirmation page calls this device.",
                default: "homeport on HOSTNAME"),
            .flag(
                "id-token-stdin",
                help:
                    "With --provider: read the ID token the provider issued to the server's app client from standard input."
            ),
            .flag("allow-http", help: "Allow plain HTTP for this address."),
            .flag("signup", help: "Create the account first."),
            .flag(
                "invitation-stdin",
                help:
                    "With --signup: read an invitation's code (its link's ?invitation=, or the whole link) from the line after the password; it signs up whatever the server's sign-up mode, without waiting for approval. A code is never taken as an argument."
            ),
            jsonOption, proxyOption, caFileOption,
        ],
        discussion: """
            The password is sent once and never stored; the session token goes to the vault. An account with
            two-factor sign-in is asked for its code on the next line of standard input (six digits from the
            authenticator app, or a recovery code); the code is never stored either.
            Signing in again replaces the session this device held for the server; the old one is ended on
            the server first, and you are told if the server did not confirm that. An address that says it is
            a server enrolled at another address is believed only when that server, reached at its own
            verified addresses, knows the new session.
            A pairing link names the installation, its key's fingerprint and its address: the address must
            prove that key before the password goes there (over HTTPS, the certificate the server makes from
            its key is accepted with no certificate authority), and only that installation is enrolled.
            With --provider, the ID token is one the provider issued for the client id the server names in its
            config (the app door's /_allauth/app/v1/config lists each provider's; the server's operator sees them
            with homeport-server oidc list); it is sent once and never stored.
            """)

    static func login(_ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
        guard let parsed = try parse(loginSpec, arguments) else { return 0 }
        guard !parsed.flag("invitation-stdin") || parsed.flag("signup") else {
            throw UsageError("--invitation-stdin goes with --signup: an invitation signs an account up")
        }
        let provider = parsed.options["provider"]
        let browser = parsed.flag("browser")
        if browser {
            guard provider == nil, !parsed.flag("password-stdin"), !parsed.flag("signup"),
                !parsed.flag("id-token-stdin"), parsed.options["email"] == nil
            else {
                throw UsageError(
                    "login --browser takes no --provider, --email, --password-stdin, --id-token-stdin or --signup: the browser signs in"
                )
            }
        } else if parsed.options["device-name"] != nil {
            throw UsageError("--device-name goes with --browser")
        }
        var email = parsed.options["email"]
        var password: String?
        var idToken: String?
        if let provider {
            guard parsed.flag("id-token-stdin") else {
                throw UsageError(
                    "login --provider \(provider) needs --id-token-stdin (a token is never taken as an argument)")
            }
            guard !parsed.flag("password-stdin"), !parsed.flag("signup") else {
                throw UsageError("login --provider takes no --password-stdin or --signup: the provider vouches instead")
            }
            idToken = try readSecret("ID token")
        } else if !browser {
            guard parsed.options["email"] != nil else { throw UsageError("login needs --email EMAIL") }
            guard !parsed.flag("id-token-stdin") else { throw UsageError("--id-token-stdin needs --provider ID") }
            password = try passwordFromStandardInput(parsed, for: "login")
        }
        // The invitation's code, or the link that carries it, on the line after the password.
        let invitation = try parsed.flag("invitation-stdin") ? Self.invitationCode(readSecret("invitation")) : nil
        let target = parsed.positionals[0]
        let link: PairingLink?
        do {
            link = target.lowercased().hasPrefix("homeport:") ? try PairingLink(parsing: target) : nil
        } catch {
            throw UsageError("\(ServerText.clean(target, limit: 120)) is not a pairing link: \(error)")
        }
        let events = Events()
        let client = try client(environment, parsed, events: events)
        let address =
            if let link {
                try await client.pair(link, allowHTTP: parsed.flag("allow-http"))
            } else {
                try ServerAddress(parsing: target, allowHTTP: parsed.flag("allow-http"))
            }
        var result: HomeportClient.SignInResult
        if browser {
            let callback = try LoopbackCallback()
            let device =
                parsed.options["device-name"] ?? "homeport on \(ProcessInfo.processInfo.hostName.prefix(40))"
            let pending = try await client.beginBrowserSignIn(
                at: address, redirect: callback.redirect, deviceName: device)
            warn("homeport: open this page in a web browser to sign in (it waits \(pending.expiresIn / 60) minutes):")
            warn(pending.url)
            openInBrowser(pending.url, environment)
            let back = try callback.wait(seconds: pending.expiresIn + 60)
            result = try await client.completeBrowserSignIn(pending, callbackURL: back)
            if case .signedIn(let record) = result { email = record.email }
        } else if let provider, let idToken {
            let offered = try await client.identityProviders(at: address)
            guard let chosen = offered.first(where: { $0.id == provider }) else {
                let names = offered.map(\.id).joined(separator: ", ")
                throw UsageError(
                    "\(address.url) has no identity provider '\(ServerText.clean(provider, limit: 64))'"
                        + (names.isEmpty ? " (it offers none)" : "; it offers \(ServerText.clean(names, limit: 200))"))
            }
            result = try await client.login(at: address, provider: chosen, idToken: idToken)
            if case .providerSignupRequired(let pending) = result {
                guard let chosenEmail = email else {
                    if parsed.flag("json") { try printJSON(["signedIn": false, "providerSignup": "pending"]) }
                    warn(
                        "homeport: not signed in: \(provider) gave no address, or one that has an account here; "
                            + "run again with --email ADDRESS for a new account (or sign in to that account and connect the provider)"
                    )
                    return 1
                }
                result = try await client.completeProviderSignup(pending, email: chosenEmail)
            }
            if case .signedIn(let record) = result { email = record.email }
        } else if let email, let password {
            result =
                parsed.flag("signup")
                ? try await client.signup(at: address, email: email, password: password, invitation: invitation)
                : try await client.login(at: address, email: email, password: password)
        } else {
            return 2
        }
        if case .verificationRequired(let pending) = result {
            guard let verified = try await verify(pending, client, json: parsed.flag("json")) else { return 1 }
            result = verified
        }
        if case .secondFactorRequired(let pending) = result {
            guard let completed = try await secondFactor(pending, client, json: parsed.flag("json")) else { return 1 }
            result = completed
        }
        switch result {
        case .signedIn(let record):
            let replaced = events.all.compactMap { event -> SignOutOutcome? in
                if case .sessionReplaced(_, _, let outcome) = event { return outcome }
                return nil
            }.first
            if parsed.flag("json") {
                var object: [String: Any] = [
                    "signedIn": true, "server": record.key, "instanceId": record.instanceID?.description ?? NSNull(),
                    "product": record.product ?? NSNull(), "email": record.email, "primary": record.primary.url,
                    "singleAddress": record.instanceID == nil,
                ]
                if let replaced {
                    object["replacedSession"] = json(replaced)
                }
                try printJSON(object)
            } else {
                say(
                    "signed in to \(record.product ?? "server") \(record.displayName) as \(record.email) via \(address.url)"
                )
                if record.instanceID == nil {
                    say(
                        "\(address.url) gave no installation id (an older server, or its identity cannot be read "
                            + "now): it is used at this address only, and alternative addresses cannot be added")
                }
            }
            return 0
        case .pending(let standing):
            if parsed.flag("json") {
                try printJSON(["signedIn": false, "standing": standing.map { $0.rawValue as Any } ?? NSNull()])
            }
            let why =
                switch standing {
                case .waiting: "the account waits for approval"
                case .held: "the account is on hold"
                case .mailFailed: "the server could not send a mail it needed"
                case nil: "the server gave no reason"
                }
            warn("homeport: not signed in: \(why)")
            return 1
        case .verificationRequired, .secondFactorRequired, .providerSignupRequired:
            return 1
        }
    }

    /// Opens `url` with `xdg-open` when there is a display (and `xdg-open`); nothing otherwise.
    static func openInBrowser(_ url: String, _ environment: [String: String]) {
        guard environment["DISPLAY"] != nil || environment["WAYLAND_DISPLAY"] != nil,
            FileManager.default.isExecutableFile(atPath: "/usr/bin/xdg-open")
        else { return }
        let opener = Process()
        opener.executableURL = URL(fileURLWithPath: "/usr/bin/xdg-open")
        opener.arguments = [url]
        opener.standardOutput = FileHandle.nullDevice
        opener.standardError = FileHandle.nullDevice
        try? opener.run()
    }

    /// Asks for the second factor on standard input (the line after the password, or after the
    /// mailed code), as often as the server allows. `nil` when no code signed in. The code is
    /// never written anywhere.
    static func secondFactor(_ pending: HomeportClient.PendingSecondFactor, _ client: HomeportClient, json: Bool)
        async throws -> HomeportClient.SignInResult?
    {
        while true {
            warn(
                "homeport: \(pending.email.isEmpty ? "the account" : pending.email) signs in with a second factor; type the code from the authenticator app (or a recovery code) and press Enter"
            )
            guard let line = readLine(strippingNewline: true) else {
                if json { try printJSON(["signedIn": false, "secondFactor": "pending"]) }
                warn("homeport: not signed in: no code given")
                return nil
            }
            do {
                return try await client.completeSecondFactor(pending, code: line.trimmingCharacters(in: .whitespaces))
            } catch ClientError.rejected(let status, let errors)
                where status == 400 && errors.contains(where: { $0.code == AuthErrorCode.incorrectCode })
            {
                warn("homeport: \(errors.first?.message ?? "incorrect code")")
            } catch ClientError.rejected(let status, let errors) where status == 400 || status == 401 {
                if json { try printJSON(["signedIn": false, "secondFactor": status == 401 ? "expired" : "refused"]) }
                let why = status == 401 ? "the sign-in expired; sign in again" : errors.first?.message ?? "refused"
                warn("homeport: not signed in: \(why)")
                return nil
            }
        }
    }

    /// Asks for the mailed code on standard input (the line after the password), as often as the
    /// server allows; `resend` asks for a new code. `nil` when no code signed in.
    static func verify(_ pending: HomeportClient.PendingVerification, _ client: HomeportClient, json: Bool)
        async throws -> HomeportClient.SignInResult?
    {
        while true {
            warn("homeport: the server mailed a code to \(pending.email); type it (or 'resend') and press Enter")
            guard let line = readLine(strippingNewline: true) else {
                if json { try printJSON(["signedIn": false, "verification": "pending"]) }
                warn("homeport: not signed in: no code given (signing in again mails a new one)")
                return nil
            }
            let typed = line.trimmingCharacters(in: .whitespaces)
            do {
                if typed.lowercased() == "resend" {
                    try await client.resendVerificationCode(pending)
                    continue
                }
                let result = try await client.verifyEmail(pending, code: typed)
                if case .verificationRequired = result { continue }
                return result
            } catch ClientError.rejected(let status, let errors) where status == 400 || status == 429 {
                let text = errors.first?.message ?? (status == 429 ? "a code went out too recently" : "refused")
                warn("homeport: \(text)")
            } catch ClientError.rejected(let status, _) where status == 409 {
                if json { try printJSON(["signedIn": false, "verification": "given_up"]) }
                warn(
                    "homeport: not signed in: the code was tried too often or expired (signing in again mails a new one)"
                )
                return nil
            }
        }
    }

    /// A sign-out outcome as JSON.
    static func json(_ outcome: SignOutOutcome) -> [String: Any] {
        switch outcome {
        case .revoked: ["revoked": true]
        case .notConfirmed(let reason): ["revoked": false, "reason": reason]
        }
    }

    /// An invitation's code as a person pastes it: the code alone, or the link that carries it
    /// (`…/account/signup?invitation=CODE`), spaces around either dropped.
    static func invitationCode(_ text: String) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let components = URLComponents(string: trimmed), components.scheme != nil,
            let code = components.queryItems?.first(where: { $0.name == "invitation" })?.value
        else { return trimmed }
        return code
    }
}
