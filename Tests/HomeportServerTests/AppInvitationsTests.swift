import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// Invitations from the app: who may make them (`--invitations`), which groups they give, what
/// they cost, the mail that carries them, and revoking one's own.
@Suite("Invitations from the app: who invites, which groups, the mail, revoking", .tags(.postgres))
struct AppInvitationsTests {
    static let password = "correct horse battery"

    /// An approved account in `groups`, signed in: its token.
    private func member(_ server: AccountsHarness, _ email: String, groups: [String] = []) throws -> String {
        let signup = try server.app("POST", "auth/signup", json: ["email": email, "password": Self.password])
        #expect(signup.status == 401, "waits at first: \(signup.text)")
        #expect(try server.application.accounts.setApproval(.approved, email: email))
        let service = GroupService(
            database: server.application.database, clock: server.clock, logger: Logger(label: "t"))
        for group in groups { _ = try service.groups(email: email, (.add, group)) }
        return try server.signIn(email)
    }

    private func invite(_ server: AccountsHarness, _ token: String, _ body: [String: Any] = [:]) throws -> RawResponse {
        try server.app("POST", HomeportPath.invitations, token: token, json: body)
    }

    private func made(_ response: RawResponse) throws -> InvitationAnswer {
        #expect(response.status == 201, "\(response.text)")
        return try JSONDecoder().decode(InvitationAnswer.self, from: response.body)
    }

    private func list(_ server: AccountsHarness, _ token: String) throws -> [InvitationAnswer] {
        let answer = try server.app("GET", HomeportPath.invitations, token: token)
        #expect(answer.status == 200, "\(answer.text)")
        return try JSONDecoder().decode(InvitationListAnswer.self, from: answer.body).invitations
    }

    private func count(_ server: AccountsHarness) throws -> Int64 {
        try server.application.database.execute("SELECT count(*) AS n FROM invitations").first?.int("n") ?? -1
    }

    private func signup(_ server: AccountsHarness, _ email: String, _ code: String) throws -> RawResponse {
        try server.app(
            "POST", "auth/signup", json: ["email": email, "password": Self.password, "invitation": code])
    }

    private func canInvite(_ server: AccountsHarness, _ token: String) throws -> Bool? {
        let answer = try server.app("GET", HomeportPath.account, token: token)
        return try JSONDecoder().decode(AccountAnswer.self, from: answer.body).canInvite
    }

    @Test(
        "an admin invites from the app, its code signs up past the queue; a member may not; one's own list and revocation",
        arguments: Backend.allCases)
    func adminsInvite(backend: Backend) throws {
        try withAccounts(backend, signup: .approval, publicURL: "https://books.example.net/") { server in
            let root = try member(server, "root@example.com", groups: ["admin"])
            let ann = try member(server, "ann@example.com", groups: ["family"])
            #expect(try canInvite(server, root) == true && canInvite(server, ann) == false)
            let invitation = try made(
                invite(server, root, ["groups": ["Family", "kids"], "uses": 2, "expiresIn": 3600]))
            let code = try #require(invitation.code)
            #expect(invitation.link == "https://books.example.net/account/signup?invitation=" + code)
            #expect(invitation.groups == ["family", "kids"] && invitation.usesLeft == 2 && invitation.email == nil)
            #expect(invitation.expiresAt == invitation.createdAt + 3600 && invitation.mailed == false)
            let bob = try signup(server, "bob@example.com", code)
            #expect(bob.status == 200 && bob.sessionToken != nil, "no queue: \(bob.text)")
            let account = try #require(try AccountStore(server.application.database).find(email: "bob@example.com"))
            #expect(try AccountGroups(server.application.database).groups(userID: account.id) == ["family", "kids"])

            // A member under the default (admins): refused, nothing made.
            let before = try count(server)
            let refused = try invite(server, ann, ["groups": ["family"]])
            #expect(refused.status == 403 && refused.apiErrorCode == "forbidden", "\(refused.text)")
            #expect(try count(server) == before)

            // The list is one's own, without codes; the code is in the made answer alone.
            let listed = try list(server, root)
            #expect(listed.map(\.id) == [invitation.id] && listed.first?.usesLeft == 1 && listed.first?.code == nil)
            #expect(try list(server, ann).isEmpty)

            // Revoking: not someone else's (404, and it still works); one's own (204, then refused).
            let notHers = try server.app("DELETE", HomeportPath.invitations + "/\(invitation.id)", token: ann)
            #expect(notHers.status == 404 && notHers.apiErrorCode == "not_found", "\(notHers.text)")
            #expect(try list(server, root).first?.revokedAt == nil)
            for _ in 0..<2 {
                let revoked = try server.app("DELETE", HomeportPath.invitations + "/\(invitation.id)", token: root)
                #expect(revoked.status == 204, "again, as it is: \(revoked.text)")
            }
            let revokedAt = try #require(try list(server, root).first?.revokedAt)
            #expect(revokedAt == server.clock.unixSeconds)
            let late = try signup(server, "cy@example.com", code)
            #expect(late.status == 400 && late.errorCodes == ["invalid_invitation"], "\(late.text)")
            for (path, status) in [("/999999", 404), ("/-1", 404), ("/abc", 400)] {
                let unknown = try server.app("DELETE", HomeportPath.invitations + path, token: root)
                #expect(unknown.status == status, "\(path): \(unknown.text)")
            }
            // Signed out: 401 for all three.
            #expect(try server.app("GET", HomeportPath.invitations).status == 401)
            #expect(try server.app("POST", HomeportPath.invitations, json: [:]).status == 401)
        }
    }

    @Test(
        "--invitations members: a member gives only groups it is in, until one is taken from it; an admin gives any; off refuses all"
    )
    func membersInvite() throws {
        try withAccounts(.sqlite, signup: .closed, invitations: .members) { server in
            // Under closed sign-up the operator's invitations bring the first people in.
            let operatorInvites = InvitationService(
                database: server.application.database, clock: server.clock, random: SystemRandom(),
                logger: Logger(label: "t"))
            func invited(_ email: String, _ groups: [String]) throws -> String {
                guard
                    case .made(_, let code) = try operatorInvites.create(
                        email: email, groups: groups, uses: 1, life: 3600, by: nil)
                else { throw RawHTTPError("no invitation") }
                let answer = try signup(server, email, code)
                return try #require(answer.sessionToken, "\(answer.text)")
            }
            let ann = try invited("ann@example.com", ["family"])
            let root = try invited("root@example.com", ["admin"])
            #expect(try canInvite(server, ann) == true)
            let before = try count(server)
            for groups in [["admin"], ["kids"], ["family", "kids"]] {
                let refused = try invite(server, ann, ["groups": groups])
                #expect(refused.status == 403 && refused.apiErrorCode == "forbidden", "\(groups): \(refused.text)")
            }
            #expect(try count(server) == before, "nothing made")
            let family = try made(invite(server, ann, ["groups": ["family"]]))
            #expect(family.groups == ["family"])
            let bob = try signup(server, "bob@example.com", try #require(family.code))
            #expect(bob.status == 200, "under closed sign-up: \(bob.text)")
            // An admin gives groups it is not in.
            #expect(try made(invite(server, root, ["groups": ["kids", "admin"]])).groups == ["admin", "kids"])
            // Family taken from ann: from her next request she cannot give it.
            _ = try GroupService(database: server.application.database, clock: server.clock, logger: Logger(label: "t"))
                .groups(email: "ann@example.com", (.remove, "family"))
            let after = try invite(server, ann, ["groups": ["family"]])
            #expect(after.status == 403, "\(after.text)")
            #expect(try made(invite(server, ann)).groups.isEmpty, "an invitation without groups she may still make")
            // A member's invitation is for at most ten sign-ups; an admin's for a thousand.
            let many = try invite(server, ann, ["uses": 11])
            #expect(many.status == 400 && (many.jsonObject?["error"] as? [String: Any])?["field"] as? String == "uses")
            #expect(try made(invite(server, ann, ["uses": 10])).usesLeft == 10)
            #expect(try made(invite(server, root, ["uses": 1000])).usesLeft == 1000)
        }
        try withAccounts(.sqlite, signup: .open, invitations: .off) { server in
            let root = try server.signIn("root@example.com")
            _ = try GroupService(database: server.application.database, clock: server.clock, logger: Logger(label: "t"))
                .groups(email: "root@example.com", (.add, "admin"))
            #expect(try canInvite(server, root) == false)
            let refused = try invite(server, root)
            #expect(refused.status == 403 && refused.text.contains("off"), "\(refused.text)")
            #expect(try list(server, root).isEmpty && count(server) == 0)
        }
    }

    @Test("an invitation bound to an address is mailed there, works for it alone, and costs the mailbox's day of mail")
    func mailed() throws {
        var limits = RateLimitPolicy()
        limits.mailPerMailbox = RateLimit(1, per: 86400)
        try withAccounts(.sqlite, signup: .approval, rateLimits: limits, publicURL: "https://books.example.net") {
            server in
            let root = try member(server, "root@example.com", groups: ["admin"])
            let invitation = try made(invite(server, root, ["email": " Cy@Example.com "]))
            #expect(invitation.email == "cy@example.com" && invitation.mailed == true)
            let code = try #require(invitation.code)
            let mail = try #require(server.mailer.mails.last)
            #expect(mail.to == "cy@example.com" && mail.kind == "invitation")
            let link = try #require(invitation.link)
            #expect(mail.body.contains(code) && mail.body.contains(link))
            #expect(mail.body.contains("invited you"))
            #expect(!server.log.lines.joined().contains(code), "the code is never logged")
            let other = try signup(server, "eve@example.com", code)
            #expect(other.status == 400 && other.errorCodes == ["invalid_invitation"])
            #expect(try signup(server, "cy@example.com", code).status == 200)
            // The mailbox's day is spent ("cy+books" is cy's mailbox): refused, nothing made, no mail.
            let (before, mails) = (try count(server), server.mailer.mails.count)
            let again = try invite(server, root, ["email": "cy+books@example.com"])
            #expect(again.status == 429 && again.header("Retry-After") != nil, "\(again.text)")
            #expect(try count(server) == before && server.mailer.mails.count == mails)
        }
        // A relay that refuses: the invitation is made, and says it was not mailed.
        try withAccounts(.sqlite, signup: .approval, failingMailer: true) { server in
            let root = try member(server, "root@example.com", groups: ["admin"])
            let invitation = try made(invite(server, root, ["email": "cy@example.com"]))
            #expect(invitation.mailed == false && invitation.code != nil)
        }
    }

    @Test(
        "wrong terms, garbage, HTML, repeated keys or wrong types are 400 naming the field, make nothing and cost nothing; the day's budget then 429"
    )
    func badInput() throws {
        var limits = RateLimitPolicy()
        limits.invitationPerAccount = RateLimit(2, per: 86400)
        try withAccounts(.sqlite, signup: .approval, rateLimits: limits) { server in
            let root = try member(server, "root@example.com", groups: ["admin"])
            let cases: [(String, String)] = [
                ("", "invitation"), ("<html><body>hi</body></html>", "invitation"), ("[]", "invitation"),
                ("null", "invitation"), ("{\"uses\": 0}", "uses"), ("{\"uses\": 1001}", "uses"),
                ("{\"uses\": \"3\"}", "uses"), ("{\"uses\": 1.5}", "uses"), ("{\"expiresIn\": 10}", "expiresIn"),
                ("{\"expiresIn\": 99999999999}", "expiresIn"), ("{\"email\": \"not an address\"}", "email"),
                ("{\"email\": 7}", "email"), ("{\"groups\": \"family\"}", "groups"),
                ("{\"groups\": [\"Bad Name\"]}", "groups"), ("{\"groups\": [null]}", "groups"),
                ("{\"uses\": 1, \"uses\": 2}", "invitation"),
                ("{\"groups\": [" + (0..<33).map { "\"g\($0)\"" }.joined(separator: ",") + "]}", "groups"),
            ]
            for (body, field) in cases {
                let answer = try RawHTTP.request(
                    port: server.port, method: "POST", path: HomeportPath.invitations,
                    headers: [("X-Session-Token", root), ("Content-Type", "application/json")], body: Data(body.utf8))
                #expect(answer.status == 400 && answer.apiErrorCode == "invalid_field", "\(body): \(answer.text)")
                let named = (answer.jsonObject?["error"] as? [String: Any])?["field"] as? String
                #expect(named == field, "\(body): \(answer.text)")
            }
            #expect(try count(server) == 0)
            // None of them cost the budget: two are made, the third is refused.
            _ = try made(invite(server, root))
            _ = try made(invite(server, root, ["uses": 1000, "expiresIn": 366 * 86400]))
            let third = try invite(server, root)
            #expect(third.status == 429 && third.apiErrorCode == "rate_limited", "\(third.text)")
            #expect(try count(server) == 2)
        }
    }

    @Test("an inviter's invitations stop working with its account")
    func deletedInviter() throws {
        try withAccounts(.sqlite, signup: .approval) { server in
            let root = try member(server, "root@example.com", groups: ["admin"])
            let code = try #require(try made(invite(server, root, ["uses": 5])).code)
            #expect(try server.application.accounts.deleteAccount(email: "root@example.com"))
            let late = try signup(server, "ann@example.com", code)
            #expect(late.status == 400 && late.errorCodes == ["invalid_invitation"], "\(late.text)")
        }
    }
}

extension AppInvitationsTests {
    @Test(
        "a group's other spellings: the same group once, or refused; a refusal costs no budget; a misspelt term is refused by name"
    )
    func spellings() throws {
        var limits = RateLimitPolicy()
        limits.invitationPerAccount = RateLimit(2, per: 86400)
        try withAccounts(.sqlite, signup: .approval, rateLimits: limits, invitations: .members) { server in
            let ann = try member(server, "ann@example.com", groups: ["family"])
            for body: [String: Any] in [
                ["groups": ["Admin"]], ["groups": ["ADMIN"]], ["groups": ["family", "kids"]], ["groups": ["Kids"]],
            ] {
                let refused = try invite(server, ann, body)
                #expect(refused.status == 403, "\(body): \(refused.text)")
            }
            for (body, field) in [
                (["groups": ["\u{212A}ids"]], "groups"), (["emial": "cy@example.com"], "emial"),
                (["groups": ["family"], "group": ["admin"]], "group"),
            ] as [([String: Any], String)] {
                let refused = try invite(server, ann, body)
                let named = (refused.jsonObject?["error"] as? [String: Any])?["field"] as? String
                #expect(refused.status == 400 && named == field, "\(body): \(refused.text)")
            }
            #expect(try count(server) == 0)
            // None of the refusals cost the budget of two.
            #expect(try made(invite(server, ann, ["groups": ["FAMILY", "family", "Family"]])).groups == ["family"])
            #expect(try made(invite(server, ann)).groups.isEmpty)
            #expect(try invite(server, ann).status == 429)
        }
    }

    @Test(
        "an invitation gives only what its maker still holds when it is used, and nothing once the maker is held",
        arguments: Backend.allCases)
    func makerLosesRights(backend: Backend) throws {
        try withAccounts(backend, signup: .approval, invitations: .members) { server in
            let root = try member(server, "root@example.com", groups: ["admin", "family"])
            let ann = try member(server, "ann@example.com", groups: ["family", "kids"])
            let fromRoot = try #require(try made(invite(server, root, ["groups": ["admin", "club"], "uses": 5])).code)
            let fromAnn = try #require(try made(invite(server, ann, ["groups": ["family", "kids"], "uses": 5])).code)
            // Before: the groups as made.
            #expect(try signup(server, "a1@example.com", fromRoot).status == 200)
            #expect(try groups(server, "a1@example.com") == ["admin", "club"])
            #expect(try signup(server, "b1@example.com", fromAnn).status == 200)
            #expect(try groups(server, "b1@example.com") == ["family", "kids"])
            // Root is no admin any more, ann no longer in kids: their invitations give what they hold.
            let service = GroupService(
                database: server.application.database, clock: server.clock, logger: Logger(label: "t"))
            _ = try service.groups(email: "root@example.com", (.remove, "admin"))
            _ = try service.groups(email: "ann@example.com", (.remove, "kids"))
            #expect(try signup(server, "a2@example.com", fromRoot).status == 200)
            #expect(try groups(server, "a2@example.com") == [], "root holds neither admin nor club")
            #expect(try signup(server, "b2@example.com", fromAnn).status == 200)
            #expect(try groups(server, "b2@example.com") == ["family"])
            // Ann held: her invitation signs nobody up, with the one answer.
            #expect(try server.application.accounts.setApproval(.held, email: "ann@example.com"))
            let refused = try signup(server, "b3@example.com", fromAnn)
            #expect(refused.status == 400 && refused.errorCodes == ["invalid_invitation"], "\(refused.text)")
            #expect(try AccountStore(server.application.database).find(email: "b3@example.com") == nil)
            // Approved again, it works again (it was not spent by the refusal).
            #expect(try server.application.accounts.setApproval(.approved, email: "ann@example.com"))
            #expect(try signup(server, "b3@example.com", fromAnn).status == 200)
        }
    }

    @Test("the mail names the inviter only when the inviter's address is verified")
    func mailNamesVerifiedInviters() throws {
        try withAccounts(.sqlite, signup: .approval) { server in
            let root = try member(server, "root@example.com", groups: ["admin"])
            _ = try made(invite(server, root, ["email": "cy@example.com"]))
            let anonymous = try #require(server.mailer.mails.last)
            #expect(anonymous.body.hasPrefix("Someone with an account there invited you"), "\(anonymous.body)")
            #expect(!anonymous.body.contains("root@example.com"))
            let account = try #require(try AccountStore(server.application.database).find(email: "root@example.com"))
            try EmailVerificationStore(server.application.database).markVerified(
                userID: account.id, now: server.clock.unixSeconds)
            let verified = try server.signIn("root@example.com")
            _ = try made(invite(server, verified, ["email": "dee@example.com"]))
            #expect(try #require(server.mailer.mails.last).body.hasPrefix("root@example.com invited you"))
        }
    }

    private func groups(_ server: AccountsHarness, _ email: String) throws -> [String] {
        let account = try #require(try AccountStore(server.application.database).find(email: email))
        return try AccountGroups(server.application.database).groups(userID: account.id)
    }
}
