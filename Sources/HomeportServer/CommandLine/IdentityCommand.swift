import Foundation
import HomeportCommandLine
import HomeportStorage
import HomeportWire

/// `homeport-server identity show|reset`
enum IdentityCommand {
    static let showSpec = CommandSpec(
        name: "homeport-server identity show",
        summary:
            "Print this installation's instanceId (the value GET \(HomeportPath.serverIdentity) answers) and its key's fingerprint.",
        options: [
            ServerCLI.databaseOption,
            .flag(
                "json", help: "Print JSON: {\"instanceId\", \"createdAt\", \"publicKey\", \"keyFingerprint\"}."),
        ],
        discussion: """
            Prints the instanceId on the first line (only 'none yet' when no request has created it), then the
            installation key's fingerprint ('key SHA256:…', as a client shows it): compare it with what a
            phone shows before you trust an address. 'key none' when the server has no secrets key (on
            PostgreSQL, give every replica the same --secrets-key-file) or has not served since it got one.
            Exit code 0 either way.
            """)

    static let resetSpec = CommandSpec(
        name: "homeport-server identity reset",
        summary: "Forget this installation's instanceId so the next request creates a new one.",
        options: [
            ServerCLI.databaseOption,
            .flag("replicas-stopped", help: "Confirm that every replica using this database is stopped."),
            .flag(
                "force",
                help: "Reset even though replicas' heartbeats are fresh (only for replicas that died moments ago)."),
        ],
        discussion: """
            Only for an independent clone of an installation (a copied database that now serves other people).
            A restored backup of the same installation must keep its id: do not reset it.
            Every replica must be stopped first: a running one keeps answering the old id from its cache.
            Without --replicas-stopped the command refuses and changes nothing (exit code 3). Each serving
            replica refreshes a heartbeat row every 5 seconds; while any is younger than 15 seconds the command
            lists those replicas and refuses too (exit code 3), unless --force says they are dead.
            A row that does not hold a UUID (a damaged one) is removed like any other.
            """)

    static func run(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard let action = arguments.first, !action.hasPrefix("-") else {
            if arguments.contains("--help") || arguments.contains("-h") {
                ServerCLI.line(
                    "Usage: homeport-server identity show|reset [options]\n\n\(showSpec.summary)\n\(resetSpec.summary)")
                return .success
            }
            throw UsageError("identity needs an action: 'identity show' or 'identity reset'")
        }
        let rest = Array(arguments.dropFirst())
        switch action {
        case "show": return try show(rest, environment: environment)
        case "reset": return try reset(rest, environment: environment)
        default: throw UsageError("unknown identity action '\(action)'; use 'show' or 'reset'")
        }
    }

    private static func open(_ parsed: ParsedArguments, _ spec: CommandSpec, _ environment: [String: String]) throws
        -> (any Database, IdentityStore)
    {
        let database = try ServerCLI.database(parsed, spec, environment).open()
        try ServerCLI.migrate(database)
        return (database, IdentityStore(database: database))
    }

    static func show(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard let parsed = try ServerCLI.parse(showSpec, arguments) else { return .success }
        let (database, store) = try open(parsed, showSpec, environment)
        defer { database.close() }
        let stored = try store.storedInstanceID()
        if parsed.flag("json") {
            var object: [String: Any] = ["instanceId": stored.map { $0.instanceID.description } ?? NSNull()]
            if let created = stored?.createdAt {
                object["createdAt"] = ISO8601DateFormatter().string(from: created)
            }
            object["publicKey"] = stored?.publicKey ?? NSNull()
            object["keyFingerprint"] = stored?.keyFingerprint ?? NSNull()
            try ServerCLI.printJSON(object)
        } else if let stored {
            ServerCLI.line(stored.instanceID.description)
            ServerCLI.line(stored.keyFingerprint.map { "key \($0)" } ?? "key none")
        } else {
            ServerCLI.line("none yet: the first request to \(HomeportPath.serverIdentity) creates it")
        }
        return .success
    }

    static func reset(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard let parsed = try ServerCLI.parse(resetSpec, arguments) else { return .success }
        guard parsed.flag("replicas-stopped") else {
            ServerCLI.error(
                """
                homeport-server: refusing to reset the installation identity.
                Stop every homeport-server replica that uses this database, then run again with --replicas-stopped.
                A running replica would keep answering the old instanceId from its cache. Nothing was changed.
                """)
            return .refused
        }
        let (database, store) = try open(parsed, resetSpec, environment)
        defer { database.close() }
        let outcome: IdentityStore.ResetOutcome
        do {
            outcome = try store.reset(force: parsed.flag("force"))
        } catch let refused as ResetRefused {
            let formatter = ISO8601DateFormatter()
            let lines = refused.replicas.map {
                "  \($0.host) pid \($0.pid), listening on \($0.listen), last heartbeat \(formatter.string(from: $0.seenAt))"
            }
            ServerCLI.error(
                """
                homeport-server: refusing to reset the installation identity: these replicas are serving.
                \(lines.joined(separator: "\n"))
                Stop them and run again. If they died (a heartbeat stays fresh for 15 seconds), add --force.
                Nothing was changed.
                """)
            return .refused
        }
        let removed =
            switch outcome {
            case .removed(let id): "Removed instanceId \(id)."
            case .removedDamaged(let text):
                "Removed a damaged identity row (it held '\(Output.printable(text))', not a UUID)."
            case .nothingStored: "No instanceId was stored."
            }
        ServerCLI.line(
            """
            \(removed)
            The next request to the server creates a new one. Signed-in apps keep using the address they signed in \
            with, adopt the new id from \(HomeportPath.appInfo), and ask their users to verify every alternative address again.
            """)
        return .success
    }
}
