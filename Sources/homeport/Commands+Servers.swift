import Foundation
import HomeportClient
import HomeportCommandLine

extension Commands {
    static let serversSpec = CommandSpec(
        name: "homeport servers", summary: "List enrolled servers and their addresses.", options: [jsonOption])

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
            say("\(record.key)  \(record.product ?? "")  \(record.email)\(record.signedOut ? "  (signed out)" : "")")
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
