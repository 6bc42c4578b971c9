import Foundation
import HomeportCommandLine
import HomeportLogging

/// `homeport-server users list|approve|reject|hold|verify|reset-2fa|import|delete`
enum UsersCommand {
    static let listSpec = CommandSpec(
        name: "homeport-server users list",
        summary: "List accounts with their approval stage, oldest first.",
        options: [
            ServerCLI.databaseOption,
            .flag("json", help: "Print a JSON array of {id, email, approval, emailVerified, createdAt}."),
        ])

    static func stageSpec(_ action: String) -> CommandSpec {
        CommandSpec(
            name: "homeport-server users \(action)",
            summary: action == "approve"
                ? "Approve an account so it can sign in."
                : "\(action == "reject" ? "Reject" : "Hold") an account; its sessions end at once.",
            arguments: [.init("EMAIL", help: "The account's sign-in address.")],
            options: [ServerCLI.databaseOption],
            discussion: "A rejected person is told 'waiting', so a refusal is never announced.")
    }

    static let verifySpec = CommandSpec(
        name: "homeport-server users verify",
        summary: "Mark an account's address as verified, so that it signs in without a mailed code.",
        arguments: [.init("EMAIL", help: "The account's sign-in address.")],
        options: [ServerCLI.databaseOption],
        discussion:
            "For --email-verification code, when you know the address is the person's and the code does not arrive.")

    static let resetSecondFactorSpec = CommandSpec(
        name: "homeport-server users reset-2fa",
        summary: "Turn two-factor sign-in off for an account whose phone and recovery codes are lost.",
        arguments: [.init("EMAIL", help: "The account's sign-in address.")],
        options: [ServerCLI.databaseOption, .flag("yes", help: "Confirm: you know the person asking is the owner.")],
        discussion:
            "Its TOTP secret, its recovery codes and its passkeys are deleted and every session of the account ends (on every replica within a second); it signs in with its password alone until it turns two-factor sign-in on again. Do it only for someone you know to be the owner: it undoes what the second factor protects."
    )

    static let groupsSpec: CommandSpec = {
        var spec = CommandSpec(
            name: "homeport-server users groups",
            summary: "Show an account's groups, or put it in a group or take it out of one.",
            arguments: [
                .init("EMAIL", help: "The account's sign-in address."),
                .init("add|remove", help: "What to do (without it, the groups are shown)."),
                .init("GROUP", help: "The group: admin, or any name of 1–64 letters, digits and -_.: (lowercased)."),
            ],
            options: [ServerCLI.databaseOption, .flag("json", help: "Print the groups as a JSON array.")],
            discussion:
                "admin is Homeport's own group: its members decide on sign-ups from the app. Any other name (family, kids, bookorbit:librarian) is yours and the products': a Swift product reads SignedIn.groups, a product behind forward auth X-Homeport-Groups. A name is 1–64 letters, digits and -_.:, starting with a letter or digit; an account holds at most 32. A running server sees a change within its session cache's window (a second by default); the change is logged to standard error."
        )
        spec.optionalArguments = 2
        return spec
    }()

    static let overview = """
        Usage: homeport-server users list|approve|reject|hold|verify|groups|reset-2fa|import|delete [EMAIL|FILE] [options]

        Manage accounts: list them, move one between approval stages (approved, waiting, rejected, held), mark
        its address verified, put it in groups (homeport-server users groups --help), turn its two-factor
        sign-in off, import accounts from another system (homeport-server users import --help), or delete one
        with everything that was its own.
        """

    static func run(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        let actions = ["list", "approve", "reject", "hold", "verify", "groups", "reset-2fa", "import", "delete"]
        guard let (action, rest) = try ServerCLI.action(of: "users", among: actions, overview: overview, arguments)
        else { return .success }
        switch action {
        case "list": return try list(rest, environment: environment)
        case "approve": return try setStage(.approved, action, rest, environment: environment)
        case "reject": return try setStage(.rejected, action, rest, environment: environment)
        case "hold": return try setStage(.held, action, rest, environment: environment)
        case "verify": return try verify(rest, environment: environment)
        case "groups": return try groups(rest, environment: environment)
        case "reset-2fa": return try resetSecondFactor(rest, environment: environment)
        case "import": return try importAccounts(rest, environment: environment)
        default: return try delete(rest, environment: environment)  // "delete", the last of `actions`
        }
    }

    private static func service(_ parsed: ParsedArguments, _ spec: CommandSpec, _ environment: [String: String])
        throws -> AccountService
    {
        let database = try ServerCLI.database(parsed, spec, environment).open()
        try ServerCLI.migrate(database)
        return AccountService(
            database: database, settings: AccountSettings(), mailer: OutboxMailer(directory: "/nonexistent"),
            logger: Logger(label: "homeport.cli", minimumLevel: .warning))
    }

    static func list(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard let parsed = try ServerCLI.parse(listSpec, arguments) else { return .success }
        let service = try service(parsed, listSpec, environment)
        let accounts = try service.accounts()
        let verified = try service.emailVerification.verifiedAccountIDs()
        let formatter = ISO8601DateFormatter()
        if parsed.flag("json") {
            let objects = accounts.map {
                [
                    "id": Int($0.id), "email": $0.email, "approval": $0.approval.rawValue,
                    "emailVerified": verified.contains($0.id), "createdAt": formatter.string(from: $0.createdAt),
                ] as [String: Any]
            }
            try ServerCLI.printJSON(objects)
        } else if accounts.isEmpty {
            ServerCLI.line("no accounts yet")
        } else {
            for account in accounts {
                ServerCLI.line(
                    "\(account.approval.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)) \(account.email)")
            }
        }
        return .success
    }

    static let deleteSpec = CommandSpec(
        name: "homeport-server users delete",
        summary: "Delete an account with everything that was its own; its address can sign up again.",
        arguments: [.init("EMAIL", help: "The account's sign-in address.")],
        options: [ServerCLI.databaseOption, .flag("yes", help: "Confirm: the deletion cannot be undone.")],
        discussion:
            "Its sessions end on every replica (streams within a second), and its devices, the pushes queued for them, mutes, notifications, the product API's Idempotency-Keys that notified it, verifications, reset keys and queued mail go with it, in one transaction."
    )

    static func delete(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard let parsed = try ServerCLI.parse(deleteSpec, arguments) else { return .success }
        let email = parsed.positionals[0]
        guard parsed.flag("yes") else {
            ServerCLI.error("homeport-server: deleting \(email) cannot be undone; add --yes to confirm")
            return .refused
        }
        guard try service(parsed, deleteSpec, environment).deleteAccount(email: email) else {
            ServerCLI.error("homeport-server: no account uses '\(email)'")
            return .failure
        }
        ServerCLI.line("\(email): deleted")
        return .success
    }

    static func resetSecondFactor(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard let parsed = try ServerCLI.parse(resetSecondFactorSpec, arguments) else { return .success }
        let email = parsed.positionals[0]
        guard parsed.flag("yes") else {
            ServerCLI.error(
                "homeport-server: turning off \(email)'s two-factor sign-in undoes what it protects; add --yes to confirm"
            )
            return .refused
        }
        guard try service(parsed, resetSecondFactorSpec, environment).twoFactor.resetSecondFactors(email: email) else {
            ServerCLI.error("homeport-server: no account uses '\(email)'")
            return .failure
        }
        ServerCLI.line("\(email): two-factor sign-in off, every session ended")
        return .success
    }

    static func verify(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard let parsed = try ServerCLI.parse(verifySpec, arguments) else { return .success }
        let email = parsed.positionals[0]
        guard try service(parsed, verifySpec, environment).emailVerification.markEmailVerified(email: email) else {
            ServerCLI.error("homeport-server: no account uses '\(email)'")
            return .failure
        }
        ServerCLI.line("\(email): address verified")
        return .success
    }

    static func groups(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard let parsed = try ServerCLI.parse(groupsSpec, arguments) else { return .success }
        let positionals = parsed.positionals
        let email = positionals[0]
        var change: (GroupService.Change, String)?
        if positionals.count > 1 {
            guard positionals.count == 3,
                let action = ["add": GroupService.Change.add, "remove": .remove][positionals[1]]
            else {
                throw UsageError(
                    "users groups EMAIL takes add GROUP or remove GROUP, not '\(positionals[1...].joined(separator: " "))'"
                )
            }
            change = (action, positionals[2])
        }
        let database = try ServerCLI.database(parsed, groupsSpec, environment).open()
        defer { database.close() }
        try ServerCLI.migrate(database)
        // The change's log line goes to standard error (the journal, under systemd): an audit trail.
        let service = GroupService(
            database: database, clock: SystemWallClock(), logger: Logger(label: "homeport.cli", minimumLevel: .notice))
        switch try service.groups(email: email, change) {
        case .noAccount:
            ServerCLI.error("homeport-server: no account uses '\(email)'")
            return .failure
        case .invalidName:
            throw UsageError(
                "'\(change?.1 ?? "")' is not a group's name: 1–64 letters, digits and -_.:, starting with a letter or digit"
            )
        case .tooMany:
            ServerCLI.error("homeport-server: \(email) is in \(AccountGroups.maximumPerAccount) groups already")
            return .failure
        case .groups(let groups, let changed):
            if parsed.flag("json") {
                try ServerCLI.printJSON(groups)
            } else {
                if let change, !changed {
                    ServerCLI.line("\(email): \(change.0 == .add ? "already in" : "not in") \(change.1.lowercased())")
                }
                ServerCLI.line("\(email): \(groups.isEmpty ? "in no group" : groups.joined(separator: ", "))")
            }
            return .success
        }
    }

    static func setStage(_ approval: Approval, _ action: String, _ arguments: [String], environment: [String: String])
        throws -> ExitCode
    {
        let spec = stageSpec(action)
        guard let parsed = try ServerCLI.parse(spec, arguments) else { return .success }
        let email = parsed.positionals[0]
        guard try service(parsed, spec, environment).setApproval(approval, email: email) else {
            ServerCLI.error("homeport-server: no account uses '\(email)'")
            return .failure
        }
        ServerCLI.line("\(email): \(approval.rawValue)")
        return .success
    }
}
