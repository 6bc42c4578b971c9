import Foundation
import HomeportServer
import HomeportStorage
import HomeportTestSupport
import Testing

/// Signing in with the household's OpenID Connect provider at the app door
/// (`auth/provider/token`), as allauth answers it, and who the person turns out to be: the
/// account linked to them, an account with their address only when the operator allowed it and
/// the provider verified it, or a sign-up under the server's own rules.
@Suite("Provider sign-in at the app door", .tags(.process, .postgres, .interop))
struct ProviderSignInTests {
    static let app = "homeport-app"

    /// Adds the stand-in as provider `id`, as an operator does (`homeport-server oidc add`).
    func addProvider(
        _ server: AccountsHarness, _ standIn: OIDCStandIn, id: String = "household", link: Bool = false,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        var arguments = [
            "oidc", "add", id, "--issuer", standIn.issuer, "--client-id", "homeport-web", "--app-client-id", Self.app,
            "--name", "Household " + id, "--database", server.url.rawText,
        ]
        if link { arguments.append("--link-verified-email") }
        let added = try ServerProcess.run(arguments)
        #expect(added.status == 0, "\(added.error)", sourceLocation: sourceLocation)
        // The server reads its providers at most once a second.
        server.clock.advance(by: 1)
    }

    /// An ID token for `subject` from the stand-in, for the app's client, at the server's time.
    func token(
        _ standIn: OIDCStandIn, _ server: AccountsHarness, subject: String, email: String? = nil,
        verified: Bool? = nil
    ) throws -> String {
        try standIn.mint(
            standIn.claims(
                subject: subject, audience: Self.app, now: Int64(server.clock.now().timeIntervalSince1970),
                email: email, emailVerified: verified))
    }

    /// `POST auth/provider/token`.
    func handOver(
        _ server: AccountsHarness, _ idToken: String, provider: String = "household", process: String = "login",
        session: String? = nil
    ) throws -> RawResponse {
        try server.app(
            "POST", "auth/provider/token", token: session,
            json: ["provider": provider, "process": process, "token": ["client_id": Self.app, "id_token": idToken]])
    }

    func flows(_ response: RawResponse) -> [[String: Any]] {
        (response.jsonObject?["data"] as? [String: Any])?["flows"] as? [[String: Any]] ?? []
    }

    func user(_ response: RawResponse) -> [String: Any] {
        ((response.jsonObject?["data"] as? [String: Any])?["user"] as? [String: Any]) ?? [:]
    }

    @Test("config lists the provider as allauth does; a new person signs up and in; a token signs in once")
    func signUpAndIn() throws {
        let standIn = try OIDCStandIn()
        try withAccounts(.sqlite) { server in
            try addProvider(server, standIn)
            let config = try server.app("GET", "config").jsonObject?["data"] as? [String: Any]
            let listed = (config?["socialaccount"] as? [String: Any])?["providers"] as? [[String: Any]]
            #expect(listed?.count == 1)
            #expect(
                listed?.first?["id"] as? String == "household"
                    && listed?.first?["name"] as? String == "Household household")
            #expect(listed?.first?["client_id"] as? String == Self.app)
            #expect(listed?.first?["flows"] as? [String] == ["provider_token"])
            #expect(
                listed?.first?["openid_configuration_url"] as? String
                    == standIn.issuer + "/.well-known/openid-configuration")
            let signedOut = try server.app("GET", "auth/session")
            #expect(
                flows(signedOut).contains {
                    $0["id"] as? String == "provider_token" && $0["providers"] as? [String] == ["household"]
                })

            let idToken = try token(standIn, server, subject: "ada-1", email: "ada@example.com", verified: true)
            let first = try handOver(server, idToken)
            #expect(first.status == 200, "\(first.text)")
            let session = try #require(first.sessionToken)
            #expect(user(first)["email"] as? String == "ada@example.com")
            #expect(user(first)["has_usable_password"] as? Bool == false)
            let methods = (first.jsonObject?["data"] as? [String: Any])?["methods"] as? [[String: Any]]
            #expect(methods?.first?["method"] as? String == "socialaccount")
            #expect(
                methods?.first?["provider"] as? String == "household" && methods?.first?["uid"] as? String == "ada-1")
            #expect(try server.app("GET", "auth/session", token: session).status == 200)
            // The same token again: spent.
            let replay = try handOver(server, idToken)
            #expect(replay.status == 400 && replay.errorCodes == ["invalid_token"], "\(replay.text)")
            // A new token of the same person: the same account.
            let again = try handOver(server, try token(standIn, server, subject: "ada-1", email: "ada@example.com"))
            #expect(again.status == 200 && user(again)["id"] as? Int == user(first)["id"] as? Int, "\(again.text)")
            // No password signs in to the account the provider made.
            let guess = try server.app("POST", "auth/login", json: ["email": "ada@example.com", "password": "!"])
            #expect(guess.status == 400)
            // The linked provider account, listed; the last way in is not removed.
            let linked = try server.app("GET", "account/providers", token: session)
            let accounts = try #require(linked.jsonObject?["data"] as? [[String: Any]])
            #expect(accounts.count == 1 && accounts.first?["uid"] as? String == "ada-1")
            #expect((accounts.first?["provider"] as? [String: Any])?["id"] as? String == "household")
            let last = try server.app(
                "DELETE", "account/providers", token: session, json: ["provider": "household", "account": "ada-1"])
            #expect(last.status == 400 && last.errorCodes == ["no_password"], "\(last.text)")
            let unknown = try server.app(
                "DELETE", "account/providers", token: session, json: ["provider": "household", "account": "bob"])
            #expect(unknown.status == 400 && unknown.errorCodes == ["account_not_found"], "\(unknown.text)")
            // Nothing of the token reaches the log.
            #expect(!server.log.lines.joined().contains(idToken.split(separator: ".")[2]))
        }
    }

    @Test("the request is checked as allauth checks it: fields, process, token shape, client, id_token")
    func validation() throws {
        let standIn = try OIDCStandIn()
        try withAccounts(.sqlite) { server in
            try addProvider(server, standIn)
            func post(_ json: [String: Any]) throws -> RawResponse {
                try server.app("POST", "auth/provider/token", json: json)
            }
            let empty = try post([:])
            #expect(empty.status == 400)
            let params = (empty.jsonObject?["errors"] as? [[String: Any]])?.compactMap { $0["param"] as? String }
            #expect(params == ["provider", "process", "token"], "\(empty.text)")
            let choice = try post(["provider": "household", "process": "steal", "token": ["client_id": Self.app]])
            #expect(choice.errorCodes.first == "invalid_choice", "\(choice.text)")
            let notObject = try post(["provider": "household", "process": "login", "token": "eyJ..."])
            #expect(notObject.errorCodes == ["invalid_token"], "\(notObject.text)")
            let noClient = try post(["provider": "household", "process": "login", "token": ["id_token": "x"]])
            #expect(noClient.errorCodes == ["client_id_required"], "\(noClient.text)")
            let noToken = try post(["provider": "household", "process": "login", "token": ["client_id": Self.app]])
            #expect(noToken.errorCodes == ["token_required"], "\(noToken.text)")
            let otherClient = try post([
                "provider": "household", "process": "login", "token": ["client_id": "someone-else", "id_token": "x"],
            ])
            #expect(otherClient.errorCodes == ["invalid_token"], "\(otherClient.text)")
            let otherProvider = try handOver(server, try token(standIn, server, subject: "ada-1"), provider: "google")
            #expect(otherProvider.errorCodes == ["invalid_token"], "\(otherProvider.text)")
            let garbage = try handOver(server, "<html>nope</html>")
            #expect(garbage.status == 400 && garbage.errorCodes == ["invalid_token"], "\(garbage.text)")
            // A key named twice is refused, not read as one of the two.
            let twice = try RawHTTP.request(
                port: server.port, method: "POST", path: "/_allauth/app/v1/auth/provider/token",
                headers: [("Content-Type", "application/json")],
                body: Data(#"{"provider":"household","provider":"other","process":"login","token":{}}"#.utf8))
            #expect(twice.status == 400, "\(twice.text)")
            #expect(try server.app("GET", "config").status == 200)
        }
    }

    @Test(
        "an address with an account links only with --link-verified-email and a verified address; else a sign-up asks for another"
    )
    func linkingByAddress() throws {
        let standIn = try OIDCStandIn()
        try withAccounts(.sqlite) { server in
            let password = try server.signIn("ada@example.com")
            let adaID = user(try server.app("GET", "auth/session", token: password))["id"] as? Int
            try addProvider(server, standIn, id: "strict")
            try addProvider(server, standIn, id: "trusted", link: true)
            // A provider not trusted with addresses: the address is taken, so a sign-up waits for another.
            let claimed = try handOver(
                server, try token(standIn, server, subject: "ada-1", email: "ada@example.com", verified: true),
                provider: "strict")
            #expect(claimed.status == 401, "\(claimed.text)")
            let pending = flows(claimed).first { $0["id"] as? String == "provider_signup" }
            #expect(pending?["is_pending"] as? Bool == true)
            #expect((pending?["provider"] as? [String: Any])?["id"] as? String == "strict")
            let waiting = try #require(claimed.sessionToken)
            let form = try server.app("GET", "auth/provider/signup", token: waiting)
            #expect(form.status == 200, "\(form.text)")
            #expect(
                ((form.jsonObject?["data"] as? [String: Any])?["account"] as? [String: Any])?["uid"] as? String
                    == "ada-1")
            let taken = try server.app(
                "POST", "auth/provider/signup", token: waiting, json: ["email": "ada@example.com"])
            #expect(taken.status == 400 && taken.errorCodes == ["email_taken"], "\(taken.text)")
            #expect(taken.text.contains("connect your Household strict account"))
            let other = try server.app(
                "POST", "auth/provider/signup", token: waiting, json: ["email": "ada@home.example"])
            #expect(other.status == 200, "\(other.text)")
            #expect(user(other)["email"] as? String == "ada@home.example" && user(other)["id"] as? Int != adaID)
            // The pending sign-up is spent.
            #expect(try server.app("GET", "auth/provider/signup", token: waiting).status != 200)

            // A trusted provider, but the address not verified: not linked.
            let unverified = try handOver(
                server, try token(standIn, server, subject: "ada-2", email: "ada@example.com", verified: false),
                provider: "trusted")
            #expect(unverified.status == 401 && flows(unverified).contains { $0["id"] as? String == "provider_signup" })
            // Trusted and verified by the provider, but the address was never verified here: an
            // account someone made with Ada's address is not linked to her provider account.
            let unproven = try handOver(
                server, try token(standIn, server, subject: "ada-3", email: "ADA@example.com", verified: true),
                provider: "trusted")
            #expect(unproven.status == 401 && flows(unproven).contains { $0["id"] as? String == "provider_signup" })
            let verified = try ServerProcess.run([
                "users", "verify", "ada@example.com", "--database", server.url.rawText,
            ])
            #expect(verified.status == 0, "\(verified.error)")
            // Verified on both sides: Ada's own account.
            let linked = try handOver(
                server, try token(standIn, server, subject: "ada-3", email: "ADA@example.com", verified: true),
                provider: "trusted")
            #expect(linked.status == 200 && user(linked)["id"] as? Int == adaID, "\(linked.text)")
        }
    }

    @Test(
        "asking a provider sign-up for an address costs a sign-up, taken or not: which addresses have accounts is not free to learn"
    )
    func takenAddressesCost() throws {
        let standIn = try OIDCStandIn()
        var limits = RateLimitPolicy()
        limits.signupPerAddress = RateLimit(3, per: 3600)
        try withAccounts(.sqlite, rateLimits: limits) { server in
            _ = try server.signIn("ada@example.com")  // one sign-up of three
            try addProvider(server, standIn)
            let pending = try handOver(server, try token(standIn, server, subject: "mallory-1"))
            let waiting = try #require(pending.sessionToken, "\(pending.text)")
            let answers = try (0..<3).map { _ in
                try server.app("POST", "auth/provider/signup", token: waiting, json: ["email": "ada@example.com"])
            }
            #expect(answers.map(\.status) == [400, 400, 429], "\(answers.map(\.text))")
            #expect(answers[0].errorCodes == ["email_taken"])
        }
    }

    @Test("a person linked to one account cannot be connected to another; connecting needs a session")
    func connectedElsewhere() throws {
        let standIn = try OIDCStandIn()
        try withAccounts(.sqlite) { server in
            try addProvider(server, standIn)
            let ada = try server.signIn("ada@example.com")
            let bob = try server.signIn("bob@example.com")
            let connect = try handOver(
                server, try token(standIn, server, subject: "ada-1"), process: "connect", session: ada)
            #expect(connect.status == 200 && user(connect)["email"] as? String == "ada@example.com", "\(connect.text)")
            let stolen = try handOver(
                server, try token(standIn, server, subject: "ada-1"), process: "connect", session: bob)
            #expect(stolen.status == 400 && stolen.errorCodes == ["connected_other"], "\(stolen.text)")
            let anonymous = try handOver(server, try token(standIn, server, subject: "ada-1"), process: "connect")
            #expect(anonymous.status == 401, "\(anonymous.text)")
            // The link signs in to Ada's account; Ada has a password, so the link may go.
            let signedIn = try handOver(server, try token(standIn, server, subject: "ada-1"))
            #expect(signedIn.status == 200 && user(signedIn)["email"] as? String == "ada@example.com")
            let removed = try server.app(
                "DELETE", "account/providers", token: ada, json: ["provider": "household", "account": "ada-1"])
            #expect(
                removed.status == 200 && (removed.jsonObject?["data"] as? [Any])?.isEmpty == true, "\(removed.text)")
        }
    }

    @Test(
        "a provider account linked before the address was proven ends when the address's owner resets the password; a proven one stays",
        arguments: Backend.allCases)
    func linkedBeforeTheOwner(backend: Backend) throws {
        let standIn = try OIDCStandIn()
        try withAccounts(backend) { server in
            try addProvider(server, standIn)
            // Mallory makes Ada's account first, through a provider that does not vouch for
            // the address; and makes Bob's with a password, then connects her provider account.
            let made = try handOver(
                server, try token(standIn, server, subject: "mallory-1", email: "ada@example.com", verified: false))
            #expect(made.status == 200 && user(made)["email"] as? String == "ada@example.com", "\(made.text)")
            let bob = try server.signIn("bob@example.com")
            let connected = try handOver(
                server, try token(standIn, server, subject: "mallory-2"), process: "connect", session: bob)
            #expect(connected.status == 200, "\(connected.text)")
            // Carol's own provider vouches for her address.
            let carol = try handOver(
                server, try token(standIn, server, subject: "carol-1", email: "carol@example.com", verified: true))
            #expect(carol.status == 200, "\(carol.text)")
            // Each address's owner takes the account back with a reset.
            for email in ["ada@example.com", "bob@example.com", "carol@example.com"] {
                let reset = try server.resetPassword(email, to: "the owner's own password")
                #expect(reset.status == 401, "\(email): \(reset.text)")
            }
            for subject in ["mallory-1", "mallory-2"] {
                let again = try handOver(
                    server,
                    try token(standIn, server, subject: subject, email: "ada@example.com", verified: false))
                #expect(again.status == 401, "\(subject): \(again.text)")
                #expect(again.sessionToken.map { try? server.appInfo($0).status } != 200)
                #expect(user(again).isEmpty, "\(subject) signs in to no account: \(again.text)")
            }
            let back = try handOver(server, try token(standIn, server, subject: "carol-1"))
            #expect(back.status == 200 && user(back)["email"] as? String == "carol@example.com", "\(back.text)")
            let login = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": "the owner's own password"])
            #expect(login.status == 200)
            // The reset proved the address: what Ada connects now is hers, and stays at her next reset.
            let own = try handOver(
                server, try token(standIn, server, subject: "ada-own"), process: "connect", session: login.sessionToken)
            #expect(own.status == 200, "\(own.text)")
            try server.resetPassword("ada@example.com", to: "another own password")
            let kept = try handOver(server, try token(standIn, server, subject: "ada-own"))
            #expect(kept.status == 200 && user(kept)["email"] as? String == "ada@example.com", "\(kept.text)")
        }
    }

    @Test("a removed provider's tokens are refused; added again, its people find their accounts")
    func removedProvider() throws {
        let standIn = try OIDCStandIn()
        try withAccounts(.sqlite) { server in
            try addProvider(server, standIn)
            let first = try handOver(server, try token(standIn, server, subject: "ada-1", email: "ada@example.com"))
            #expect(first.status == 200, "\(first.text)")
            let removed = try ServerProcess.run(["oidc", "remove", "household", "--database", server.url.rawText])
            #expect(removed.status == 0 && removed.output.contains("removed"))
            server.clock.advance(by: 1)
            let refused = try handOver(server, try token(standIn, server, subject: "ada-1"))
            #expect(refused.status == 400 && refused.errorCodes == ["invalid_token"], "\(refused.text)")
            #expect(
                try server.app("GET", "config").jsonObject.map {
                    ($0["data"] as? [String: Any])?["socialaccount"] == nil
                } == true)
            try addProvider(server, standIn)
            let back = try handOver(server, try token(standIn, server, subject: "ada-1"))
            #expect(back.status == 200 && user(back)["id"] as? Int == user(first)["id"] as? Int, "\(back.text)")
        }
    }

    @Test("sign-up follows the server's mode: approval waits (no session), closed is 403; known people still sign in")
    func signupModes() throws {
        let standIn = try OIDCStandIn()
        try withAccounts(.sqlite, signup: .approval) { server in
            try addProvider(server, standIn)
            let waiting = try handOver(server, try token(standIn, server, subject: "ada-1", email: "ada@example.com"))
            #expect(waiting.status == 401 && waiting.sessionToken != nil, "\(waiting.text)")
            let standing = try server.standing(waiting.sessionToken)
            #expect(standing.text.contains("waiting"), "\(standing.text)")
            // Signing in again before approval: still waiting, no session.
            let again = try handOver(server, try token(standIn, server, subject: "ada-1"))
            #expect(again.status == 401, "\(again.text)")
            let approved = try ServerProcess.run([
                "users", "approve", "ada@example.com", "--database", server.url.rawText,
            ])
            #expect(approved.status == 0, "\(approved.error)")
            let signedIn = try handOver(server, try token(standIn, server, subject: "ada-1"))
            #expect(signedIn.status == 200, "\(signedIn.text)")
        }
        try withAccounts(.sqlite, signup: .closed) { server in
            try addProvider(server, standIn)
            let closed = try handOver(server, try token(standIn, server, subject: "ada-1", email: "ada@example.com"))
            #expect(closed.status == 403, "\(closed.text)")
            #expect(
                try server.app("POST", "auth/login", json: ["email": "ada@example.com", "password": "x"]).status == 400)
        }
    }

    @Test("an account with a second factor waits for it after a provider sign-in, as after a password")
    func secondFactor() throws {
        let standIn = try OIDCStandIn()
        try withAccounts(.sqlite) { server in
            try addProvider(server, standIn)
            let two = TwoFactorTests()
            let ada = try two.enroll(server, "ada@example.com")
            let connect = try handOver(
                server, try token(standIn, server, subject: "ada-1"), process: "connect", session: ada.token)
            #expect(connect.status == 200, "\(connect.text)")
            let pending = try handOver(server, try token(standIn, server, subject: "ada-1"))
            #expect(pending.status == 401, "\(pending.text)")
            #expect(
                flows(pending).contains {
                    $0["id"] as? String == "mfa_authenticate" && $0["is_pending"] as? Bool == true
                })
            let waiting = try #require(pending.sessionToken)
            #expect(try server.app("GET", "account/providers", token: waiting).status == 401)
            server.clock.advance(by: 30)
            let done = try server.app(
                "POST", "auth/2fa/authenticate", token: waiting, json: ["code": two.code(ada.secret, server)])
            #expect(done.status == 200, "\(done.text)")
            let methods = (done.jsonObject?["data"] as? [String: Any])?["methods"] as? [[String: Any]] ?? []
            #expect(methods.compactMap { $0["method"] as? String } == ["socialaccount", "mfa"], "\(done.text)")
        }
    }

    @Test("under verification by code, a provider's verified address counts as verified; an unverified one gets a code")
    func verificationByCode() throws {
        let standIn = try OIDCStandIn()
        try withAccounts(.sqlite, emailVerification: .code) { server in
            try addProvider(server, standIn)
            let vouched = try handOver(
                server, try token(standIn, server, subject: "ada-1", email: "ada@example.com", verified: true))
            #expect(vouched.status == 200, "\(vouched.text)")
            #expect(server.mailer.verificationCode(for: "ada@example.com") == nil)
            let unverified = try handOver(
                server, try token(standIn, server, subject: "bob-1", email: "bob@example.com", verified: false))
            #expect(unverified.status == 401, "\(unverified.text)")
            #expect(
                flows(unverified).contains {
                    $0["id"] as? String == "verify_email" && $0["is_pending"] as? Bool == true
                })
            let code = try #require(server.mailer.verificationCode(for: "bob@example.com"))
            let verified = try server.app(
                "POST", "auth/email/verify", token: unverified.sessionToken, json: ["key": code])
            #expect(verified.status == 200 && verified.sessionToken != nil, "\(verified.text)")
            // Verified now: the next provider sign-in goes straight in.
            let next = try handOver(server, try token(standIn, server, subject: "bob-1"))
            #expect(next.status == 200, "\(next.text)")
            // The code came to Bob on the session his provider account opened: the link is his,
            // and a reset (how a provider's account gets a password) keeps it.
            try server.resetPassword("bob@example.com", to: "bob's own password")
            let after = try handOver(server, try token(standIn, server, subject: "bob-1"))
            #expect(after.status == 200 && user(after)["email"] as? String == "bob@example.com", "\(after.text)")
            // Cy leaves her sign-up's code unentered and signs in through the provider later: the
            // code entered on that sign-in's session proves the link as well.
            let abandoned = try handOver(
                server, try token(standIn, server, subject: "cy-1", email: "cy@example.com", verified: false))
            #expect(abandoned.status == 401, "\(abandoned.text)")
            server.clock.advance(by: 181)  // the mail budget: one code per 3 minutes
            let later = try handOver(server, try token(standIn, server, subject: "cy-1"))
            #expect(later.status == 401, "\(later.text)")
            let cyCode = try #require(server.mailer.verificationCode(for: "cy@example.com"))
            let cyIn = try server.app("POST", "auth/email/verify", token: later.sessionToken, json: ["key": cyCode])
            #expect(cyIn.status == 200, "\(cyIn.text)")
            try server.resetPassword("cy@example.com", to: "cy's own password")
            let cyAfter = try handOver(server, try token(standIn, server, subject: "cy-1"))
            #expect(cyAfter.status == 200 && user(cyAfter)["email"] as? String == "cy@example.com", "\(cyAfter.text)")
        }
    }

    @Test("two first sign-ins of one person, held at the links table and let go together, make one account")
    func firstSignInsAtOnce() throws {
        let standIn = try OIDCStandIn()
        try withAccounts(.postgres) { server in
            try addProvider(server, standIn)
            let tokens = try (0..<2).map { _ in
                try token(standIn, server, subject: "ada-1", email: "ada@example.com", verified: true)
            }
            let database = try server.url.open()
            defer { database.close() }
            let lock = try TableLock(server.url, table: "provider_links")
            let answers = LockedBox<[RawResponse]>([])
            let group = DispatchGroup()
            for idToken in tokens {
                DispatchQueue.global().async(group: group) {
                    if let answer = try? handOver(server, idToken) { answers.mutate { $0.append(answer) } }
                }
            }
            // Both read the links table (and wait for it) before either goes on.
            let lined = try waitForLockWaiters(2, in: database)
            lock.release()
            #expect(lined)
            #expect(group.wait(timeout: .now() + 30) == .success)
            let all = answers.value
            #expect(all.count == 2 && all.allSatisfy { $0.status == 200 }, "\(all.map(\.text))")
            #expect(Set(all.compactMap { user($0)["id"] as? Int }).count == 1)
            #expect(try database.execute("SELECT COUNT(*) AS n FROM users").first?.int("n") == 1)
        }
    }

    @Test("two first sign-ins of one person at once make one account", arguments: Backend.allCases)
    func concurrentFirstSignIns(backend: Backend) throws {
        let standIn = try OIDCStandIn()
        try withAccounts(backend) { server in
            try addProvider(server, standIn)
            let tokens = try (0..<6).map { _ in
                try token(standIn, server, subject: "ada-1", email: "ada@example.com", verified: true)
            }
            let answers = LockedBox<[RawResponse]>([])
            DispatchQueue.concurrentPerform(iterations: tokens.count) { index in
                if let answer = try? handOver(server, tokens[index]) { answers.mutate { $0.append(answer) } }
            }
            let all = answers.value
            #expect(all.count == tokens.count && all.allSatisfy { $0.status == 200 }, "\(all.map(\.text))")
            #expect(Set(all.compactMap { user($0)["id"] as? Int }).count == 1)
        }
    }
}
