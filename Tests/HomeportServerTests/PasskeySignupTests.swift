import Foundation
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// Signing up with a passkey and no password (`auth/webauthn/signup`), in django-allauth's
/// shapes: the address's code first, then the passkey, which signs in.
@Suite(
    "Sign-up with a passkey: the address's code, then the passkey; nothing planted, nothing skipped", .tags(.postgres))
struct PasskeySignupTests {
    static let url = "https://books.example.net"
    static let path = AllauthAppPath.webAuthnSignup

    private func creationOptions(_ answer: RawResponse) throws -> [String: Any] {
        #expect(answer.status == 200, "\(answer.text)")
        let data = try #require(answer.jsonObject?["data"] as? [String: Any], "\(answer.text)")
        return try #require(data["creation_options"] as? [String: Any], "\(answer.text)")
    }

    private func pendingFlows(_ answer: RawResponse) -> [String] {
        let flows = (answer.jsonObject?["data"] as? [String: Any])?["flows"] as? [[String: Any]] ?? []
        return flows.filter { $0["is_pending"] as? Bool == true }.compactMap { $0["id"] as? String }
    }

    /// Begins ada's sign-up and enters her code: the token of the session that waits for the passkey.
    private func verifiedSignup(_ server: AccountsHarness, _ email: String = "ada@example.com") throws -> String {
        let begun = try server.app("POST", Self.path, json: ["email": email])
        #expect(begun.status == 401 && pendingFlows(begun) == ["verify_email"], "\(begun.text)")
        let code = try #require(server.mailer.verificationCode(for: email))
        let first = try #require(begun.sessionToken)
        let verified = try server.app("POST", "auth/email/verify", token: first, json: ["key": code])
        #expect(verified.status == 401 && pendingFlows(verified) == ["mfa_signup_webauthn"], "\(verified.text)")
        return first
    }

    /// Creates the passkey the sign-up waiting on `token` asks for: a new authenticator, and the answer.
    private func finish(_ server: AccountsHarness, _ token: String) throws -> (SoftAuthenticator, RawResponse) {
        let authenticator = try SoftAuthenticator()
        let options = try creationOptions(server.app("GET", Self.path, token: token))
        let answer = try server.app(
            "PUT", Self.path, token: token, json: ["credential": try authenticator.register(options, origin: Self.url)])
        return (authenticator, answer)
    }

    /// Signs in with `authenticator`'s passkey alone.
    private func passkeyLogin(_ server: AccountsHarness, _ authenticator: SoftAuthenticator) throws -> RawResponse {
        let asked = try server.app("GET", AllauthAppPath.webAuthnLogin)
        let request = try #require((asked.jsonObject?["data"] as? [String: Any])?["request_options"] as? [String: Any])
        let token = try #require(asked.sessionToken, "the options' pre-login session")
        return try server.app(
            "POST", AllauthAppPath.webAuthnLogin, token: token,
            json: ["credential": try authenticator.assert(request, origin: Self.url)])
    }

    @Test(
        "the code, then the passkey: it signs in, the account has no password, the key signs in alone later, and recovery codes came with it",
        arguments: Backend.allCases)
    func signUp(backend: Backend) throws {
        try withAccounts(backend, emailVerification: .code, publicURL: Self.url) { server in
            let begun = try server.app("POST", Self.path, json: ["email": " Ada@Example.com "])
            let first = try #require(begun.sessionToken)
            // Before the code, no passkey: neither options nor a credential.
            #expect(try server.app("GET", Self.path, token: first).status == 409)
            let early = try SoftAuthenticator()
            #expect(
                try server.app("PUT", Self.path, token: first, json: ["credential": ["id": "x"]]).status == 409,
                "a credential before the code is refused")
            let code = try #require(server.mailer.verificationCode(for: "ada@example.com"))
            let verified = try server.app("POST", "auth/email/verify", token: first, json: ["key": code])
            #expect(pendingFlows(verified) == ["mfa_signup_webauthn"], "\(verified.text)")
            #expect(verified.sessionToken == nil, "the same pre-login session waits, as allauth's")
            let waiting = first
            #expect(try server.appInfo(waiting).status == 401, "no session before the passkey")
            let session = try server.app("GET", "auth/session", token: waiting)
            #expect(pendingFlows(session) == ["mfa_signup_webauthn"], "\(session.text)")

            let options = try creationOptions(server.app("GET", Self.path, token: waiting))
            let publicKey = try #require(options["publicKey"] as? [String: Any])
            #expect((publicKey["user"] as? [String: Any])?["name"] as? String == "ada@example.com")
            let selection = publicKey["authenticatorSelection"] as? [String: Any]
            #expect(selection?["residentKey"] as? String == "required")
            #expect(selection?["userVerification"] as? String == "required")
            // An answer from another site, or one that did not verify the person: refused, and the
            // sign-up still waits (with a new challenge).
            let foreign = try server.app(
                "PUT", Self.path, token: waiting,
                json: ["credential": try early.register(options, origin: "https://evil.example")])
            #expect(foreign.status == 400 && foreign.text.contains("incorrect_code"), "\(foreign.text)")
            let again = try creationOptions(server.app("GET", Self.path, token: waiting))
            let unverified = try server.app(
                "PUT", Self.path, token: waiting,
                json: ["credential": try early.register(again, origin: Self.url, verified: false)])
            #expect(unverified.status == 400, "\(unverified.text)")

            let authenticator = try SoftAuthenticator()
            let last = try creationOptions(server.app("GET", Self.path, token: waiting))
            let credential = try authenticator.register(last, origin: Self.url)
            let done = try server.app(
                "PUT", Self.path, token: waiting, json: ["name": "Phone", "credential": credential])
            #expect(done.status == 200, "\(done.text)")
            let token = try #require(done.sessionToken)
            #expect(try server.appInfo(token).status == 200)
            let user = (done.jsonObject?["data"] as? [String: Any])?["user"] as? [String: Any]
            #expect(user?["has_usable_password"] as? Bool == false, "\(done.text)")
            // Once: the same answer again, or any, finds no sign-up waiting.
            #expect(
                try server.app("PUT", Self.path, token: waiting, json: ["credential": credential]).status != 200)

            let listed = try server.app("GET", "account/authenticators", token: token)
            let types = (listed.jsonObject?["data"] as? [[String: Any]] ?? []).compactMap { $0["type"] as? String }
            #expect(Set(types) == ["webauthn", "recovery_codes"], "\(listed.text)")
            #expect(listed.text.contains("\"Phone\"") && listed.text.contains("\"is_passwordless\":true"))
            #expect(
                try server.app("POST", "auth/login", json: ["email": "ada@example.com", "password": "!"]).status
                    == 400, "no password signs in")

            // Signed out, the passkey signs in alone.
            #expect(try server.app("DELETE", "auth/session", token: token).status == 401)
            let signIn = try passkeyLogin(server, authenticator)
            #expect(signIn.status == 200, "\(signIn.text)")
        }
    }

    @Test("a taken address answers alike, mails its owner, and no stranger's passkey can be planted on it")
    func takenAddress() throws {
        try withAccounts(.sqlite, emailVerification: .code, publicURL: Self.url) { server in
            let owner = try verifiedSignup(server)
            let (_, finished) = try finish(server, owner)
            #expect(finished.status == 200, "\(finished.text)")
            server.clock.advance(by: 200)
            let stranger = try server.app("POST", Self.path, json: ["email": "ada@example.com"])
            #expect(stranger.status == 401 && pendingFlows(stranger) == ["verify_email"], "as a new address")
            #expect(server.mailer.mails.last?.kind != "verification_code", "no code for a taken address")
            let token = try #require(stranger.sessionToken)
            #expect(try server.app("GET", Self.path, token: token).status == 409)
            #expect(try server.app("PUT", Self.path, token: token, json: ["credential": ["id": "x"]]).status == 409)
            let count = try server.application.database.execute("SELECT COUNT(*) AS n FROM webauthn_credentials")
            #expect(count.first?.int("n") == 1)
        }
    }

    @Test(
        "where it is not offered: no verification by code, no relying party (404); closed (403); signed in (409); bad forms (400)"
    )
    func refusals() throws {
        try withAccounts(.sqlite, publicURL: Self.url) { server throws in
            #expect(try server.app("POST", Self.path, json: ["email": "ada@example.com"]).status == 404)
            #expect(try server.app("GET", Self.path).status == 404)
        }
        try withAccounts(.sqlite, emailVerification: .code) { server throws in
            #expect(try server.app("POST", Self.path, json: ["email": "ada@example.com"]).status == 404)
        }
        try withAccounts(.sqlite, signup: .closed, emailVerification: .code, publicURL: Self.url) { server throws in
            #expect(try server.app("POST", Self.path, json: ["email": "ada@example.com"]).status == 403)
        }
        try withAccounts(.sqlite, emailVerification: .code, publicURL: Self.url) { server in
            let missing = try server.app("POST", Self.path, json: [:])
            #expect(missing.status == 400 && missing.text.contains("\"required\""), "\(missing.text)")
            let bad = try server.app("POST", Self.path, json: ["email": "not an address"])
            #expect(bad.status == 400 && bad.text.contains("\"email\""), "\(bad.text)")
            let twice = try RawHTTP.request(
                port: server.port, method: "POST", path: "/_allauth/app/v1/" + Self.path,
                headers: [("Content-Type", "application/json")], body: Data(#"{"email":"a@b.c","email":"d@e.f"}"#.utf8))
            #expect(twice.status == 400, "\(twice.text)")
            #expect(try server.application.database.execute("SELECT id FROM users").isEmpty, "nothing made")
            // A signed-in caller (a password's sign-up, its code entered) is refused.
            let signup = try server.app(
                "POST", "auth/signup", json: ["email": "bo@example.com", "password": "correct horse battery"])
            let code = try #require(server.mailer.verificationCode(for: "bo@example.com"))
            let token = try #require(
                try server.app("POST", "auth/email/verify", token: signup.sessionToken, json: ["key": code])
                    .sessionToken)
            #expect(try server.appInfo(token).status == 200)
            #expect(try server.app("POST", Self.path, token: token, json: ["email": "cy@example.com"]).status == 409)
            #expect(try server.app("GET", Self.path).status == 409, "no sign-up waits")
        }
    }

    @Test(
        "under approval, the passkey comes first, then the account waits: its standing, no session, and a passkey sign-in after approval"
    )
    func approval() throws {
        try withAccounts(.sqlite, signup: .approval, emailVerification: .code, publicURL: Self.url) { server in
            let waiting = try verifiedSignup(server)
            let (authenticator, done) = try finish(server, waiting)
            #expect(done.status == 401 && done.jsonObject?["meta"] != nil, "\(done.text)")
            #expect(done.sessionToken != nil)
            #expect(try server.appInfo(done.sessionToken).status == 401)
            #expect(try server.standing(waiting).text.contains("waiting"), "the pre-login session carries the standing")
            #expect(server.mailer.mails.contains { $0.to == "ada@example.com" && $0.kind == "signup_waiting" })
            #expect(try server.application.accounts.setApproval(.approved, email: "ada@example.com"))
            let signIn = try passkeyLogin(server, authenticator)
            #expect(signIn.status == 200, "\(signIn.text)")
        }
    }

    @Test(
        "a waiting sign-up ends with the account's sessions (a password reset, a hold) and fifteen minutes after its code"
    )
    func waitingSignupEnds() throws {
        try withAccounts(.sqlite, emailVerification: .code, publicURL: Self.url) { server in
            // A password reset by the address's owner ends the sign-up someone else may hold.
            let reset = try verifiedSignup(server)
            #expect(try server.app("GET", Self.path, token: reset).status == 200)
            #expect(try server.app("POST", "auth/password/request", json: ["email": "ada@example.com"]).status == 200)
            let key = try #require(server.mailer.resetKey(for: "ada@example.com"))
            #expect(
                try server.app("POST", "auth/password/reset", json: ["key": key, "password": "a brand new password"])
                    .status != 400)
            #expect(try server.app("GET", Self.path, token: reset).status != 200, "ended with the reset")
            let authenticator = try SoftAuthenticator()
            #expect(try server.app("PUT", Self.path, token: reset, json: ["credential": ["id": "x"]]).status != 200)

            // An operator's hold ends it too.
            let held = try verifiedSignup(server, "bo@example.com")
            #expect(try server.application.accounts.setApproval(.held, email: "bo@example.com"))
            #expect(try server.app("GET", Self.path, token: held).status != 200, "ended with the hold")

            // Fifteen minutes after the code, the sign-up is gone.
            let late = try verifiedSignup(server, "cy@example.com")
            let options = try creationOptions(server.app("GET", Self.path, token: late))
            server.clock.advance(by: 901)
            let answer = try server.app(
                "PUT", Self.path, token: late,
                json: ["credential": try authenticator.register(options, origin: Self.url)])
            #expect(answer.status != 200, "\(answer.text)")
            let count = try server.application.database.execute("SELECT COUNT(*) AS n FROM webauthn_credentials")
            #expect(count.first?.int("n") == 0, "no passkey was made")
        }
    }

    @Test(
        "a person with only a passkey resets a password by mail; the passkey then stands as the second factor, and one who never made the passkey signs in with the new password"
    )
    func resetByMail() throws {
        try withAccounts(.sqlite, emailVerification: .code, publicURL: Self.url) { server in
            let waiting = try verifiedSignup(server)
            let (authenticator, finished) = try finish(server, waiting)
            #expect(finished.status == 200, "\(finished.text)")
            // At the web door, as a person who lost the phone would.
            let browser = Browser(port: server.port)
            browser.origin = Self.url
            _ = try browser.get("/account/password/reset")
            #expect(try browser.post("/account/password/reset", ["email": "ada@example.com"]).status == 200)
            let key = try #require(server.mailer.resetKey(for: "ada@example.com"))
            let reset = try browser.post("/account/password/reset/key/\(key)", ["password": "a brand new password"])
            #expect(reset.status == 200 && reset.text.contains("Password changed"), "\(reset.text)")
            let login = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": "a brand new password"])
            #expect(login.status == 401 && pendingFlows(login) == ["mfa_authenticate"], "\(login.text)")
            let pending = try #require(login.sessionToken)
            let asked = try server.app("GET", AllauthAppPath.webAuthnAuthenticate, token: pending)
            let request = try #require(
                (asked.jsonObject?["data"] as? [String: Any])?["request_options"] as? [String: Any])
            let signed = try server.app(
                "POST", AllauthAppPath.webAuthnAuthenticate, token: pending,
                json: ["credential": try authenticator.assert(request, origin: Self.url)])
            #expect(signed.status == 200, "\(signed.text)")

            // Bo stops after his code: a verified address, no password, no passkey. A reset lets him in.
            _ = try verifiedSignup(server, "bo@example.com")
            #expect(try server.app("POST", "auth/password/request", json: ["email": "bo@example.com"]).status == 200)
            let boKey = try #require(server.mailer.resetKey(for: "bo@example.com"))
            _ = try server.app("POST", "auth/password/reset", json: ["key": boKey, "password": "bo's own password"])
            let bo = try server.app(
                "POST", "auth/login", json: ["email": "bo@example.com", "password": "bo's own password"])
            #expect(bo.status == 200, "\(bo.text)")
        }
    }
}
