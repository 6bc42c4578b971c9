import Foundation
import HomeportServer
import HomeportTestSupport
import Testing

extension AccountsHarness {
    /// Signs up under verification by code: the 401 with the pending flow, and its pre-login token.
    func signupPending(_ email: String) throws -> String {
        let response = try app("POST", "auth/signup", json: ["email": email, "password": "correct horse battery"])
        let flows = (response.jsonObject?["data"] as? [String: Any])?["flows"] as? [[String: Any]] ?? []
        guard response.status == 401, flows.contains(where: { $0["id"] as? String == "verify_email" }),
            let token = response.sessionToken
        else { throw RawHTTPError("sign-up did not wait for a code: \(response.status) \(response.text)") }
        return token
    }

    /// `POST auth/email/verify` with `code`.
    func verify(_ token: String?, _ code: String) throws -> RawResponse {
        try app("POST", "auth/email/verify", token: token, json: ["key": code])
    }

    /// Whether `auth/session` says a verification waits on the token.
    func verificationPending(_ token: String) throws -> Bool {
        let flows = (try app("GET", "auth/session", token: token).jsonObject?["data"] as? [String: Any])?["flows"]
        return (flows as? [[String: Any]] ?? []).contains { $0["id"] as? String == "verify_email" }
    }
}

/// A wrong code that is well-formed (no mailed code uses the letter that is missing from the
/// alphabet, so `A` never matches).
private let wrongCode = "AAAA-AAAA"

@Suite("Verification of an address by a mailed code", .tags(.postgres, .browser))
struct EmailVerificationTests {
    @Test(
        "a sign-up waits for its code; the code signs in once and the pre-login token dies", arguments: Backend.allCases
    )
    func signupThenCode(backend: Backend) throws {
        try withAccounts(backend, emailVerification: .code) { server in
            let config = try server.app("GET", "config").jsonObject?["data"] as? [String: Any]
            #expect((config?["account"] as? [String: Any])?["email_verification_by_code_enabled"] as? Bool == true)

            let pending = try server.signupPending("ada@example.com")
            #expect(try server.verificationPending(pending))
            #expect(try server.appInfo(pending).status == 401, "a pre-login token opens nothing")
            let code = try #require(server.mailer.verificationCode(for: "ada@example.com"))

            // Checked, then used; typed in lower case without the dash.
            let check = try server.app(
                "GET", "auth/email/verify", token: pending, headers: [("X-Email-Verification-Key", code)])
            #expect(check.status == 200)
            #expect((check.jsonObject?["meta"] as? [String: Any])?["is_authenticating"] as? Bool == true)
            let verified = try server.verify(pending, code.lowercased().replacingOccurrences(of: "-", with: " "))
            #expect(verified.status == 200)
            let token = try #require(verified.sessionToken)
            #expect(token != pending)
            #expect(try server.appInfo(token).status == 200)
            #expect(try server.app("GET", "auth/session", token: pending).status == 410)
            #expect(try server.verify(pending, code).status == 410, "the code is used up with its session")

            // Verified for good: the next sign-in needs no code.
            #expect(try server.app("DELETE", "auth/session", token: token).status == 401)
            let login = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": "correct horse battery"])
            #expect(login.status == 200 && login.sessionToken != nil)
            #expect(server.mailer.mails.filter { $0.kind == "verification_code" }.count == 1)
            // The code never reaches the log.
            #expect(!server.log.lines.contains { $0.contains(code) })
        }
    }

    @Test("three tries a verification, even when they come at once; then it is given up", arguments: Backend.allCases)
    func threeTries(backend: Backend) throws {
        try withAccounts(backend, emailVerification: .code, workerThreads: 4) { server in
            let pending = try server.signupPending("ada@example.com")
            let code = try #require(server.mailer.verificationCode(for: "ada@example.com"))
            let statuses = LockedList<Int>()
            DispatchQueue.concurrentPerform(iterations: 12) { _ in
                statuses.append((try? server.verify(pending, wrongCode).status) ?? 0)
            }
            // Exactly three were compared (400); the others found it given up (409), or, while the
            // third was still being compared, busy (429).
            #expect(statuses.all.filter { $0 == 400 }.count == 3, "\(statuses.all)")
            #expect(statuses.all.allSatisfy { $0 == 400 || $0 == 409 || $0 == 429 }, "\(statuses.all)")
            #expect(try server.verify(pending, code).status == 409)
            #expect(try !server.verificationPending(pending))
        }
    }

    @Test("the right code sent many times at once signs in once", arguments: Backend.allCases)
    func rightCodeOnce(backend: Backend) throws {
        try withAccounts(backend, emailVerification: .code, workerThreads: 4) { server in
            let pending = try server.signupPending("ada@example.com")
            let code = try #require(server.mailer.verificationCode(for: "ada@example.com"))
            let tokens = LockedList<String>()
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                if let response = try? server.verify(pending, code), response.status == 200,
                    let token = response.sessionToken
                {
                    tokens.append(token)
                }
            }
            #expect(tokens.all.count == 1)
        }
    }

    @Test("the third wrong code gives up; a sign-in later mails a new one with a whole budget")
    func wrongCodesThenNewSignin() throws {
        try withAccounts(.sqlite, emailVerification: .code) { server in
            let pending = try server.signupPending("ada@example.com")
            for _ in 1...3 {
                let wrong = try server.verify(pending, wrongCode)
                #expect(wrong.status == 400 && wrong.errorCodes == ["incorrect_code"])
            }
            #expect(
                try server.verify(pending, try #require(server.mailer.verificationCode(for: "ada@example.com"))).status
                    == 409)

            // Too soon for another code: allauth's answer, a form error with the wait.
            let credentials = ["email": "ada@example.com", "password": "correct horse battery"]
            let soon = try server.app("POST", "auth/login", json: credentials)
            #expect(soon.status == 400 && soon.errorCodes == ["too_many_login_attempts"])
            #expect(soon.header("Retry-After") != nil)
            // A wrong password mails nothing and says nothing about verification.
            server.clock.advance(by: 181)
            let wrongPassword = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": "not the password"])
            #expect(wrongPassword.errorCodes == ["email_password_mismatch"])
            #expect(server.mailer.mails.filter { $0.kind == "verification_code" }.count == 1)

            let login = try server.app("POST", "auth/login", json: credentials)
            #expect(login.status == 401)
            let fresh = try #require(login.sessionToken)
            #expect(try server.verificationPending(fresh))
            let code = try #require(server.mailer.verificationCode(for: "ada@example.com"))
            #expect(try server.verify(fresh, wrongCode).status == 400)
            let signedIn = try server.verify(fresh, code)
            #expect(signedIn.status == 200)
            // A sign-in with the password records it, as a login does.
            let methods = (signedIn.jsonObject?["data"] as? [String: Any])?["methods"] as? [[String: Any]]
            #expect(methods?.first?["method"] as? String == "password")
        }
    }

    @Test("a verification lives 15 minutes; a resend replaces its code, within the mail budget")
    func expiryAndResend() throws {
        try withAccounts(.sqlite, emailVerification: .code) { server in
            let pending = try server.signupPending("ada@example.com")
            let first = try #require(server.mailer.verificationCode(for: "ada@example.com"))
            let soon = try server.app("POST", "auth/email/verify/resend", token: pending)
            #expect(soon.status == 429 && soon.header("Retry-After") == "180")
            server.clock.advance(by: 181)
            #expect(try server.app("POST", "auth/email/verify/resend", token: pending).status == 200)
            let second = try #require(server.mailer.verificationCode(for: "ada@example.com"))
            #expect(try server.verify(pending, first).status == 400 || first == second)

            // A resend keeps the verification's end: 15 minutes from the sign-up.
            server.clock.advance(by: 720)
            #expect(try server.verify(pending, second).status == 409, "expired")
            #expect(try !server.verificationPending(pending))
            #expect(try server.app("POST", "auth/email/verify/resend", token: pending).status == 409)
        }
    }

    @Test("with approval, the verified account waits; standing says so; approval lets it in")
    func verificationThenApproval() throws {
        try withAccounts(.sqlite, signup: .approval, emailVerification: .code) { server in
            let pending = try server.signupPending("ada@example.com")
            #expect(!server.mailer.mails.contains { $0.kind == "signup_waiting" }, "the code comes first")
            let code = try #require(server.mailer.verificationCode(for: "ada@example.com"))
            let verified = try server.verify(pending, code)
            #expect(verified.status == 401)
            #expect(verified.sessionToken == pending, "the same pre-login session carries the standing")
            #expect(try !server.verificationPending(pending))
            let standing = try server.standing(pending).jsonObject
            #expect(standing?["standing"] as? String == "waiting", "\(String(describing: standing))")
            #expect(server.mailer.mails.contains { $0.kind == "signup_waiting" })

            #expect(try server.application.accounts.setApproval(.approved, email: "ada@example.com"))
            let login = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": "correct horse battery"])
            #expect(login.status == 200, "verified once, approved now: no second code")
        }
    }

    @Test("a sign-up with a taken address answers as a new one; the owner is told; no code opens the account")
    func takenAddress() throws {
        try withAccounts(.sqlite, emailVerification: .code) { server in
            let owner = try server.signupPending("ada@example.com")
            let code = try #require(server.mailer.verificationCode(for: "ada@example.com"))
            #expect(try server.verify(owner, code).status == 200)

            server.clock.advance(by: 181)
            let stranger = try server.signupPending("ada@example.com")
            #expect(try server.verificationPending(stranger))
            #expect(server.mailer.mails.last?.kind == "account_exists")
            #expect(server.mailer.mails.filter { $0.kind == "verification_code" }.count == 1, "no code for a stranger")
            // Not even the owner's old code, nor a resend, completes it.
            #expect(try server.verify(stranger, code).status == 400)
            server.clock.advance(by: 181)
            #expect(try server.app("POST", "auth/email/verify/resend", token: stranger).status == 200)
            #expect(server.mailer.mails.last?.kind == "account_exists")
            #expect(server.mailer.mails.filter { $0.kind == "verification_code" }.count == 1)
            // Too soon after the last mail to the owner about strangers: 429 (their own budget).
            let again = try server.app(
                "POST", "auth/signup", json: ["email": "ada@example.com", "password": "correct horse battery"])
            #expect(again.status == 429)
        }
    }

    @Test(
        "sign-ups in a row are answered alike whether the address has an account or not", arguments: Backend.allCases)
    func signupsInARowTellNothing(backend: Backend) throws {
        try withAccounts(backend, emailVerification: .code) { server in
            let owner = try server.signupPending("ada@example.com")
            let code = try #require(server.mailer.verificationCode(for: "ada@example.com"))
            #expect(try server.verify(owner, code).status == 200)
            server.clock.advance(by: 3600)
            func three(_ email: String) throws -> [Int] {
                try (0..<3).map { _ in
                    try server.app("POST", "auth/signup", json: ["email": email, "password": "correct horse battery"])
                        .status
                }
            }
            let taken = try three("ada@example.com")
            let new = try three("bob@example.com")
            #expect(taken == new, "taken \(taken), new \(new)")
            #expect(new.first == 401)
        }
    }

    @Test("strangers signing up with an unverified owner's address do not keep the owner from codes")
    func decoysSpendTheirOwnBudget() throws {
        try withAccounts(.sqlite, emailVerification: .code) { server in
            _ = try server.signupPending("ada@example.com")
            server.clock.advance(by: 181)
            let stranger = try server.signupPending("ada@example.com")
            #expect(try server.app("POST", "auth/email/verify/resend", token: stranger).status == 429)
            // The owner, within the same three minutes, still gets a code at sign-in.
            let login = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": "correct horse battery"])
            #expect(login.status == 401, "\(login.text)")
            let pending = try #require(login.sessionToken)
            let code = try #require(server.mailer.verificationCode(for: "ada@example.com"))
            #expect(try server.verify(pending, code).status == 200)
        }
    }

    @Test("a password reset, a hold or a logout ends a waiting verification: its code opens nothing afterwards")
    func passwordResetEndsVerification() throws {
        try withAccounts(.sqlite, emailVerification: .code) { server in
            let first = try server.signupPending("ada@example.com")
            let code = try #require(server.mailer.verificationCode(for: "ada@example.com"))
            #expect(try server.app("POST", "auth/password/request", json: ["email": "ada@example.com"]).status == 200)
            let key = try #require(server.mailer.resetKey(for: "ada@example.com"))
            #expect(
                try server.app("POST", "auth/password/reset", json: ["key": key, "password": "a new good password"])
                    .status == 401)
            #expect(try server.verify(first, code).status == 410, "the pre-login session ended with the reset")

            server.clock.advance(by: 181)
            let credentials = ["email": "ada@example.com", "password": "a new good password"]
            let second = try #require(try server.app("POST", "auth/login", json: credentials).sessionToken)
            let secondCode = try #require(server.mailer.verificationCode(for: "ada@example.com"))
            #expect(try server.application.accounts.setApproval(.held, email: "ada@example.com"))
            #expect(try server.verify(second, secondCode).status == 410, "the hold ended it")
            #expect(try server.application.accounts.setApproval(.approved, email: "ada@example.com"))

            server.clock.advance(by: 181)
            let third = try #require(try server.app("POST", "auth/login", json: credentials).sessionToken)
            #expect(try server.app("DELETE", "auth/session", token: third).status == 401)
            let rows = try server.application.database.execute("SELECT key_hash FROM email_verifications")
            #expect(rows.isEmpty, "a logout takes its verification with it")
        }
    }

    @Test("right codes checked many times at once give nothing up; the code then signs in")
    func concurrentChecks() throws {
        try withAccounts(.sqlite, emailVerification: .code, workerThreads: 4) { server in
            let pending = try server.signupPending("ada@example.com")
            let code = try #require(server.mailer.verificationCode(for: "ada@example.com"))
            let statuses = LockedList<Int>()
            DispatchQueue.concurrentPerform(iterations: 16) { _ in
                let check = try? server.app(
                    "GET", "auth/email/verify", token: pending, headers: [("X-Email-Verification-Key", code)])
                statuses.append(check?.status ?? 0)
            }
            #expect(statuses.all.allSatisfy { $0 == 200 || $0 == 429 }, "\(statuses.all)")
            #expect(try server.verify(pending, code).status == 200)
        }
    }

    @Test("an empty code is a missing field, not a try; two key headers are refused")
    func emptyCodes() throws {
        try withAccounts(.sqlite, emailVerification: .code) { server in
            let pending = try server.signupPending("ada@example.com")
            for empty in ["", "   ", "-", " - "] {
                let answer = try server.verify(pending, empty)
                #expect(answer.status == 400 && answer.errorCodes == ["required"], "'\(empty)': \(answer.text)")
            }
            let twice = try server.app(
                "GET", "auth/email/verify", token: pending,
                headers: [("X-Email-Verification-Key", wrongCode), ("X-Email-Verification-Key", wrongCode)])
            #expect(twice.status == 400 && twice.errorCodes == ["invalid"])
            let code = try #require(server.mailer.verificationCode(for: "ada@example.com"))
            #expect(try server.verify(pending, code).status == 200, "no try was spent")
        }
    }

    @Test("a code that cannot be mailed leaves the standing mail_failed")
    func mailFailure() throws {
        try withAccounts(.sqlite, emailVerification: .code, failingMailer: true) { server in
            let pending = try server.signupPending("ada@example.com")
            #expect(try server.standing(pending).jsonObject?["standing"] as? String == "mail_failed")
        }
    }

    @Test("with verification off the routes answer as allauth's: no key is valid, nothing to resend")
    func verificationOff() throws {
        try withAccounts(.sqlite) { server in
            let token = try server.signIn("ada@example.com")
            #expect(server.mailer.mails.isEmpty)
            let verify = try server.verify(token, "BCDF-GHJK")
            #expect(verify.status == 400 && verify.errorCodes == ["invalid_or_expired_key"])
            #expect(try server.app("POST", "auth/email/verify/resend", token: token).status == 409)
        }
    }

    @Test("the web door has the same step as a form, and spends the same budget of tries")
    func webDoor() throws {
        var limits = RateLimitPolicy()
        limits.verificationAttemptPerSession = RateLimit(2, per: 900)
        try withAccounts(.sqlite, emailVerification: .code, rateLimits: limits) { server in
            let browser = Browser(port: server.port)
            #expect(try browser.get("/account/verify-email").status == 303, "nothing waits yet")
            _ = try browser.get("/account/signup")
            let signup = try browser.post(
                "/account/signup", ["email": "ada@example.com", "password": "correct horse battery"])
            #expect(signup.status == 303 && signup.header("Location") == "/account/verify-email")
            #expect(
                signup.headers.contains { $0.name == "Set-Cookie" && $0.value.contains("Max-Age=86400") },
                "the pre-login cookie lives as long as its session, a day")
            #expect(try browser.get("/account").status == 303, "not signed in yet")
            let form = try browser.get("/account/verify-email")
            #expect(form.status == 200 && form.text.contains("name=\"code\""))
            #expect(try browser.post("/account/verify-email", ["code": " "]).status == 400, "not a try")
            let wrong = try browser.post("/account/verify-email", ["code": wrongCode])
            #expect(wrong.status == 400)
            let code = try #require(server.mailer.verificationCode(for: "ada@example.com"))
            let right = try browser.post("/account/verify-email", ["code": code])
            #expect(right.status == 303 && right.header("Location") == "/account")
            #expect(try browser.get("/account").text.contains("ada@example.com"))

            // The budget the web door spends is the one the limit names: two tries, then given up.
            let other = Browser(port: server.port)
            _ = try other.get("/account/signup")
            _ = try other.post("/account/signup", ["email": "bob@example.com", "password": "correct horse battery"])
            _ = try other.get("/account/verify-email")
            #expect(try other.post("/account/verify-email", ["code": wrongCode]).status == 400)
            #expect(try other.post("/account/verify-email", ["code": wrongCode]).status == 400)
            let late = try other.post(
                "/account/verify-email", ["code": try #require(server.mailer.verificationCode(for: "bob@example.com"))])
            #expect(late.status == 409)
        }
    }
}
