import Foundation
import HomeportServer
import HomeportStorage
import HomeportTestSupport
import Testing

@Suite("Approval stages, standing and password reset", .tags(.postgres, .browser))
struct ApprovalAndResetTests {
    @Test(
        "waiting and held people get no session; standing says so; rejected is told waiting",
        arguments: Backend.allCases)
    func standing(backend: Backend) throws {
        try withAccounts(backend, signup: .approval) { server in
            let signup = try server.app(
                "POST", "auth/signup", json: ["email": "ada@example.com", "password": "correct horse battery"])
            #expect(signup.status == 401)
            #expect((signup.jsonObject?["meta"] as? [String: Any])?["is_authenticated"] as? Bool == false)
            let preLogin = try #require(signup.sessionToken)
            #expect(try server.appInfo(preLogin).status == 401, "a pre-login token opens nothing")
            #expect(try server.standing(preLogin).jsonObject?["standing"] as? String == "waiting")
            #expect(try server.app("GET", "auth/session", token: preLogin).status == 401)

            let stages: [(action: Approval, told: String)] = [
                (.held, "held"), (.rejected, "waiting"), (.waiting, "waiting"),
            ]
            for (stage, told) in stages {
                #expect(try server.application.accounts.setApproval(stage, email: "ada@example.com"))
                let login = try server.app(
                    "POST", "auth/login", json: ["email": "ada@example.com", "password": "correct horse battery"])
                #expect(login.status == 401, "\(stage)")
                let token = try #require(login.sessionToken)
                #expect(try server.appInfo(token).status == 401)
                #expect(try server.standing(token).jsonObject?["standing"] as? String == told, "\(stage)")
            }

            // A wrong password learns nothing about standing.
            let wrong = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": "wrong guess!"])
            #expect(wrong.status == 400)
            #expect(wrong.sessionToken == nil)

            // A stranger's token, a malformed one and none at all get the same answer.
            let nothing = try server.standing(nil)
            #expect(nothing.status == 200)
            #expect(nothing.text == #"{"standing":null}"#)
            #expect(try server.standing(preLogin.withFirstCharacterChanged).body == nothing.body)
            #expect(try server.standing("garbage").body == nothing.body)

            // Approved: a real session, and standing has nothing to say to it.
            #expect(try server.application.accounts.setApproval(.approved, email: "ada@example.com"))
            let token = try server.signIn("ada@example.com")
            #expect(try server.appInfo(token).status == 200)
            #expect(try server.standing(token).body == nothing.body)

            // Holding a signed-in person ends their sessions at once.
            #expect(try server.application.accounts.setApproval(.held, email: "ada@example.com"))
            #expect(try server.appInfo(token).status == 401)
        }
    }

    @Test("a mail that cannot be sent is reported as mail_failed by standing")
    func mailFailure() throws {
        try withAccounts(.sqlite, signup: .approval, failingMailer: true) { server in
            let signup = try server.app(
                "POST", "auth/signup", json: ["email": "ada@example.com", "password": "correct horse battery"])
            let token = try #require(signup.sessionToken)
            #expect(try server.standing(token).jsonObject?["standing"] as? String == "mail_failed")
            let recorded = try server.application.database.execute("SELECT kind FROM mail_failures")
            #expect(recorded.first?.string("kind") == "signup_waiting")
            #expect(server.log.lines.contains { $0.contains("mail not sent") })
        }
    }

    @Test("reset requests for a known and an unknown address get identical answers", arguments: Backend.allCases)
    func resetRequestsLookAlike(backend: Backend) throws {
        try withAccounts(backend) { server in
            _ = try server.signIn("ada@example.com")
            let known = try server.app("POST", "auth/password/request", json: ["email": "ada@example.com"])
            let unknown = try server.app("POST", "auth/password/request", json: ["email": "nobody@example.com"])
            #expect(known.status == 200)
            #expect(known.status == unknown.status)
            #expect(known.body == unknown.body)
            let names = { (r: RawResponse) in r.headers.filter { $0.name != "Date" }.map { "\($0.name): \($0.value)" } }
            #expect(names(known) == names(unknown))
            // Both addresses got a mail; only the account's holds a key.
            #expect(server.mailer.mails.map(\.kind).sorted() == ["password_reset", "unknown_account"])

            // The web door answers alike too.
            let browser = Browser(port: server.port)
            _ = try browser.get("/account/password/reset")
            func webRequest(_ email: String) throws -> RawResponse {
                try browser.post("/account/password/reset", ["email": email, "website": ""])
            }
            let webKnown = try webRequest("ada@example.com")
            let webUnknown = try webRequest("nobody@example.com")
            #expect(webKnown.status == 200 && webKnown.body == webUnknown.body)
        }
    }

    @Test("a reset key works once, expires, and the reset ends every session", arguments: Backend.allCases)
    func reset(backend: Backend) throws {
        try withAccounts(backend) { server in
            let token = try server.signIn("ada@example.com")
            _ = try server.app("POST", "auth/password/request", json: ["email": "ada@example.com"])
            let key = try #require(server.mailer.resetKey(for: "ada@example.com"))

            let check = try server.app("GET", "auth/password/reset", headers: [("X-Password-Reset-Key", key)])
            #expect(check.status == 200)
            #expect(
                ((check.jsonObject?["data"] as? [String: Any])?["user"] as? [String: Any])?["email"] as? String
                    == "ada@example.com")
            let weak = try server.app("POST", "auth/password/reset", json: ["key": key, "password": "short"])
            #expect(weak.status == 400 && weak.errorCodes == ["password_too_short"])

            let reset = try server.app(
                "POST", "auth/password/reset", json: ["key": key, "password": "a brand new password"])
            #expect(reset.status == 401, "signed out: log in with the new password")
            #expect(try server.appInfo(token).status == 401, "every session ended")
            let again = try server.app(
                "POST", "auth/password/reset", json: ["key": key, "password": "yet another password"])
            #expect(again.status == 400 && again.errorCodes == ["invalid_password_reset"])
            #expect(
                try server.app(
                    "POST", "auth/login", json: ["email": "ada@example.com", "password": "a brand new password"]
                ).status == 200)

            _ = try server.app("POST", "auth/password/request", json: ["email": "ada@example.com"])
            let late = try #require(server.mailer.resetKey(for: "ada@example.com"))
            #expect(late != key)
            server.clock.advance(by: 3601)
            let expired = try server.app(
                "POST", "auth/password/reset", json: ["key": late, "password": "too late password"])
            #expect(expired.status == 400 && expired.errorCodes == ["invalid_password_reset"])
            #expect(
                try server.app("GET", "auth/password/reset", headers: [("X-Password-Reset-Key", "bogus")]).status == 400
            )
        }
    }

    @Test("closed signup refuses on both doors")
    func closedSignup() throws {
        try withAccounts(.sqlite, signup: .closed) { server in
            let response = try server.app(
                "POST", "auth/signup", json: ["email": "ada@example.com", "password": "correct horse battery"])
            #expect(response.status == 403)
            let config = try server.app("GET", "config")
            let account = (config.jsonObject?["data"] as? [String: Any])?["account"] as? [String: Any]
            #expect(account?["is_open_for_signup"] as? Bool == false)
        }
    }
}

extension String {
    /// The value of cookie `name` in a `Set-Cookie` header.
    func cookieValue(_ name: String) -> String? {
        guard hasPrefix(name + "=") else { return nil }
        return String(dropFirst(name.count + 1).prefix { $0 != ";" })
    }
}
