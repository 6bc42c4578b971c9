import Foundation
import HomeportCommandLine
import HomeportCrypto
import HomeportLogging

/// `homeport-server invites create|list|revoke`: invitations that sign people up whatever the
/// sign-up mode, skipping the approval queue.
enum InvitesCommand {
    static func spec(_ action: String) -> CommandSpec {
        switch action {
        case "create":
            CommandSpec(
                name: "homeport-server invites create",
                summary:
                    "Make an invitation: its code (printed once, stored only as its SHA-256) signs up whatever --signup says, without waiting for approval.",
                options: [
                    ServerCLI.databaseOption,
                    .value("email", "ADDR", help: "Only this address may sign up with it."),
                    .value("groups", "LIST", help: "Groups the new account joins, comma-separated (admin, family)."),
                    .value("uses", "N", help: "Sign-ups it allows (a club's link: more than one).", default: "1"),
                    .value(
                        "expires", "DURATION", help: "How long it works: 30m, 12h or 7d, at most 366d.", default: "7d"),
                    .value(
                        "public-url", "URL", help: "Address people reach the server at, for the link.",
                        environment: "HOMEPORT_PUBLIC_URL", default: "http://localhost:8080"),
                    .flag("json", help: "Print {id, code, link, email, groups, uses, expiresAt}."),
                ],
                discussion:
                    "The link is PUBLIC_URL/account/signup?invitation=CODE; an app signs up with the code in 'invitation'. A wrong, used, expired or revoked code, or one used with another address than its --email, is refused with one answer that does not say which."
            )
        case "revoke":
            CommandSpec(
                name: "homeport-server invites revoke",
                summary: "Revoke an invitation: its code signs nobody up any more.",
                arguments: [.init("ID", help: "The invitation's id (invites list).")],
                options: [ServerCLI.databaseOption])
        default:
            CommandSpec(
                name: "homeport-server invites list", summary: "List invitations, newest first (never their codes).",
                options: [
                    ServerCLI.databaseOption,
                    .flag(
                        "json", help: "Print a JSON array of {id, email, groups, usesLeft, expiresAt, revokedAt, by}."),
                ])
        }
    }

    static let overview = """
        Usage: homeport-server invites create|list|revoke [ID] [options]

        Invitations sign people up whatever the sign-up mode (closed too), without waiting for approval,
        optionally bound to one address and putting the account in groups. A code is shown once, when
        it is made.
        """

    static func run(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard
            let (action, rest) = try ServerCLI.action(
                of: "invites", among: ["create", "list", "revoke"], overview: overview, arguments)
        else { return .success }
        let spec = spec(action)
        guard let parsed = try ServerCLI.parse(spec, rest) else { return .success }
        var life: Int64 = InvitationService.defaultLife
        var uses: Int64 = 1
        if action == "create" {
            if let text = parsed.options["expires"] {
                guard let seconds = DurationText.seconds(text) else {
                    throw UsageError("--expires is a number and s, m, h or d (30m, 12h, 7d), not '\(text)'")
                }
                life = seconds
            }
            if let text = parsed.options["uses"] {
                guard let number = Int64(text) else { throw UsageError("--uses is a number, not '\(text)'") }
                uses = number
            }
        }
        let database = try ServerCLI.database(parsed, spec, environment).open()
        defer { database.close() }
        try ServerCLI.migrate(database)
        // Each change is logged to standard error (the journal, under systemd).
        let service = InvitationService(
            database: database, clock: SystemWallClock(), random: SystemRandom(),
            logger: Logger(label: "homeport.cli", minimumLevel: .notice))
        let date = InvitationLine.date
        switch action {
        case "create":
            let groups = (parsed.options["groups"] ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }.filter { !$0.isEmpty }
            switch try service.create(email: parsed.options["email"], groups: groups, uses: uses, life: life, by: nil) {
            case .invalid(let reason):
                throw UsageError(reason)
            case .made(let invitation, let code):
                let publicURL =
                    parsed.value("public-url", spec: spec, environment: environment) ?? "http://localhost:8080"
                let link = InvitationService.link(code: code, publicURL: publicURL)
                if parsed.flag("json") {
                    var object: [String: Any] = [
                        "id": Int(invitation.id), "code": code, "link": link, "groups": invitation.groups,
                        "uses": Int(invitation.usesLeft), "expiresAt": date(invitation.expiresAt),
                    ]
                    if let email = invitation.email { object["email"] = email }
                    try ServerCLI.printJSON(object)
                } else {
                    ServerCLI.line(code)
                    ServerCLI.line(link)
                    ServerCLI.error(
                        "homeport-server: invitation \(invitation.id) made for \(uses) sign-up\(uses == 1 ? "" : "s") until \(date(invitation.expiresAt)); the code is not shown again"
                    )
                }
            }
        case "revoke":
            guard let id = Int64(parsed.positionals[0]) else {
                throw UsageError("an invitation's id is a number (invites list), not '\(parsed.positionals[0])'")
            }
            guard try service.revoke(id: id) else {
                ServerCLI.error("homeport-server: no invitation \(id) to revoke (revoked already, or none)")
                return .failure
            }
            ServerCLI.line("invitation \(id): revoked")
        default:
            let invitations = try service.all()
            // Who made each: the operator, or an account from the app.
            var makers: [Int64: String] = [:]
            for id in Set(invitations.compactMap(\.createdBy)) {
                makers[id] = try AccountStore(database).find(id: id)?.email ?? "account \(id)"
            }
            let maker = { (invitation: Invitation) in invitation.createdBy.flatMap { makers[$0] } ?? "operator" }
            if parsed.flag("json") {
                try ServerCLI.printJSON(
                    invitations.map { invitation -> [String: Any] in
                        var object: [String: Any] = [
                            "id": Int(invitation.id), "groups": invitation.groups,
                            "usesLeft": Int(invitation.usesLeft), "expiresAt": date(invitation.expiresAt),
                        ]
                        if let email = invitation.email { object["email"] = email }
                        if let revoked = invitation.revokedAt { object["revokedAt"] = date(revoked) }
                        object["by"] = maker(invitation)
                        return object
                    })
            } else if invitations.isEmpty {
                ServerCLI.line("no invitations")
            } else {
                let now = Int64(Date().timeIntervalSince1970)
                for invitation in invitations {
                    ServerCLI.line(
                        InvitationLine.text(
                            id: invitation.id, email: invitation.email, groups: invitation.groups,
                            usesLeft: invitation.usesLeft, expiresAt: invitation.expiresAt,
                            revoked: invitation.revokedAt != nil, now: now) + "  by " + maker(invitation))
                }
            }
        }
        return .success
    }
}
