import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// Passkeys at the app door, in django-allauth's shapes: added after a confirmation, listed,
/// renamed and removed; a sign-in with one alone, and every lie about it refused.
@Suite("Passkeys at the app door: add, sign in, rename, remove, and every lie refused", .tags(.postgres))
struct PasskeysTests {
    static let password = "correct horse battery"
    static let url = passkeyOrigin

    /// Under verification by code: ada signs up, verifies her address, adds a passkey, and then
    /// her address is no longer verified (as if verification were turned on after): her
    /// passkey's authenticator.
    private func unverifiedWithPasskey(_ server: AccountsHarness) throws -> SoftAuthenticator {
        let signup = try server.app(
            "POST", "auth/signup", json: ["email": "ada@example.com", "password": Self.password])
        let code = try #require(server.mailer.verificationCode(for: "ada@example.com"))
        let verified = try server.app(
            "POST", "auth/email/verify", token: try #require(signup.sessionToken), json: ["key": code])
        let token = try #require(verified.sessionToken, "\(verified.text)")
        let confirmed = try server.app("POST", "auth/reauthenticate", token: token, json: ["password": Self.password])
        #expect(confirmed.status == 200)
        let authenticator = try SoftAuthenticator()
        #expect(try addPasskey(server, token, authenticator).status == 200)
        try server.application.database.execute("DELETE FROM verified_emails")
        return authenticator
    }

    @Test(
        "a confirmed session adds a passkey, which then signs in alone and is listed; the config says passkeys",
        arguments: Backend.allCases)
    func addAndSignIn(backend: Backend) throws {
        try withAccounts(backend, publicURL: Self.url) { server in
            let config = try server.app("GET", "config")
            let mfa = try #require((config.jsonObject?["data"] as? [String: Any])?["mfa"] as? [String: Any])
            #expect(mfa["passkey_login_enabled"] as? Bool == true)
            #expect((mfa["supported_types"] as? [String])?.contains("webauthn") == true, "\(config.text)")

            let token = try server.signIn("ada@example.com")
            let authenticator = try SoftAuthenticator()
            // Not confirmed: allauth's reauthentication flow, no options (and no challenge).
            let early = try server.app("GET", AllauthAppPath.webAuthn + "?passwordless", token: token)
            #expect(early.status == 401, "\(early.text)")
            #expect(early.text.contains("\"reauthenticate\""))
            let confirmed = try server.app(
                "POST", "auth/reauthenticate", token: token, json: ["password": Self.password])
            #expect(confirmed.status == 200)
            let created = try passkeyOptions(
                server.app("GET", AllauthAppPath.webAuthn + "?passwordless", token: token), "creation_options")
            let publicKey = try #require(created["publicKey"] as? [String: Any])
            #expect((publicKey["rp"] as? [String: Any])?["id"] as? String == "books.example.net")
            #expect(
                (publicKey["authenticatorSelection"] as? [String: Any])?["userVerification"] as? String == "required")
            let added = try server.app(
                "POST", AllauthAppPath.webAuthn, token: token,
                json: ["credential": try authenticator.register(created, origin: Self.url)])
            #expect(added.status == 200, "\(added.text)")
            let data = try #require(added.jsonObject?["data"] as? [String: Any])
            #expect((added.jsonObject?["meta"] as? [String: Any])?["recovery_codes_generated"] as? Bool == true)
            #expect(data["type"] as? String == "webauthn" && data["name"] as? String == "Master key")
            #expect(data["is_passwordless"] as? Bool == true)
            let listed = try server.app("GET", AllauthAppPath.authenticators, token: token)
            #expect(listed.text.contains("\"webauthn\"") && listed.text.contains("Master key"), "\(listed.text)")
            // The same credential again: refused (it is registered).
            let again = try addPasskey(server, token, authenticator)
            #expect(again.status == 400 && again.errorCodes == ["incorrect_code"], "\(again.text)")
            // Signed out, then in with the passkey alone.
            #expect(try server.app("DELETE", "auth/session", token: token).status == 401)
            let signed = try passkeySignIn(server, authenticator)
            #expect(signed.status == 200 && signed.sessionToken != nil, "\(signed.text)")
            #expect(signed.text.contains("\"webauthn\""), "the session says how it signed in: \(signed.text)")
            let info = try server.appInfo(try #require(signed.sessionToken))
            #expect(info.status == 200)
            let stored = try #require(try server.application.accounts.passkeys.passkeys(userID: 1).first)
            #expect(stored.signCount == 2 && stored.lastUsedAt != nil)
        }
    }

    @Test(
        "a sign-in is refused for a cloned counter, another origin, no verification, a replayed or expired challenge, garbage, or another account's handle"
    )
    func lies() throws {
        try withAccounts(.sqlite, publicURL: Self.url) { server in
            let token = try confirmedSession(server, "ada@example.com")
            let authenticator = try SoftAuthenticator(signCount: 10)
            #expect(try addPasskey(server, token, authenticator).status == 200)
            func refused(_ answer: RawResponse, _ why: String) {
                #expect(answer.status == 400 && answer.errorCodes == ["incorrect_code"], "\(why): \(answer.text)")
                #expect(answer.sessionToken == nil || answer.status != 200, "\(why)")
            }
            refused(try passkeySignIn(server, authenticator, origin: "https://evil.example.net"), "another origin")
            refused(try passkeySignIn(server, authenticator, verified: false), "no user verification")
            refused(
                try passkeySignIn(server, authenticator) { $0["response"] = ["clientDataJSON": "x"] },
                "garbage response")
            refused(
                try passkeySignIn(server, authenticator) { credential in
                    var response = credential["response"] as? [String: Any] ?? [:]
                    response["userHandle"] = IdentityProof.base64URL(Array("2".utf8))
                    credential["response"] = response
                }, "another account's handle")
            // A clone: the counter behind the one stored.
            #expect(try passkeySignIn(server, authenticator).status == 200)
            authenticator.signCount = 5
            refused(try passkeySignIn(server, authenticator), "a counter gone back")
            #expect(server.log.lines.contains { $0.contains("cloned authenticator") }, "the clone is logged")
            authenticator.signCount = 20
            // A challenge answered twice: the second finds none.
            let asked = try server.app("GET", AllauthAppPath.webAuthnLogin)
            let request = try passkeyOptions(asked, "request_options")
            let preLogin = try #require((asked.jsonObject?["meta"] as? [String: Any])?["session_token"] as? String)
            let credential = try authenticator.assert(request, origin: Self.url)
            let first = try server.app(
                "POST", AllauthAppPath.webAuthnLogin, token: preLogin, json: ["credential": credential])
            #expect(first.status == 200, "\(first.text)")
            // The pre-login session ended with the sign-in: its token is gone.
            let replay = try server.app(
                "POST", AllauthAppPath.webAuthnLogin, token: preLogin, json: ["credential": credential])
            #expect(replay.status == 410, "\(replay.text)")
            // On a fresh session, the old answer is to another challenge.
            let fresh = try server.app("GET", AllauthAppPath.webAuthnLogin)
            let freshToken = try #require((fresh.jsonObject?["meta"] as? [String: Any])?["session_token"] as? String)
            refused(
                try server.app(
                    "POST", AllauthAppPath.webAuthnLogin, token: freshToken, json: ["credential": credential]),
                "an answer to another challenge")
            refused(
                try server.app(
                    "POST", AllauthAppPath.webAuthnLogin, token: freshToken, json: ["credential": credential]),
                "a challenge used once already")
            // Expired: five minutes, the challenge and the pre-login session made for it (a 410:
            // start again); the challenge alone on a session that lives on (one that waited for
            // approval, say) is refused as any other answer.
            let late = try server.app("GET", AllauthAppPath.webAuthnLogin)
            let lateToken = try #require((late.jsonObject?["meta"] as? [String: Any])?["session_token"] as? String)
            let lateAnswer = try authenticator.assert(try passkeyOptions(late, "request_options"), origin: Self.url)
            server.clock.advance(by: 301)
            let expired = try server.app(
                "POST", AllauthAppPath.webAuthnLogin, token: lateToken, json: ["credential": lateAnswer])
            #expect(expired.status == 410, "an expired challenge: \(expired.text)")
            let owner = "session:" + SecretToken.storedForm(of: freshToken)
            let store = PasskeyStore(server.application.database)
            try store.issue(
                .init(purpose: "login", challenge: [UInt8](repeating: 1, count: 32), userID: nil), owner: owner,
                expiresAt: server.clock.unixSeconds - 1)
            #expect(try store.take(owner: owner, purposes: ["login"], now: server.clock.unixSeconds) == nil)
            let renewed = try server.app("GET", AllauthAppPath.webAuthnLogin)
            let current = try #require((renewed.jsonObject?["meta"] as? [String: Any])?["session_token"] as? String)
            // No session at all, and bodies that are not JSON objects.
            refused(
                try server.app("POST", AllauthAppPath.webAuthnLogin, json: ["credential": credential]), "no session")
            for body in ["<html>", "[]", "{\"credential\": 1, \"credential\": 2}"] {
                let answer = try RawHTTP.request(
                    port: server.port, method: "POST", path: AllauthAppPath.path(AllauthAppPath.webAuthnLogin),
                    headers: [("X-Session-Token", current), ("Content-Type", "application/json")],
                    body: Data(body.utf8))
                #expect(answer.status == 400, "\(body): \(answer.text)")
            }
            let missing = try server.app("POST", AllauthAppPath.webAuthnLogin, token: current, json: [:])
            #expect(missing.status == 400 && missing.errorCodes == ["required"], "\(missing.text)")
        }
    }

    @Test("a passkey sign-in meets the approval stages: a held account gets its standing, no session")
    func approval() throws {
        try withAccounts(.sqlite, signup: .open, publicURL: Self.url) { server in
            let token = try confirmedSession(server, "ada@example.com")
            let authenticator = try SoftAuthenticator()
            #expect(try addPasskey(server, token, authenticator).status == 200)
            #expect(try server.application.accounts.setApproval(.held, email: "ada@example.com"))
            let held = try passkeySignIn(server, authenticator)
            #expect(held.status == 401, "\(held.text)")
            let preLogin = try #require(held.sessionToken)
            #expect(try server.standing(preLogin).text.contains("held"))
        }
    }

    @Test(
        "renamed and removed by their owner only; removing asks for a confirmation; a removed passkey signs nobody in")
    func manage() throws {
        try withAccounts(.sqlite, publicURL: Self.url) { server in
            let ada = try confirmedSession(server, "ada@example.com")
            let bob = try confirmedSession(server, "bob@example.com")
            let authenticator = try SoftAuthenticator(.edDSA)
            let added = try addPasskey(server, ada, authenticator, name: "  Phone  ", passwordless: false)
            let id = try #require((added.jsonObject?["data"] as? [String: Any])?["id"] as? Int)
            #expect((added.jsonObject?["data"] as? [String: Any])?["name"] as? String == "Phone")
            let notHis = try server.app("PUT", AllauthAppPath.webAuthn, token: bob, json: ["id": id, "name": "Mine"])
            #expect(notHis.status == 400 && notHis.errorCodes == ["invalid_choice"], "\(notHis.text)")
            for (body, code) in [
                (["id": id, "name": ""] as [String: Any], "required"), (["id": "x", "name": "A"], "invalid"),
                (["id": id, "name": String(repeating: "n", count: 101)], "invalid"),
            ] {
                let wrong = try server.app("PUT", AllauthAppPath.webAuthn, token: ada, json: body)
                #expect(wrong.status == 400 && wrong.errorCodes.contains(code), "\(body): \(wrong.text)")
            }
            let renamed = try server.app(
                "PUT", AllauthAppPath.webAuthn, token: ada, json: ["id": id, "name": "Laptop"])
            #expect(renamed.status == 200 && renamed.text.contains("Laptop"), "\(renamed.text)")
            let bobs = try server.app("DELETE", AllauthAppPath.webAuthn, token: bob, json: ["authenticators": [id]])
            #expect(bobs.status == 400 && bobs.errorCodes == ["invalid_choice"], "\(bobs.text)")
            // Six minutes later ada's confirmation is stale: removing asks again.
            server.clock.advance(by: 360)
            let stale = try server.app("DELETE", AllauthAppPath.webAuthn, token: ada, json: ["authenticators": [id]])
            #expect(stale.status == 401 && stale.text.contains("reauthenticate"), "\(stale.text)")
            let staleRename = try server.app(
                "PUT", AllauthAppPath.webAuthn, token: ada, json: ["id": id, "name": "Later"])
            #expect(staleRename.status == 401 && staleRename.text.contains("reauthenticate"), "\(staleRename.text)")
            let staleAdd = try server.app(
                "POST", AllauthAppPath.webAuthn, token: ada,
                json: [
                    "credential": try SoftAuthenticator().register(
                        ["challenge": "AAAA", "rp": ["id": "books.example.net"]], origin: Self.url)
                ])
            #expect(staleAdd.status == 401 && staleAdd.text.contains("reauthenticate"), "\(staleAdd.text)")
            #expect(
                try server.app("POST", "auth/reauthenticate", token: ada, json: ["password": Self.password]).status
                    == 200)
            let removed = try server.app("DELETE", AllauthAppPath.webAuthn, token: ada, json: ["authenticators": [id]])
            #expect(removed.status == 200, "\(removed.text)")
            #expect(try server.application.accounts.passkeys.passkeys(userID: 1).isEmpty)
            let gone = try passkeySignIn(server, authenticator)
            #expect(gone.status == 400 && gone.errorCodes == ["incorrect_code"], "\(gone.text)")
        }
    }

    @Test(
        "wrong passkey sign-ins spend the address's failed sign-in budget; a right one gives its failure back; a stale counter read loses the race"
    )
    func budgetsAndRace() throws {
        var limits = RateLimitPolicy()
        limits.failedLoginPerAddress = RateLimit(3, per: 600)
        try withAccounts(.sqlite, rateLimits: limits, publicURL: Self.url) { server in
            let token = try confirmedSession(server, "ada@example.com")
            let authenticator = try SoftAuthenticator()
            #expect(try addPasskey(server, token, authenticator).status == 200)
            // Two right ones cost nothing; two wrong ones leave one.
            for _ in 0..<2 { #expect(try passkeySignIn(server, authenticator).status == 200) }
            for _ in 0..<2 { #expect(try passkeySignIn(server, authenticator, verified: false).status == 400) }
            #expect(try passkeySignIn(server, authenticator).status == 200)
            #expect(try passkeySignIn(server, authenticator, verified: false).status == 400)
            let spent = try passkeySignIn(server, authenticator)
            #expect(spent.status == 400 && spent.errorCodes == ["too_many_login_attempts"], "\(spent.text)")
            // Two sign-ins read the same counter: the one that writes second finds it moved.
            let store = PasskeyStore(server.application.database)
            let read = try #require(try store.all(userID: 1).first)
            #expect(try store.use(id: read.id, stored: read.signCount, presented: read.signCount + 1, at: 0))
            #expect(try !store.use(id: read.id, stored: read.signCount, presented: read.signCount + 1, at: 0))
        }
    }

    @Test(
        "without an HTTPS public address (an IP address, plain HTTP) there are no passkeys: 404, and the config says so"
    )
    func unavailable() throws {
        try withAccounts(.sqlite, publicURL: "http://192.168.1.5:8080") { server in
            let token = try confirmedSession(server, "ada@example.com")
            #expect(try server.app("GET", AllauthAppPath.webAuthn, token: token).status == 404)
            #expect(try server.app("GET", AllauthAppPath.webAuthnLogin).status == 404)
            #expect(!(try server.app("GET", "config").text.contains("webauthn")))
        }
    }
}

extension PasskeysTests {
    @Test("the operator's reset-2fa and the account's deletion take its passkeys with them")
    func resetAndDeletion() throws {
        try withAccounts(.sqlite, publicURL: Self.url) { server in
            for email in ["ada@example.com", "bob@example.com"] {
                let token = try confirmedSession(server, email)
                #expect(try addPasskey(server, token, try SoftAuthenticator()).status == 200)
            }
            let count = {
                try server.application.database.execute("SELECT count(*) AS n FROM webauthn_credentials").first?
                    .int("n") ?? -1
            }
            #expect(try count() == 2)
            #expect(try server.application.accounts.twoFactor.resetSecondFactors(email: "ada@example.com"))
            #expect(try count() == 1)
            #expect(try server.application.accounts.deleteAccount(email: "bob@example.com"))
            #expect(try count() == 0)
        }
    }
}

extension PasskeysTests {
    @Test(
        "the options are charged to the address's sign-in budget, their pre-login session lives five minutes; a key is always a passkey; no user handle, no sign-in"
    )
    func optionsAndHandles() throws {
        var limits = RateLimitPolicy()
        limits.loginPerAddress = RateLimit(4, per: 60)
        try withAccounts(.sqlite, rateLimits: limits, publicURL: Self.url) { server in
            let token = try confirmedSession(server, "ada@example.com")
            // Asked without ?passwordless: allauth's second-factor key (discouraged, preferred);
            // an authenticator that makes it discoverable and verified all the same signs in alone.
            let created = try passkeyOptions(
                server.app("GET", AllauthAppPath.webAuthn, token: token), "creation_options")
            let selection = (created["publicKey"] as? [String: Any])?["authenticatorSelection"] as? [String: Any]
            #expect(selection?["residentKey"] as? String == "discouraged")
            #expect(selection?["userVerification"] as? String == "preferred")
            let authenticator = try SoftAuthenticator()
            let added = try server.app(
                "POST", AllauthAppPath.webAuthn, token: token,
                json: ["credential": try authenticator.register(created, origin: Self.url)])
            #expect(added.status == 200 && added.text.contains("\"is_passwordless\":true"), "\(added.text)")
            let asked = try server.app("GET", AllauthAppPath.webAuthnLogin)
            let preLogin = try #require((asked.jsonObject?["meta"] as? [String: Any])?["session_token"] as? String)
            let expires = try server.application.database.execute(
                "SELECT expires_at FROM sessions WHERE key_hash = $1", [.text(SecretToken.storedForm(of: preLogin))]
            ).first?.int("expires_at")
            #expect(expires == server.clock.unixSeconds + PasskeyService.challengeLifetime)
            // A sign-in whose authenticator leaves out the user handle: refused.
            let noHandle = try server.app(
                "POST", AllauthAppPath.webAuthnLogin, token: preLogin,
                json: [
                    "credential": {
                        var credential = try authenticator.assert(
                            try passkeyOptions(asked, "request_options"), origin: Self.url)
                        var response = credential["response"] as? [String: Any] ?? [:]
                        response["userHandle"] = nil
                        credential["response"] = response
                        return credential
                    }()
                ])
            #expect(noHandle.status == 400 && noHandle.errorCodes == ["incorrect_code"], "\(noHandle.text)")
            // Four options (one above, two here) and the sign-in: the fifth options are refused.
            for _ in 0..<2 { #expect(try server.app("GET", AllauthAppPath.webAuthnLogin).status == 200) }
            let spent = try server.app("GET", AllauthAppPath.webAuthnLogin)
            #expect(spent.status == 429 && spent.header("Retry-After") != nil, "\(spent.text)")
        }
    }

    @Test("under verification by code, a passkey sign-in to an unverified address waits for the code")
    func verification() throws {
        try withAccounts(.sqlite, emailVerification: .code, publicURL: Self.url) { server in
            let authenticator = try unverifiedWithPasskey(server)
            // Past the mail budget's three minutes: the sign-in mails a new code.
            server.clock.advance(by: 200)
            let waiting = try passkeySignIn(server, authenticator)
            #expect(waiting.status == 401 && waiting.text.contains("verify_email"), "\(waiting.text)")
        }
    }
}

extension PasskeysTests {
    @Test(
        "a passkey is a second factor: a password sign-in waits for it, it confirms a session, and the recovery codes made with it stand in",
        arguments: Backend.allCases)
    func secondFactor(backend: Backend) throws {
        try withAccounts(backend, publicURL: Self.url) { server in
            let token = try confirmedSession(server, "ada@example.com")
            let authenticator = try SoftAuthenticator()
            #expect(try addPasskey(server, token, authenticator, passwordless: false).status == 200)
            let codes = try server.app("GET", AllauthAppPath.recoveryCodes, token: token)
            let shown = try #require(
                (codes.jsonObject?["data"] as? [String: Any])?["unused_codes"] as? [String], "\(codes.text)")
            #expect(shown.count == 10)
            #expect(try server.app("DELETE", "auth/session", token: token).status == 401)

            // The password alone no longer signs in: the passkey (or a recovery code) is asked for.
            let first = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": Self.password])
            #expect(first.status == 401 && first.text.contains("mfa_authenticate"), "\(first.text)")
            #expect(first.text.contains("\"webauthn\"") && first.text.contains("\"recovery_codes\""), "\(first.text)")
            let pending = try #require(first.sessionToken)
            let asked = try passkeyOptions(
                server.app("GET", AllauthAppPath.webAuthnAuthenticate, token: pending), "request_options")
            let publicKey = try #require(asked["publicKey"] as? [String: Any])
            let allowed = (publicKey["allowCredentials"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
            #expect(allowed == [IdentityProof.base64URL(authenticator.credentialID)])
            #expect(publicKey["userVerification"] as? String == "preferred")
            // Bob's registered passkey answering ada's challenge: refused, as a wrong code.
            let bob = try confirmedSession(server, "bob@example.com")
            let bobs = try SoftAuthenticator()
            #expect(try addPasskey(server, bob, bobs).status == 200)
            let wrong = try server.app(
                "POST", AllauthAppPath.webAuthnAuthenticate, token: pending,
                json: ["credential": try bobs.assert(asked, origin: Self.url)])
            #expect(wrong.status == 400 && wrong.errorCodes == ["incorrect_code"], "\(wrong.text)")
            // A challenge issued for a passkey sign-in alone, answered here: refused too.
            let loginOptions = try passkeyOptions(
                server.app("GET", AllauthAppPath.webAuthnLogin, token: pending), "request_options")
            let crossed = try server.app(
                "POST", AllauthAppPath.webAuthnAuthenticate, token: pending,
                json: ["credential": try authenticator.assert(loginOptions, origin: Self.url)])
            #expect(crossed.status == 400 && crossed.errorCodes == ["incorrect_code"], "\(crossed.text)")
            // The challenge went with the wrong answer: ask again, then the passkey signs in.
            let again = try passkeyOptions(
                server.app("GET", AllauthAppPath.webAuthnAuthenticate, token: pending), "request_options")
            let signed = try server.app(
                "POST", AllauthAppPath.webAuthnAuthenticate, token: pending,
                json: ["credential": try authenticator.assert(again, origin: Self.url, verified: false)])
            #expect(
                signed.status == 200 && signed.sessionToken != nil, "a second factor need not verify: \(signed.text)")
            #expect(signed.text.contains("\"password\"") && signed.text.contains("\"webauthn\""), "\(signed.text)")
            let session = try #require(signed.sessionToken)
            // The pending sign-in ended with it: its token is gone; without one nothing waits.
            #expect(try server.app("GET", AllauthAppPath.webAuthnAuthenticate, token: pending).status == 410)
            #expect(try server.app("GET", AllauthAppPath.webAuthnAuthenticate).status == 401)

            // A confirmation with the passkey lets the session rename it.
            let rename: [String: Any] = ["id": 1, "name": "Desk key"]
            #expect(try server.app("PUT", AllauthAppPath.webAuthn, token: session, json: rename).status == 401)
            let confirm = try passkeyOptions(
                server.app("GET", AllauthAppPath.webAuthnReauthenticate, token: session), "request_options")
            let confirmed = try server.app(
                "POST", AllauthAppPath.webAuthnReauthenticate, token: session,
                json: ["credential": try authenticator.assert(confirm, origin: Self.url)])
            #expect(confirmed.status == 200 && confirmed.text.contains("\"reauthenticated\":true"), "\(confirmed.text)")
            #expect(try server.app("PUT", AllauthAppPath.webAuthn, token: session, json: rename).status == 200)

            // The passkey removed, the recovery codes go with it, and the password alone signs in.
            let removed = try server.app(
                "DELETE", AllauthAppPath.webAuthn, token: session, json: ["authenticators": [1]])
            #expect(removed.status == 200, "\(removed.text)")
            #expect(
                try server.app("GET", AllauthAppPath.authenticators, token: session).text
                    == #"{"data":[],"status":200}"#)
            #expect(try server.app("DELETE", "auth/session", token: session).status == 401)
            let plain = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": Self.password])
            #expect(plain.status == 200, "\(plain.text)")
        }
    }
}

extension PasskeysTests {
    @Test(
        "a server that lost its relying party (its address became an IP address) still asks for the second factor: a recovery code, and says why"
    )
    func lostRelyingParty() throws {
        let files = try TemporaryDirectory()
        defer { files.remove() }
        let database = DatabaseURL.sqlite(path: files.file("h.sqlite"))
        let codes: [String] = try withAccounts(.sqlite, publicURL: Self.url, database: database) { server in
            let token = try confirmedSession(server, "ada@example.com")
            #expect(try addPasskey(server, token, try SoftAuthenticator()).status == 200)
            let shown = try server.app("GET", AllauthAppPath.recoveryCodes, token: token)
            return (shown.jsonObject?["data"] as? [String: Any])?["unused_codes"] as? [String] ?? []
        }
        #expect(codes.count == 10)
        try withAccounts(.sqlite, publicURL: "http://192.168.1.5:8080", database: database) { server in
            let first = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": Self.password])
            #expect(first.status == 401 && first.text.contains("mfa_authenticate"), "\(first.text)")
            #expect(!first.text.contains("\"webauthn\""), "no passkey can be asked for here: \(first.text)")
            #expect(server.log.lines.contains { $0.contains("cannot ask for") })
            let signed = try server.app(
                "POST", "auth/2fa/authenticate", token: try #require(first.sessionToken), json: ["code": codes[0]])
            #expect(signed.status == 200, "a recovery code: \(signed.text)")
        }
    }
}

extension PasskeysTests {
    @Test(
        "under verification by code, a password sign-in to an account with a second factor verifies the address, then waits for the factor",
        arguments: Backend.allCases)
    func verificationThenSecondFactor(backend: Backend) throws {
        try withAccounts(backend, emailVerification: .code, publicURL: Self.url) { server in
            let authenticator = try unverifiedWithPasskey(server)
            server.clock.advance(by: 200)
            let login = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": Self.password])
            #expect(login.status == 401 && login.text.contains("verify_email"), "\(login.text)")
            let again = try #require(server.mailer.verificationCode(for: "ada@example.com"))
            let afterCode = try server.app(
                "POST", "auth/email/verify", token: try #require(login.sessionToken), json: ["key": again])
            // The address is verified, and the sign-in goes on to its second factor: no session yet.
            #expect(afterCode.status == 401 && afterCode.text.contains("mfa_authenticate"), "\(afterCode.text)")
            #expect(afterCode.text.contains("\"webauthn\""), "\(afterCode.text)")
            let pending = try #require(afterCode.sessionToken)
            #expect(try server.appInfo(pending).status == 401, "a pending sign-in is no session")
            let asked = try passkeyOptions(
                server.app("GET", AllauthAppPath.webAuthnAuthenticate, token: pending), "request_options")
            let signed = try server.app(
                "POST", AllauthAppPath.webAuthnAuthenticate, token: pending,
                json: ["credential": try authenticator.assert(asked, origin: Self.url)])
            #expect(signed.status == 200 && signed.sessionToken != nil, "\(signed.text)")
        }
    }
}
