import Foundation
import HomeportClient
import HomeportCommandLine

extension Commands {
    static let passwordChangeSpec = CommandSpec(
        name: "homeport password change", summary: "Change the account's password on SERVER.",
        arguments: [serverArgument],
        options: [
            .flag(
                "password-stdin",
                help: "Read the current password, then the new one, from standard input, one a line (the only way)."),
            jsonOption, proxyOption, caFileOption,
        ],
        discussion: "The server renews this device's session token; the vault keeps the new one.")

    static let passwordResetSpec = CommandSpec(
        name: "homeport password reset",
        summary: "Ask the server at URL to mail a password-reset key, or set a new password with it.",
        arguments: [.init("URL", help: "The server's address.")],
        options: [
            .value("email", "EMAIL", help: "Ask for a key for this account's address."),
            .value(
                "key", "KEY", help: "Set a new password with the mailed KEY ('-': read it from standard input first)."),
            .flag("password-stdin", help: "With --key: read the new password from standard input (the only way)."),
            .flag("allow-http", help: "Allow plain HTTP for this address."), jsonOption, proxyOption, caFileOption,
        ],
        discussion: """
            With --email, no credential is sent, and the server answers the same whether or not the address has an
            account. With --key, the key goes only to URL; every session of the account ends, this device's too:
            sign in again with the new password (homeport login URL --email EMAIL --password-stdin).
            """)

    static func password(_ action: String, _ arguments: [String], _ environment: [String: String]) async throws
        -> Int32
    {
        switch action {
        case "change":
            guard let parsed = try parse(passwordChangeSpec, arguments) else { return 0 }
            guard parsed.flag("password-stdin") else {
                throw UsageError("password change needs --password-stdin (passwords are never taken as arguments)")
            }
            let current = try readSecret("current password")
            let new = try readSecret("new password")
            let client = try client(environment, parsed)
            let record = try client.directory.find(parsed.positionals[0])
            let renewed = try await client.changePassword(record.key, current: current, new: new)
            if parsed.flag("json") {
                try printJSON(["server": record.key, "email": record.email, "changed": true, "sessionRenewed": renewed])
            } else {
                say(
                    "changed the password of \(record.email) on \(record.displayName)"
                        + (renewed ? "; this device's session was renewed" : ""))
            }
        case "reset":
            guard let parsed = try parse(passwordResetSpec, arguments) else { return 0 }
            if let key = parsed.options["key"] {
                return try await completeReset(parsed, key: key, environment)
            }
            guard let email = parsed.options["email"] else {
                throw UsageError("password reset needs --email EMAIL (ask for a key) or --key KEY (use one)")
            }
            let address = try ServerAddress(parsing: parsed.positionals[0], allowHTTP: parsed.flag("allow-http"))
            let client = try client(environment, parsed)
            try await client.requestPasswordReset(at: address, email: email)
            if parsed.flag("json") {
                try printJSON(["address": address.url, "email": email, "requested": true])
            } else {
                say(
                    "asked \(address.url) to mail a password-reset link to \(email) "
                        + "(it sends one only if the address has an account, and does not say which)")
            }
        default:
            throw UsageError("unknown password action '\(action)'; use change or reset")
        }
        return 0
    }

    /// `password reset URL --key KEY --password-stdin`.
    private static func completeReset(_ parsed: ParsedArguments, key given: String, _ environment: [String: String])
        async throws -> Int32
    {
        guard parsed.options["email"] == nil else {
            throw UsageError("password reset takes --email or --key, not both")
        }
        guard parsed.flag("password-stdin") else {
            throw UsageError("password reset --key needs --password-stdin (passwords are never taken as arguments)")
        }
        let address = try ServerAddress(parsing: parsed.positionals[0], allowHTTP: parsed.flag("allow-http"))
        let key = given == "-" ? try readSecret("reset key") : given
        guard !key.isEmpty else { throw UsageError("--key needs the key from the reset mail") }
        let password = try readSecret("new password")
        let client = try client(environment, parsed)
        try await client.completePasswordReset(at: address, key: key, password: password)
        if parsed.flag("json") {
            try printJSON(["address": address.url, "reset": true])
        } else {
            say("set the new password at \(address.url); every session of the account ended: sign in again")
        }
        return 0
    }
}
