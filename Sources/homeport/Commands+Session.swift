import Foundation
import HomeportClient
import HomeportCommandLine

extension Commands {
    static let whoamiSpec = CommandSpec(
        name: "homeport whoami", summary: "Call app-info through the address chosen on this network, and say which.",
        arguments: [serverArgument],
        options: [.flag("json", help: "Print JSON: {server, email, via, appInfo}."), proxyOption, caFileOption])

    static func whoami(_ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
        guard let parsed = try parse(whoamiSpec, arguments) else { return 0 }
        let client = try client(environment, parsed)
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
                "\(record.email) on \(info.product) \(info.version) (\(record.displayName)) via \(via.url)"
                    + (info.instanceId == nil ? "; the server could not say its installation id now" : ""))
        }
        return 0
    }

    static let logoutSpec = CommandSpec(
        name: "homeport logout", summary: "Sign out; the local session is erased even when the server cannot be asked.",
        arguments: [serverArgument], options: [jsonOption, proxyOption, caFileOption],
        discussion: """
            The server is asked to end the session only through an address that answers as the installation.
            "the server ended the session" is said only when its app door confirmed it; otherwise the session
            is erased on this device, and the reason the server did not confirm is printed.
            """)

    static func logout(_ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
        guard let parsed = try parse(logoutSpec, arguments) else { return 0 }
        let client = try client(environment, parsed)
        let record = try client.directory.find(parsed.positionals[0])
        let outcome = try await client.logout(record.key)
        if parsed.flag("json") {
            try printJSON(json(outcome).merging(["server": record.key, "signedOut": true]) { $1 })
            return 0
        }
        switch outcome {
        case .revoked:
            say("signed out: the server ended the session")
        case .notConfirmed(let reason):
            say(
                "signed out on this device only: the server did not confirm that the session ended (\(reason)); "
                    + "it may stay valid until it expires")
        }
        return 0
    }

    static let removeSpec = CommandSpec(
        name: "homeport remove", summary: "Forget SERVER locally (not a remote sign-out).",
        arguments: [serverArgument], options: [jsonOption, proxyOption, caFileOption],
        discussion: """
            The push token this device registered with SERVER is withdrawn first when the server can be asked;
            offline, SERVER is removed all the same.
            """)

    static func remove(_ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
        guard let parsed = try parse(removeSpec, arguments) else { return 0 }
        let client = try client(environment, parsed)
        let record = try client.directory.find(parsed.positionals[0])
        try await client.remove(record.key)
        if parsed.flag("json") {
            try printJSON(["server": record.key, "removed": true])
        } else {
            say(
                "removed \(record.displayName) and its credential from this device (the server was not asked to end the session)"
            )
        }
        return 0
    }
}
