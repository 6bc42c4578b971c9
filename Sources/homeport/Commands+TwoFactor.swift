import Foundation
import HomeportClient
import HomeportCommandLine
import HomeportWire

extension Commands {
    static let mfaTOTPSpec = CommandSpec(
        name: "homeport mfa totp enable|disable", summary: "Turn two-factor sign-in (TOTP) on or off for SERVER.",
        arguments: [serverArgument],
        options: [
            .flag("password-stdin", help: "Read the account's password from standard input (the only way)."),
            jsonOption, proxyOption, caFileOption,
        ],
        discussion: """
            enable: prints the key and the otpauth:// link for an authenticator app, then reads the code the app
            shows from the next line of standard input, and prints the ten recovery codes, shown this once: keep
            them somewhere safe. disable: turns TOTP off, and the recovery codes with it unless the account keeps a
            passkey (a passkey still asks for a second factor at sign-in). Both confirm the password first (the
            first line of standard input). Nothing of it, key, codes or password, is written
            to disk.
            """)

    static let mfaRecoverySpec = CommandSpec(
        name: "homeport mfa recovery-codes", summary: "Make new recovery codes for SERVER and print them, this once.",
        arguments: [serverArgument],
        options: [
            .flag("password-stdin", help: "Read the account's password from standard input (the only way)."),
            jsonOption, proxyOption, caFileOption,
        ],
        discussion: """
            The old recovery codes stop working. The server keeps only keyed hashes of the new ones, so they
            cannot be shown again; nothing of them is written to disk here.
            """)

    static let mfaStatusSpec = CommandSpec(
        name: "homeport mfa status",
        summary:
            "Say whether this account's TOTP (an authenticator app's codes) is on at SERVER, and its recovery codes left.",
        arguments: [serverArgument], options: [jsonOption, proxyOption, caFileOption],
        discussion: """
            Passkeys are not listed here (the web door's /account/passkeys shows them): an account with TOTP off and
            a passkey is still asked for a second factor when it signs in with its password.
            """)

    static func mfa(_ action: String, _ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
        switch action {
        case "totp":
            guard let mode = arguments.first, ["enable", "disable"].contains(mode) else {
                if arguments.contains("--help") || arguments.contains("-h") {
                    _ = try parse(mfaTOTPSpec, ["--help"])
                    return 0
                }
                throw UsageError("mfa totp needs enable or disable")
            }
            return try await totp(enable: mode == "enable", Array(arguments.dropFirst()), environment)
        case "recovery-codes": return try await recoveryCodes(arguments, environment)
        case "status": return try await mfaStatus(arguments, environment)
        default: throw UsageError("unknown mfa action '\(action)'; use totp, recovery-codes or status")
        }
    }

    static func totp(enable: Bool, _ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
        guard let parsed = try parse(mfaTOTPSpec, arguments) else { return 0 }
        let password = try passwordFromStandardInput(parsed, for: "mfa totp")
        let client = try client(environment, parsed)
        let record = try client.directory.find(parsed.positionals[0])
        guard enable else {
            try await client.disableTOTP(record.key, password: password)
            if parsed.flag("json") {
                try printJSON(["server": record.key, "totp": false])
            } else {
                say("TOTP is off for \(record.email) on \(record.displayName) (a passkey, if it keeps one, still asks)")
            }
            return 0
        }
        guard let setup = try await client.beginTOTPSetup(record.key) else {
            warn("homeport: two-factor sign-in is on already for \(record.email) on \(record.displayName)")
            return 1
        }
        if parsed.flag("json") {
            try printJSON(["server": record.key, "secret": setup.secret, "url": setup.url])
        } else {
            say("key:  \(setup.secret)")
            say("link: \(setup.url)")
        }
        warn("homeport: add the key to an authenticator app, then type the code it shows and press Enter")
        guard let code = readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces), !code.isEmpty else {
            throw UsageError("no code on standard input; two-factor sign-in stays off")
        }
        let codes = try await client.enableTOTP(record.key, code: code, password: password)
        if parsed.flag("json") {
            try printJSON(["server": record.key, "totp": true, "recoveryCodes": codes])
        } else {
            say("two-factor sign-in is on for \(record.email) on \(record.displayName)")
            say("recovery codes (each signs in once; shown only now):")
            for code in codes { say("  \(code)") }
        }
        return 0
    }

    static func recoveryCodes(_ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
        guard let parsed = try parse(mfaRecoverySpec, arguments) else { return 0 }
        let password = try passwordFromStandardInput(parsed, for: "mfa recovery-codes")
        let client = try client(environment, parsed)
        let record = try client.directory.find(parsed.positionals[0])
        let codes = try await client.regenerateRecoveryCodes(record.key, password: password)
        if parsed.flag("json") {
            try printJSON(["server": record.key, "recoveryCodes": codes])
        } else {
            say(
                "new recovery codes for \(record.email) on \(record.displayName) (the old ones no longer work; shown only now):"
            )
            for code in codes { say("  \(code)") }
        }
        return 0
    }

    static func mfaStatus(_ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
        guard let parsed = try parse(mfaStatusSpec, arguments) else { return 0 }
        let client = try client(environment, parsed)
        let record = try client.directory.find(parsed.positionals[0])
        let authenticators = try await client.authenticators(record.key)
        let totp = authenticators.contains { $0.type == "totp" }
        let left = authenticators.first { $0.type == "recovery_codes" }?.unusedCodeCount
        if parsed.flag("json") {
            try printJSON(["server": record.key, "totp": totp, "recoveryCodesLeft": left.map { $0 as Any } ?? NSNull()])
        } else if totp {
            say("TOTP is on for \(record.email) on \(record.displayName); \(left ?? 0) recovery codes left")
        } else {
            say("TOTP is off for \(record.email) on \(record.displayName) (passkeys are not listed here)")
        }
        return 0
    }
}
