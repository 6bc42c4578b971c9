import Foundation
import HomeportClient
import HomeportCommandLine
import HomeportWire

extension Commands {
    static func invitesSpec(_ action: String) -> CommandSpec {
        switch action {
        case "create":
            CommandSpec(
                name: "homeport invite",
                summary: "Invite someone to SERVER: print a code (and link) that signs them up, shown this once.",
                arguments: [serverArgument],
                options: [
                    .value("email", "ADDR", help: "Only this address may sign up with it; the server mails it there."),
                    .value("groups", "LIST", help: "Groups the new account joins, comma-separated (only yours)."),
                    .value("uses", "N", help: "Sign-ups it allows (a club's link: more than one).", default: "1"),
                    .value(
                        "expires", "DURATION", help: "How long it works: 30m, 12h or 7d, at most 366d.", default: "7d"),
                    .flag("json", help: "Print {server, id, code, link, mailed, email, groups, usesLeft, expiresAt}."),
                    proxyOption, caFileOption,
                ],
                discussion: """
                    The server decides who may invite (its --invitations: admins by default, or every member, or
                    nobody); a member gives only groups it is in. The code signs up whatever the server's sign-up
                    mode, without waiting for approval: 'homeport login URL --signup --invitation-stdin'. Same as
                    'homeport invites create'.
                    """)
        case "revoke":
            CommandSpec(
                name: "homeport invites revoke", summary: "Revoke an invitation you made on SERVER.",
                arguments: [serverArgument, .init("ID", help: "The invitation's id ('homeport invites list').")],
                options: [jsonOption, proxyOption, caFileOption])
        default:
            CommandSpec(
                name: "homeport invites list",
                summary: "List the invitations you made on SERVER, newest first (never their codes).",
                arguments: [serverArgument],
                options: [
                    .flag(
                        "json",
                        help: "Print {server, invitations: [{id, email, groups, usesLeft, expiresAt, revokedAt}]}."),
                    proxyOption, caFileOption,
                ])
        }
    }

    static func invites(_ action: String, _ arguments: [String], _ environment: [String: String]) async throws
        -> Int32
    {
        guard ["create", "list", "revoke"].contains(action) else {
            throw UsageError("unknown invites action '\(action)'; use create, list or revoke")
        }
        guard let parsed = try parse(invitesSpec(action), arguments) else { return 0 }
        var uses: Int64?
        var life: Int64?
        var id: Int64 = 0
        switch action {
        case "create":
            if let text = parsed.options["uses"] {
                guard let number = Int64(text), number > 0 else {
                    throw UsageError("--uses is a positive number, not '\(text)'")
                }
                uses = number
            }
            if let text = parsed.options["expires"] {
                guard let seconds = DurationText.seconds(text) else {
                    throw UsageError("--expires is a number and s, m, h or d (30m, 12h, 7d), not '\(text)'")
                }
                life = seconds
            }
        case "revoke":
            guard let number = Int64(parsed.positionals[1]) else {
                throw UsageError(
                    "an invitation's id is a number ('homeport invites list'), not '\(parsed.positionals[1])'")
            }
            id = number
        default: break
        }
        let client = try client(environment, parsed)
        let record = try client.directory.find(parsed.positionals[0])
        let json = parsed.flag("json")
        switch action {
        case "create":
            let groups = (parsed.options["groups"] ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }.filter { !$0.isEmpty }
            let made = try await client.invite(
                on: record.key, email: parsed.options["email"], groups: groups, uses: uses, expiresIn: life)
            if json {
                try printJSON(invitationJSON(made).merging(["server": record.key]) { $1 })
            } else {
                if let code = made.code { say(code) }
                if let link = made.link { say(link) }
                warn(
                    "homeport: invitation \(made.id) on \(record.displayName) for \(made.usesLeft) sign-up\(made.usesLeft == 1 ? "" : "s") until \(date(made.expiresAt))"
                        + (made.email.map { made.mailed == true ? ", mailed to \($0)" : ", for \($0) (not mailed)" }
                            ?? "")
                        + "; the code is not shown again")
            }
        case "revoke":
            try await client.revokeInvitation(id, on: record.key)
            if json {
                try printJSON(["server": record.key, "id": Int(id), "revoked": true])
            } else {
                say("invitation \(id) on \(record.displayName): revoked")
            }
        default:
            let invitations = try await client.invitations(on: record.key)
            if json {
                try printJSON(["server": record.key, "invitations": invitations.map(invitationJSON)])
            } else if invitations.isEmpty {
                say("you made no invitations on \(record.displayName)")
            } else {
                let now = Int64(Date().timeIntervalSince1970)
                for invitation in invitations {
                    say(
                        InvitationLine.text(
                            id: invitation.id, email: invitation.email, groups: invitation.groups,
                            usesLeft: invitation.usesLeft, expiresAt: invitation.expiresAt,
                            revoked: invitation.revokedAt != nil, now: now))
                }
            }
        }
        return 0
    }

    /// An invitation as `--json` prints it, its times as ISO 8601.
    private static func invitationJSON(_ invitation: InvitationAnswer) -> [String: Any] {
        var object: [String: Any] = [
            "id": Int(invitation.id), "groups": invitation.groups, "usesLeft": Int(invitation.usesLeft),
            "expiresAt": date(invitation.expiresAt),
        ]
        if let code = invitation.code { object["code"] = code }
        if let link = invitation.link { object["link"] = link }
        if let mailed = invitation.mailed { object["mailed"] = mailed }
        if let email = invitation.email { object["email"] = email }
        if let revoked = invitation.revokedAt { object["revokedAt"] = date(revoked) }
        return object
    }

    private static func date(_ seconds: Int64) -> String {
        InvitationLine.date(seconds)
    }
}
