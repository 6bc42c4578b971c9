import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// Invitations: a code that signs up whatever the sign-up mode, skipping the queue.
@Suite("Invitations: sign-up by code, whatever the mode, once per use", .tags(.postgres, .process, .browser))
struct InvitationsTests {
    static let password = "correct horse battery"

    private func invite(
        _ server: AccountsHarness, email: String? = nil, groups: [String] = [], uses: Int64 = 1, life: Int64 = 86400
    ) throws -> (Invitation, String) {
        let service = InvitationService(
            database: server.application.database, clock: server.clock, random: SystemRandom(),
            logger: Logger(label: "t"))
        guard
            case .made(let invitation, let code) = try service.create(
                email: email, groups: groups, uses: uses, life: life, by: nil)
        else { throw RawHTTPError("no invitation") }
        return (invitation, code)
    }

    private func signup(_ server: AccountsHarness, _ email: String, invitation: String?) throws -> RawResponse {
        var body: [String: Any] = ["email": email, "password": Self.password]
        if let invitation { body["invitation"] = invitation }
        return try server.app("POST", "auth/signup", json: body)
    }

    @Test(
        "under closed and approval sign-up, an invitation signs in at once with its groups; without one nothing changes",
        arguments: Backend.allCases)
    func signsUp(backend: Backend) throws {
        for mode in [SignupPolicy.closed, .approval] {
            try withAccounts(backend, signup: mode) { server in
                #expect(
                    try signup(server, "nobody@example.com", invitation: nil).status == (mode == .closed ? 403 : 401))
                let (_, code) = try invite(server, groups: ["family", "kids"])
                let invited = try signup(server, "ann@example.com", invitation: code)
                #expect(invited.status == 200 && invited.sessionToken != nil, "\(mode): \(invited.text)")
                let account = try #require(try AccountStore(server.application.database).find(email: "ann@example.com"))
                #expect(account.approval == .approved)
                #expect(
                    try AccountGroups(server.application.database).groups(userID: account.id) == ["family", "kids"])
                #expect(
                    !(try server.application.signups.pending().contains { $0.email == "ann@example.com" }), "no queue")
                // Used: the same code again is refused.
                let again = try signup(server, "bob@example.com", invitation: code)
                #expect(again.status == 400 && again.errorCodes == ["invalid_invitation"], "\(again.text)")
                #expect(try AccountStore(server.application.database).find(email: "bob@example.com") == nil)
            }
        }
    }

    @Test(
        "wrong, used, expired, revoked and another address's codes get one answer, taken address or not, and cost the sign-up budget"
    )
    func refusals() throws {
        var limits = RateLimitPolicy()
        limits.signupPerAddress = RateLimit(9, per: 3600)
        try withAccounts(.sqlite, signup: .closed, rateLimits: limits) { server in
            let (_, used) = try invite(server)
            #expect(try signup(server, "first@example.com", invitation: used).status == 200)
            let (expiring, expired) = try invite(server, life: 60)
            let (revokedOne, revoked) = try invite(server)
            let (_, bound) = try invite(server, email: "cy@example.com")
            server.clock.advance(by: 61)
            #expect(
                try InvitationService(
                    database: server.application.database, clock: server.clock, random: SystemRandom(),
                    logger: Logger(label: "t")
                ).revoke(id: revokedOne.id))
            _ = expiring
            var bodies: Set<String> = []
            let madeUp = try SecretToken.generate()
            for (email, code) in [
                ("a@example.com", madeUp), ("b@example.com", used), ("c@example.com", expired),
                ("d@example.com", revoked), ("eve@example.com", bound), ("first@example.com", madeUp),
                ("first@example.com", "not a code"),
            ] {
                let answer = try signup(server, email, invitation: code)
                #expect(answer.status == 400 && answer.errorCodes == ["invalid_invitation"], "\(code): \(answer.text)")
                bodies.insert(answer.text)
                if email != "first@example.com" {
                    #expect(try AccountStore(server.application.database).find(email: email) == nil)
                }
            }
            #expect(bodies.count == 1, "one answer, whatever the reason, an address with an account too: \(bodies)")
            // A made-up code with a bad password too: still the invitation's answer, not the form's.
            let weak = try server.app(
                "POST", "auth/signup", json: ["email": "first@example.com", "password": "x", "invitation": madeUp])
            #expect(weak.status == 400 && weak.text == bodies.first, "\(weak.text)")
            // Nine sign-ups from this address spent the budget (the first one, and eight refused).
            #expect(try signup(server, "cy@example.com", invitation: bound).status == 429)
        }
    }

    @Test("under verification by code, a made-up code with a taken address mails nobody and answers as any other")
    func refusalUnderVerification() throws {
        try withAccounts(.sqlite, signup: .closed, emailVerification: .code) { server in
            let (_, code) = try invite(server)
            let first = try signup(server, "ann@example.com", invitation: code)
            #expect(first.status == 401, "invited, and verifying the address: \(first.text)")
            let mails = server.mailer.mails.count
            let madeUp = try SecretToken.generate()
            let taken = try signup(server, "ann@example.com", invitation: madeUp)
            let free = try signup(server, "zed@example.com", invitation: madeUp)
            #expect(taken.status == 400 && taken.text == free.text && free.errorCodes == ["invalid_invitation"])
            #expect(server.mailer.mails.count == mails, "no mail to the address's owner")
        }
    }

    @Test(
        "two sign-ups racing for an invitation's last use: one signs up, the other is refused, on both backends",
        arguments: Backend.allCases)
    func race(backend: Backend) throws {
        try withAccounts(backend, signup: .closed) { server in
            let (_, code) = try invite(server, uses: 1)
            // On PostgreSQL both sign-ups create their account and wait at the invitation's
            // update behind a share lock, which goes once both wait there; SQLite runs one
            // writer at a time.
            let lock = backend == .postgres ? try TableLock(server.url, table: "invitations", stopping: .writes) : nil
            let outcomes = LockedBox<[String: String]>([:])
            let done = DispatchGroup()
            for email in ["ann@example.com", "bob@example.com"] {
                done.enter()
                Thread.detachNewThread {
                    defer { done.leave() }
                    let outcome: String
                    switch try? server.application.accounts.signup(
                        email: email, password: Self.password, address: "192.0.2.\(email.count)", kind: .app,
                        current: .none, invitation: code)
                    {
                    case .signedIn: outcome = "signed in"
                    case .invalid(let problems) where problems.map(\.code) == ["invalid_invitation"]:
                        outcome = "refused"
                    default: outcome = "other"
                    }
                    outcomes.mutate { $0[email] = outcome }
                }
            }
            if let lock {
                #expect(try lock.waitForWaiters(2), "both sign-ups wait at the invitation")
                lock.release()
            }
            _ = done.wait(timeout: .now() + 30)
            let seen = outcomes.value
            #expect(seen.values.sorted() == ["refused", "signed in"], "\(seen)")
            let loser = try #require(seen.first { $0.value == "refused" }?.key)
            #expect(try AccountStore(server.application.database).find(email: loser) == nil, "nothing stays of it")
        }
    }

    @Test("the web door's sign-up page carries an invitation's link into the form, and signs up with it")
    func webDoor() throws {
        try withAccounts(.sqlite, signup: .closed) { server in
            let (_, code) = try invite(server, email: "ann@example.com")
            let browser = Browser(port: server.port)
            let form = try browser.get("/account/signup?invitation=\(code)")
            #expect(form.status == 200 && form.text.contains("name=\"invitation\" value=\"\(code)\""))
            #expect(
                !(try Browser(port: server.port).get("/account/signup?invitation=%3Cscript%3E").text.contains(
                    "<script>")))
            let signup = try browser.post(
                "/account/signup", ["email": "ann@example.com", "password": Self.password, "invitation": code])
            #expect(signup.status == 303, "\(signup.text)")
            #expect(try browser.get("/account").text.contains("ann@example.com"))
            let stranger = Browser(port: server.port)
            _ = try stranger.get("/account/signup")
            let refused = try stranger.post(
                "/account/signup", ["email": "eve@example.com", "password": Self.password, "invitation": code])
            #expect(refused.status == 400 && refused.text.contains("This invitation cannot be used."))
        }
    }

    @Test("homeport-server invites create, list and revoke; bad input is a clear error")
    func commandLine() throws {
        let files = try TemporaryDirectory()
        defer { files.remove() }
        let database = "sqlite:" + files.file("h.sqlite")
        let made = try ServerProcess.run(
            [
                "invites", "create", "--email", "Ann@Example.com", "--groups", "family,Kids", "--uses", "2",
                "--expires",
                "3d", "--public-url", "https://home.example.net/", "--json", "--database", database,
            ])
        #expect(made.status == 0, "\(made.error)")
        let object = try #require(
            (try? JSONSerialization.jsonObject(with: Data(made.output.utf8))) as? [String: Any], "\(made.output)")
        let code = try #require(object["code"] as? String)
        #expect(object["link"] as? String == "https://home.example.net/account/signup?invitation=" + code)
        #expect(object["email"] as? String == "ann@example.com" && object["groups"] as? [String] == ["family", "kids"])
        #expect(object["uses"] as? Int == 2)
        #expect(made.error.contains("invitation made"), "the change is logged: \(made.error)")
        let listed = try ServerProcess.run(["invites", "list", "--database", database])
        #expect(listed.output.contains("ann@example.com groups family,kids  2 left"), "\(listed.output)")
        #expect(listed.output.contains("  by operator"), "\(listed.output)")
        #expect(!listed.output.contains(code), "never the code")
        let id = try #require(object["id"] as? Int)
        #expect(try ServerProcess.run(["invites", "revoke", String(id), "--database", database]).status == 0)
        let again = try ServerProcess.run(["invites", "revoke", String(id), "--database", database])
        #expect(again.status == 1 && again.error.contains("no invitation"))
        #expect(try ServerProcess.run(["invites", "list", "--database", database]).output.contains("revoked"))
        for (arguments, message) in [
            (["--expires", "7w"], "--expires"), (["--uses", "0"], "1 to 1000"), (["--groups", "a b"], "group's name"),
            (["--email", "not an address"], "not an address"),
        ] {
            let bad = try ServerProcess.run(["invites", "create"] + arguments + ["--database", database])
            #expect(bad.status == 2 && bad.error.contains(message), "\(arguments): \(bad.error)")
        }
    }
}
