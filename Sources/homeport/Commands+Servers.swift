import Foundation
import HomeportClient
import HomeportCommandLine

extension Commands {
    static let serversSpec = CommandSpec(
        name: "homeport servers", summary: "List enrolled servers and their addresses.", options: [jsonOption],
        discussion: "homeport servers rename SERVER LABEL names a server on this device.")

    static let renameSpec = CommandSpec(
        name: "homeport servers rename",
        summary:
            "Name SERVER on this device (\"Books at home\"); every command shows the name, and takes it as SERVER.",
        arguments: [serverArgument, .init("LABEL", help: "The name: at most 64 characters; \"\" removes it.")],
        options: [jsonOption],
        discussion: "The label stays on this device: the server is not told. Two servers cannot share a label.")

    static func servers(_ arguments: [String], _ environment: [String: String]) throws -> Int32 {
        if arguments.first == "rename" { return try rename(Array(arguments.dropFirst()), environment) }
        guard let parsed = try parse(serversSpec, arguments) else { return 0 }
        let client = try client(environment)
        let path = client.networkPath
        let records = client.directory.all
        if parsed.flag("json") {
            try printJSON(
                records.map { record -> [String: Any] in
                    [
                        "server": record.key, "handle": record.localID.uuidString.lowercased(),
                        "label": record.label ?? NSNull(),
                        "instanceId": record.instanceID?.description ?? NSNull(),
                        "product": record.product ?? NSNull(), "email": record.email, "primary": record.primary.url,
                        "signedIn": !record.signedOut, "keyFingerprint": record.keyFingerprint ?? NSNull(),
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
                "\(record.displayName)  \(record.product ?? "")  \(record.email)\(record.signedOut ? "  (signed out)" : "")"
            )
            say("  primary      \(record.primary.url)")
            if record.instanceID != nil {
                say(
                    "  key          "
                        + (record.keyFingerprint
                            ?? "none pinned: addresses are checked by the installation's id alone (a server without a key)")
                )
            }
            for alternative in record.alternatives {
                let state =
                    alternative.verifiedPaths[path] != nil
                    ? "verified on this network" : alternative.isVerified ? "verified elsewhere" : "unverified"
                say("  alternative  \(alternative.address.url)  (\(state))")
            }
        }
        return 0
    }

    static func rename(_ arguments: [String], _ environment: [String: String]) throws -> Int32 {
        guard let parsed = try parse(renameSpec, arguments) else { return 0 }
        let client = try client(environment)
        let record = try client.directory.find(parsed.positionals[0])
        let renamed = try client.directory.setLabel(parsed.positionals[1], of: record.key)
        if parsed.flag("json") {
            try printJSON(["server": renamed.key, "label": renamed.label ?? NSNull()] as [String: Any])
        } else if let label = renamed.label {
            say("\(renamed.key) is named \(label) on this device")
        } else {
            say("\(renamed.key) has no name on this device now")
        }
        return 0
    }

    static let networkSpec = CommandSpec(
        name: "homeport network",
        summary: "Show the network path the client is on: verifications made on another path do not count here.",
        options: [jsonOption],
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
