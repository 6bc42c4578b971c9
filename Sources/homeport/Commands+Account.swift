import Foundation
import HomeportClient
import HomeportCommandLine

extension Commands {
    static let accountDeleteSpec = CommandSpec(
        name: "homeport account delete", summary: "Delete the account on SERVER, then forget SERVER on this device.",
        arguments: [serverArgument],
        options: [
            .flag("password-stdin", help: "Read the account's password from standard input (the only way)."),
            jsonOption, proxyOption, caFileOption,
        ],
        discussion: """
            The password goes, with this device's session, only through an address that answers as the enrolled
            installation. The server ends every session of the account and erases its devices, notifications and
            settings; this device erases its credential, record and catalogue. It cannot be undone.
            """)

    static func account(_ action: String, _ arguments: [String], _ environment: [String: String]) async throws
        -> Int32
    {
        guard action == "delete" else { throw UsageError("unknown account action '\(action)'; use delete") }
        guard let parsed = try parse(accountDeleteSpec, arguments) else { return 0 }
        let password = try passwordFromStandardInput(parsed, for: "account delete")
        let client = try client(environment, parsed)
        let record = try client.directory.find(parsed.positionals[0])
        try await client.deleteAccount(record.key, password: password)
        if parsed.flag("json") {
            try printJSON(["server": record.key, "email": record.email, "deleted": true])
        } else {
            say("deleted the account \(record.email) on \(record.displayName), and forgot the server on this device")
        }
        return 0
    }
}
