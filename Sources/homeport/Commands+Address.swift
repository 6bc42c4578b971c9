import Foundation
import HomeportClient
import HomeportCommandLine

extension Commands {
    static func addressSpec(_ action: String) -> CommandSpec {
        switch action {
        case "add":
            CommandSpec(
                name: "homeport address add",
                summary:
                    "Add an alternative address after checking it is the same installation (nothing secret is sent).",
                arguments: [serverArgument, .init("URL", help: "The address.")],
                options: [
                    .flag("allow-http", help: "Allow plain HTTP for this address."), jsonOption, proxyOption,
                    caFileOption,
                ],
                discussion: "An address that already is an alternative is probed again: an answer other than the "
                    + "installation's (another installation, a web page, a redirect elsewhere, no proof of its key) "
                    + "takes its verification away; no answer, or a 503 saying the identity cannot be read now, "
                    + "leaves it as it was.")
        case "primary":
            CommandSpec(
                name: "homeport address primary",
                summary:
                    "Make URL the primary address of SERVER once it answers as the installation (a server that moved).",
                arguments: [serverArgument, .init("URL", help: "The new address.")],
                options: [
                    .flag("allow-http", help: "Allow plain HTTP for this address."), jsonOption, proxyOption,
                    caFileOption,
                ],
                discussion: "Nothing secret is sent to check it, and the session goes on: no sign-in again. Any other "
                    + "answer changes nothing: exit 3 for another installation's answer, 1 for one that is not a "
                    + "Homeport server's or none at all. A primary that redirects to https:// on its own host moves "
                    + "by itself the same way.")
        case "remove":
            CommandSpec(
                name: "homeport address remove", summary: "Remove an alternative address.",
                arguments: [serverArgument, .init("URL", help: "The address.")], options: [jsonOption])
        default:
            CommandSpec(
                name: "homeport address verify", summary: "Probe every address of SERVER on this network.",
                arguments: [serverArgument], options: [jsonOption, proxyOption, caFileOption],
                discussion: "Exits 3 when an address does not answer as the installation.")
        }
    }

    static func address(_ action: String, _ arguments: [String], _ environment: [String: String]) async throws -> Int32
    {
        guard ["add", "primary", "remove", "verify"].contains(action) else {
            throw UsageError("unknown address action '\(action)'; use add, primary, remove or verify")
        }
        guard let parsed = try parse(addressSpec(action), arguments) else { return 0 }
        let client = try client(environment, parsed)
        // The command line's conveniences (a label, a prefix, a URL) name the server once, here.
        let found = try client.directory.find(parsed.positionals[0])
        let server = found.localID
        let json = parsed.flag("json")
        switch action {
        case "add":
            let address = try ServerAddress(parsing: parsed.positionals[1], allowHTTP: parsed.flag("allow-http"))
            let existed = found.alternatives.contains { $0.address.url == address.url }
            let record = try await client.addAddress(address, to: server)
            if json {
                try printJSON([
                    "server": record.key, "address": address.url, "added": !existed, "verifiedOn": client.networkPath,
                ])
            } else if existed {
                say(
                    "\(address.url) was already an alternative of \(record.displayName); it still answers as it: verified again on this network"
                )
            } else {
                say("\(address.url) answers as \(record.displayName): added, and verified on this network")
            }
        case "primary":
            let address = try ServerAddress(parsing: parsed.positionals[1], allowHTTP: parsed.flag("allow-http"))
            let before = found.primary.url
            let record = try await client.movePrimary(of: server, to: address)
            if json {
                try printJSON(["server": record.key, "primary": record.primary.url, "previous": before])
            } else {
                say("\(address.url) answers as \(record.displayName): it is the primary now (was \(before))")
            }
        case "remove":
            let address = try ServerAddress(parsing: parsed.positionals[1], allowHTTP: true)
            let record = found
            try client.removeAddress(address, from: server)
            if json {
                try printJSON(["server": record.key, "removed": address.url])
            } else {
                say("removed \(address.url) from \(record.displayName)")
            }
        default:
            let record = found
            let results = try await client.verifyAddresses(of: server)
            let allGood = results.allSatisfy { $0.outcome.isMatch }
            if json {
                try printJSON([
                    "server": record.key, "networkPath": client.networkPath,
                    "addresses": results.map { address, outcome in
                        [
                            "address": address.url, "primary": address.url == record.primary.url,
                            "verified": outcome.isMatch, "outcome": outcome.description,
                        ] as [String: Any]
                    },
                ])
            } else {
                for (address, outcome) in results {
                    say("\(address.url)  \(outcome.isMatch ? "verified" : outcome.description)")
                }
            }
            return allGood ? 0 : 3
        }
        return 0
    }
}
