import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage

/// Invitations made from the app (`/api/v1/invitations`): by the accounts `--invitations` allows,
/// each giving only groups it is in (an admin gives any), charged to its day's budget, mailed to
/// the address it is bound to. Anyone lists and revokes the invitations it made.
struct AppInvitations: Sendable {
    let policy: InvitationPolicy
    let database: any Database
    let clock: any WallClock
    let random: any RandomSource
    let logger: Logger
    let rateLimits: RateLimitPolicy
    /// The web door's public address, for the link; `nil`: the code alone.
    let publicURL: String?
    /// The product's name, for the mail's subject.
    let product: String
    let deliver: MailDelivery

    /// The most sign-ups a member's invitation allows (an admin's, as the operator's, a thousand).
    static let maximumMemberUses: Int64 = 10

    /// What asking for an invitation came to.
    enum Outcome {
        /// Made, and mailed (or not: `mailed`) to its bound address.
        case made(Invitation, code: String, link: String?, mailed: Bool)
        /// `field` is wrong, in a sentence; nothing changed.
        case invalid(field: String, String)
        /// The account may not invite, or not give these groups; nothing changed.
        case forbidden(String)
        /// Its day's invitations (or the mailbox's mail) are spent.
        case rateLimited(retryAfter: Int64)
    }

    /// Makes an invitation by `account` with what it asked; `uses` and `life` default to one
    /// sign-up in a week.
    func create(by account: Account, email: String?, groups: [String], uses: Int64?, life: Int64?) throws -> Outcome {
        guard policy.allows(account) else {
            return .forbidden(
                policy == .off
                    ? "Invitations from the app are off on this server."
                    : "Only the admin group's members invite on this server.")
        }
        // Checked before the budget is charged: a wrong request costs nothing.
        switch InvitationService.check(
            email: email, groups: groups, uses: uses ?? 1, life: life ?? InvitationService.defaultLife)
        {
        case .invalid(let field, let message): return .invalid(field: field, message)
        case .valid(_, let names):
            if !account.isAdmin, let uses, uses > Self.maximumMemberUses {
                return .invalid(
                    field: "uses", "a member's invitation is for 1 to \(Self.maximumMemberUses) sign-ups")
            }
            // The account's groups as the session reader read them with the session: a group
            // taken from it is no longer its to give from the next request on.
            if !account.isAdmin, let foreign = names.first(where: { !(account.groups ?? []).contains($0) }) {
                return .forbidden("You can give only groups you are in, and you are not in '\(foreign)'.")
            }
        }
        let service = InvitationService(database: database, clock: clock, random: random, logger: logger)
        let now = clock.unixSeconds
        do {
            try database.transaction {
                let limiter = RateLimiter($0, policy: rateLimits)
                try limiter.charge(.invitationPerAccount, String(account.id), now: now)
                if let email = email.flatMap(Credentials.normalizedEmail) {
                    try limiter.chargeMailboxDay(email, now: now)
                }
            }
        } catch let refusal as RateLimiter.Refusal {
            return .rateLimited(retryAfter: refusal.retryAfter)
        }
        switch try service.create(
            email: email, groups: groups, uses: uses ?? 1, life: life ?? InvitationService.defaultLife, by: account.id)
        {
        case .invalid(let message): return .invalid(field: "invitation", message)
        case .made(let invitation, let code):
            let link = publicURL.map { InvitationService.link(code: code, publicURL: $0) }
            var mailed = false
            if let to = invitation.email {
                mailed = deliver(
                    Self.mail(invitation, code: code, link: link, to: to, from: account, product: product),
                    standingOf: nil)
            }
            return .made(invitation, code: code, link: link, mailed: mailed)
        }
    }

    /// The invitations `account` made, newest first.
    func all(by account: Account) throws -> [Invitation] {
        try InvitationStore(database).all(createdBy: account.id)
    }

    /// Revokes invitation `id` if `account` made it; false when it made none with this id.
    func revoke(id: Int64, by account: Account) throws -> Bool {
        let revoked = try database.transaction {
            try InvitationStore($0).revoke(id: id, createdBy: account.id, now: clock.unixSeconds)
        }
        if revoked {
            logger.notice("invitation revoked", metadata: ["invitation": String(id), "by": String(account.id)])
        }
        return revoked
    }

    /// The mail that brings `invitation` to `to`: who sent it, the link, the code, until when.
    static func mail(
        _ invitation: Invitation, code: String, link: String?, to: String, from inviter: Account, product: String
    ) -> Mail {
        let until = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(invitation.expiresAt)))
        // An address nobody verified is not named: anyone can sign up as the bank's director.
        let who = inviter.emailVerified == true ? inviter.email : "Someone with an account there"
        let open =
            link.map { "Open \($0)\nor give the app this invitation code: " } ?? "Give the app this invitation code: "
        return Mail(
            to: to, subject: "An invitation to \(product)",
            body: """
                \(who) invited you to sign up on \(product).
                \(open)\(code)
                It works until \(until). If you did not expect it, ignore this mail.
                """,
            kind: "invitation")
    }
}
