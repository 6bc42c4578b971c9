import Foundation
import HomeportServer
import HomeportStorage
import HomeportTestSupport
import Testing

private let password = "correct horse battery"

/// Attacks and races found in review, each pinned by a test.
@Suite("Hardening of the account doors")
struct HardeningTests {
    @Test("an address with a NUL or control character is not an address", arguments: Backend.allCases)
    func controlCharactersInEmail(backend: Backend) throws {
        var policy = RateLimitPolicy()
        policy.failedLoginPerAccount = RateLimit(2, per: 300)
        try withAccounts(backend, rateLimits: policy) { server in
            _ = try server.signIn("ada@example.com")
            for variant in ["ada@example.com\u{0}.a1", "ada@example.com\u{0}.a2", "ada@exa\u{1B}[31mmple.com"] {
                let response = try server.app(
                    "POST", "auth/login", json: ["email": variant, "password": "correct horse battery"])
                #expect(response.status == 400)
                #expect(response.errorCodes == ["invalid"])
            }
            #expect(Credentials.normalizedEmail("ada@example.com\u{85}") == nil)
            #expect(Credentials.normalizedEmail(" Ada@Example.COM ") == "ada@example.com")
        }
    }

    @Test("the database refuses text with a NUL rather than cutting it", arguments: Backend.allCases)
    func nulInText(backend: Backend) throws {
        _ = try withMigratedDatabase(backend) { database, _ in
            #expect(throws: StorageError.invalidValue("text with a NUL character")) {
                try database.execute("SELECT $1 AS v", [.text("a\u{0}b")])
            }
        }
    }

    @Test("a login whose password check raced a password change gets no session", arguments: Backend.allCases)
    func loginRacingReset(backend: Backend) throws {
        try withAccounts(backend) { server in
            _ = try server.signIn("ada@example.com")
            let checked = try #require(try server.application.accounts.accounts.find(email: "ada@example.com"))
            // The change lands between the login's password check and its session insert.
            _ = try server.app("POST", "auth/password/request", json: ["email": "ada@example.com"])
            let key = try #require(server.mailer.resetKey(for: "ada@example.com"))
            #expect(
                try server.app("POST", "auth/password/reset", json: ["key": key, "password": "a brand new password"])
                    .status == 401)
            let late = try server.application.accounts.sessions.create(
                kind: .app, userID: checked.id, authenticatedAt: 0, now: server.clock.unixSeconds,
                passwordHash: checked.passwordHash)
            #expect(late == nil)
            let current = try #require(try server.application.accounts.accounts.find(email: "ada@example.com"))
            let fresh = try server.application.accounts.sessions.create(
                kind: .app, userID: current.id, now: server.clock.unixSeconds, passwordHash: current.passwordHash)
            #expect(fresh != nil)
        }
    }

    @Test("every login attempt counts against the address, even with the right password")
    func loginAttemptsPerAddress() throws {
        var policy = RateLimitPolicy()
        policy.loginPerAddress = RateLimit(3, per: 60)
        try withAccounts(.sqlite, signup: .approval, rateLimits: policy) { server in
            _ = try server.app(
                "POST", "auth/signup", json: ["email": "ada@example.com", "password": "correct horse battery"])
            for _ in 0..<3 {
                #expect(
                    try server.app(
                        "POST", "auth/login", json: ["email": "ada@example.com", "password": "correct horse battery"]
                    )
                    .status == 401)
            }
            let refused = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": "correct horse battery"])
            #expect(refused.status == 429)
        }
    }

    @Test("concurrent wrong guesses cannot overshoot the failed-login budget", arguments: Backend.allCases)
    func concurrentGuesses(backend: Backend) throws {
        var policy = RateLimitPolicy()
        policy.failedLoginPerAccount = RateLimit(3, per: 300)
        try withAccounts(backend, rateLimits: policy) { server in
            _ = try server.signIn("ada@example.com")
            let statuses = Seen()
            DispatchQueue.concurrentPerform(iterations: 12) { _ in
                let status =
                    (try? server.app(
                        "POST", "auth/login", json: ["email": "ada@example.com", "password": "a wrong guess"]))?.status
                statuses.add(String(status ?? 0))
            }
            #expect(statuses.all.filter { $0 == "400" }.count == 3, "\(statuses.all.sorted())")
            #expect(statuses.all.filter { $0 == "429" }.count == 9)
        }
    }

    @Test("a right password gives back the failure charged for its attempt")
    func rightPasswordIsNotAFailure() throws {
        var policy = RateLimitPolicy()
        policy.failedLoginPerAccount = RateLimit(2, per: 300)
        try withAccounts(.sqlite, rateLimits: policy) { server in
            _ = try server.signIn("ada@example.com")
            for _ in 0..<5 {
                let login = try server.app(
                    "POST", "auth/login", json: ["email": "ada@example.com", "password": password])
                #expect(login.status == 200)
            }
            #expect(
                try server.app("POST", "auth/login", json: ["email": "ada@example.com", "password": "wrong"]).status
                    == 400)
        }
    }

    @Test("pre-login sessions are short-lived, and the web door keeps none")
    func preLoginSessions() throws {
        try withAccounts(.sqlite, signup: .approval) { server in
            let signup = try server.app(
                "POST", "auth/signup", json: ["email": "ada@example.com", "password": "correct horse battery"])
            let token = try #require(signup.sessionToken)
            let login = try server.app(
                "POST", "auth/login", token: token,
                json: ["email": "ada@example.com", "password": "correct horse battery"])
            #expect(login.status == 401)
            #expect(login.sessionToken == token, "the caller's pre-login session is reused")
            let rows = { try server.application.database.execute("SELECT COUNT(*) AS n FROM sessions").first?.int("n") }
            #expect(try rows() == 1)

            let browser = Browser(port: server.port)
            _ = try browser.get("/account/login")
            let page = try browser.post(
                "/account/login", ["email": "ada@example.com", "password": "correct horse battery"])
            #expect(page.status == 200 && page.text.contains("waiting"))
            #expect(try rows() == 1, "the web door shows the standing and stores nothing")

            server.clock.advance(by: 86401)
            #expect(try server.standing(token).text == #"{"standing":null}"#)
        }
    }

    @Test("wrong current passwords at password change are limited per account")
    func passwordChangeLimit() throws {
        var policy = RateLimitPolicy()
        policy.failedPasswordChangePerAccount = RateLimit(2, per: 300)
        try withAccounts(.sqlite, rateLimits: policy) { server in
            let token = try server.signIn("ada@example.com")
            let guess = ["current_password": "a wrong guess", "new_password": "a new long password"]
            #expect(try server.app("POST", "account/password/change", token: token, json: guess).status == 400)
            #expect(try server.app("POST", "account/password/change", token: token, json: guess).status == 400)
            let refused = try server.app(
                "POST", "account/password/change", token: token,
                json: ["current_password": "correct horse battery", "new_password": "a new long password"])
            #expect(refused.status == 429)
            #expect(refused.header("Retry-After") != nil)
        }
    }

    @Test("a password change voids reset keys asked for before it")
    func changeVoidsResetKeys() throws {
        try withAccounts(.sqlite) { server in
            let token = try server.signIn("ada@example.com")
            _ = try server.app("POST", "auth/password/request", json: ["email": "ada@example.com"])
            let key = try #require(server.mailer.resetKey(for: "ada@example.com"))
            #expect(
                try server.app(
                    "POST", "account/password/change", token: token,
                    json: ["current_password": "correct horse battery", "new_password": "a new long password"]
                ).status == 200)
            let reset = try server.app(
                "POST", "auth/password/reset", json: ["key": key, "password": "an attacker password"])
            #expect(reset.status == 400 && reset.errorCodes == ["invalid_password_reset"])
        }
    }

    @Test("a secret in a path stays out of the log on 405 and 413 answers too")
    func secretPathsOnErrors() throws {
        try withAccounts(.sqlite) { server in
            let key = "SECRETKEYSECRETKEYSECRETKEYSECRETKEYSECRETK"
            let put = try RawHTTP.request(port: server.port, method: "PUT", path: "/account/password/reset/key/" + key)
            #expect(put.status == 405)
            let head =
                "POST /account/password/reset/key/" + key + " HTTP/1.1\r\nHost: x\r\nContent-Length: 900000000\r\n\r\n"
            let tooLarge = try RawHTTP.exchange(port: server.port, Array(head.utf8))
            #expect(tooLarge.status == 413)
            let log = server.log.lines.joined()
            #expect(!log.contains("SECRETKEY"))
            #expect(log.contains("PUT /account/password/reset/key/:key 405"))
            #expect(log.contains("POST /account/password/reset/key/:key 413"))
        }
    }

    @Test("every app-door path answers 410 to an invalid token")
    func goneEverywhere() throws {
        try withAccounts(.sqlite) { server in
            let bogus = "this-token-was-never-issued"
            let statuses = [
                try server.app("GET", "config", token: bogus).status,
                try server.app("GET", "auth/password/reset", token: bogus, headers: [("X-Password-Reset-Key", "k")])
                    .status,
                try server.app(
                    "POST", "auth/password/reset", token: bogus, json: ["key": "k", "password": "long pw!!"]
                ).status,
                try server.app("POST", "auth/password/request", token: bogus, json: ["email": "a@example.com"]).status,
                try server.app("POST", "auth/login", token: bogus, json: ["email": "a@example.com", "password": "x"])
                    .status,
            ]
            #expect(statuses == [410, 410, 410, 410, 410])
        }
    }

    @Test("IPv6 clients are counted by their /64, IPv4 clients by their address")
    func clientKeys() {
        #expect(RateLimiter.clientKey("192.0.2.7") == "192.0.2.7")
        #expect(RateLimiter.clientKey("2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64")
        #expect(RateLimiter.clientKey("2001:db8:1:2:bbbb::9") == RateLimiter.clientKey("2001:db8:1:2:aaaa::1"))
        #expect(RateLimiter.clientKey("::1") == "0:0:0:0::/64")
    }
}
