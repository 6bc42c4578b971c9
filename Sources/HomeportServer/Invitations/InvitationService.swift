import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage

/// Invitations: a code that signs one person (or N, for a club's link) up whatever the sign-up
/// mode, skipping the approval queue, optionally bound to one address and carrying groups. The
/// operator makes, lists and revokes them (`homeport-server invites`); a sign-up spends one use
/// (``AccountService/signup(email:password:address:kind:current:invitation:)``).
package struct InvitationService {
    let database: any Database
    let clock: any WallClock
    let random: any RandomSource
    let logger: Logger

    /// A service over `database`.
    package init(database: any Database, clock: any WallClock, random: any RandomSource, logger: Logger) {
        self.database = database
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    /// The most sign-ups one invitation allows.
    package static let maximumUses: Int64 = 1000
    /// The longest an invitation lives, in seconds (a year).
    package static let longestLife: Int64 = 366 * 86400
    /// How long an invitation lives unless told (a week).
    package static let defaultLife: Int64 = 7 * 86400

    /// What making an invitation came to.
    package enum Outcome {
        /// Made: the invitation and its code (shown once, never stored).
        case made(Invitation, code: String)
        /// What is wrong with the request, in a sentence.
        case invalid(String)
    }

    /// What checking an invitation's terms came to.
    enum Check {
        /// They hold: the address normalised, the groups' names each once.
        case valid(email: String?, groups: [String])
        /// `field` (`email`, `groups`, `uses`, `expiresIn`) is wrong, in a sentence.
        case invalid(field: String, String)
    }

    /// Checks the terms of an invitation for `uses` sign-ups, living `life` seconds, bound to
    /// `email` when given, putting the accounts it makes in `groups`.
    static func check(email rawEmail: String?, groups rawGroups: [String], uses: Int64, life: Int64) -> Check {
        var email: String?
        if let rawEmail {
            guard let normalized = Credentials.normalizedEmail(rawEmail) else {
                return .invalid(field: "email", "'\(rawEmail.prefix(80))' is not an address Homeport takes")
            }
            email = normalized
        }
        guard rawGroups.count <= AccountGroups.maximumPerAccount else {
            return .invalid(field: "groups", "an invitation gives at most \(AccountGroups.maximumPerAccount) groups")
        }
        var groups: [String] = []
        for raw in rawGroups {
            guard let name = AccountGroups.name(raw) else {
                return .invalid(
                    field: "groups",
                    "'\(raw.prefix(80))' is not a group's name: 1–64 letters, digits and -_.:, starting with a letter or digit"
                )
            }
            if !groups.contains(name) { groups.append(name) }
        }
        guard (1...maximumUses).contains(uses) else {
            return .invalid(field: "uses", "an invitation is for 1 to \(maximumUses) sign-ups")
        }
        guard (60...longestLife).contains(life) else {
            return .invalid(field: "expiresIn", "an invitation lives a minute to a year")
        }
        return .valid(email: email, groups: groups)
    }

    /// Makes an invitation for `uses` sign-ups, living `life` seconds, bound to `email` when
    /// given, putting the accounts it makes in `groups`, made by account `creator` (`nil`: the
    /// operator).
    package func create(
        email rawEmail: String?, groups rawGroups: [String], uses: Int64, life: Int64, by creator: Int64?
    )
        throws -> Outcome
    {
        let email: String?
        let groups: [String]
        switch Self.check(email: rawEmail, groups: rawGroups, uses: uses, life: life) {
        case .invalid(_, let message): return .invalid(message)
        case .valid(let checkedEmail, let checkedGroups): (email, groups) = (checkedEmail, checkedGroups)
        }
        let code = try SecretToken.generate(random)
        let now = clock.unixSeconds
        guard
            let invitation = try database.transaction({
                try InvitationStore($0).create(
                    codeHash: SecretToken.storedForm(of: code), email: email, groups: groups.sorted(), uses: uses,
                    expiresAt: now + life, createdBy: creator, now: now)
            })
        else { throw StorageError.statementFailed(code: "invitation", message: "the invitation was not stored") }
        logger.notice(
            "invitation made",
            metadata: [
                "invitation": String(invitation.id), "uses": String(uses), "groups": groups.joined(separator: ","),
                "bound": email == nil ? "false" : "true", "by": creator.map { String($0) } ?? "operator",
            ])
        return .made(invitation, code: code)
    }

    /// Every invitation, newest first.
    package func all() throws -> [Invitation] {
        try InvitationStore(database).all()
    }

    /// Revokes invitation `id`; false when there is none, or it was revoked already.
    package func revoke(id: Int64) throws -> Bool {
        let revoked = try database.transaction { try InvitationStore($0).revoke(id: id, now: clock.unixSeconds) }
        if revoked { logger.notice("invitation revoked", metadata: ["invitation": String(id)]) }
        return revoked
    }

    /// Where a person signs up with `code`: the web door's sign-up page at `publicURL`.
    package static func link(code: String, publicURL: String) -> String {
        let base = publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL
        return base + "/account/signup?invitation=" + code
    }

    /// Whether `text` could be an invitation's code (what ``SecretToken`` makes): anything else is
    /// refused before it is hashed.
    static func isCode(_ text: String) -> Bool {
        SecretToken.isWellFormed(text)
    }
}
