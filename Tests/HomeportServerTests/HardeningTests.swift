import Foundation
import HomeportCrypto
import HomeportStorage
import HomeportTestSupport
import Testing

@testable import HomeportServer

private let password = "correct horse battery"

/// Attacks and races found in review, each pinned by a test.
@Suite("Hardening of the account doors", .tags(.postgres, .browser))
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
                let answer = try? server.app(
                    "POST", "auth/login", json: ["email": "ada@example.com", "password": "a wrong guess"])
                statuses.add("\(answer?.status ?? 0) \(answer?.errorCodes.joined() ?? "")")
            }
            #expect(
                statuses.all.filter { $0 == "400 email_password_mismatch" }.count == 3, "\(statuses.all.sorted())")
            #expect(statuses.all.filter { $0 == "400 too_many_login_attempts" }.count == 9)
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

    @Test("wrong current passwords are limited per session: a stolen token cannot lock the owner out")
    func passwordChangeLimitPerSession() throws {
        var policy = RateLimitPolicy()
        policy.failedPasswordChangePerSession = RateLimit(2, per: 300)
        try withAccounts(.sqlite, rateLimits: policy) { server in
            let owner = try server.signIn("ada@example.com")
            let stolen = try server.signIn("ada@example.com")
            let guess = ["current_password": "a wrong guess", "new_password": "a new long password"]
            #expect(try server.app("POST", "account/password/change", token: stolen, json: guess).status == 400)
            #expect(try server.app("POST", "account/password/change", token: stolen, json: guess).status == 400)
            let refused = try server.app(
                "POST", "account/password/change", token: stolen,
                json: ["current_password": "correct horse battery", "new_password": "the thief's password"])
            #expect(refused.status == 429, "the thief's session has spent its budget")
            #expect(refused.header("Retry-After") != nil)
            let owners = try server.app(
                "POST", "account/password/change", token: owner,
                json: ["current_password": "correct horse battery", "new_password": "the owner's new password"])
            #expect(owners.status == 200, "the owner's session has a budget of its own")
            #expect(try server.appInfo(stolen).status == 401, "and the change ended the stolen session")
        }
    }

    @Test(
        "a new password that would be refused costs no hash, even with the right current one",
        arguments: Backend.allCases)
    func refusedNewPasswordCostsNothing(backend: Backend) throws {
        let hasher = GatedHasher(iterations: 1000)
        try withAccounts(backend, hasher: hasher) { server in
            let token = try server.signIn("ada@example.com")
            hasher.resetMeter()
            for _ in 0..<30 {
                let answer = try server.app(
                    "POST", "account/password/change", token: token,
                    json: ["current_password": "correct horse battery", "new_password": "short"])
                #expect(answer.status == 400 && answer.text.contains("new_password"))
            }
            #expect(hasher.spent == 0, "30 refused new passwords ran \(hasher.spent / 1000) hashes")
            #expect(try server.appInfo(token).status == 200, "and nothing changed")
        }
    }

    @Test("password changes are limited per account: each new session's fresh budget does not make them free")
    func passwordChangeLimitPerAccount() throws {
        var policy = RateLimitPolicy()
        policy.passwordChangePerAccount = RateLimit(3, per: 3600)
        try withAccounts(.sqlite, rateLimits: policy) { server in
            var token = try server.signIn("ada@example.com")
            let thief = try server.signIn("ada@example.com")
            let guess = ["current_password": "a wrong guess", "new_password": "a new long password"]
            for _ in 0..<4 {
                #expect(try server.app("POST", "account/password/change", token: thief, json: guess).status == 400)
            }
            var current = "correct horse battery"
            for round in 1...3 {
                let next = "new long password \(round)"
                let changed = try server.app(
                    "POST", "account/password/change", token: token,
                    json: ["current_password": current, "new_password": next])
                #expect(changed.status == 200, "change \(round): wrong guesses spent none of the account's budget")
                token = try #require(changed.sessionToken)
                current = next
            }
            let refused = try server.app(
                "POST", "account/password/change", token: token,
                json: ["current_password": current, "new_password": "one change too many"])
            #expect(refused.status == 429 && refused.header("Retry-After") != nil)
            #expect(
                try server.app("POST", "auth/login", json: ["email": "ada@example.com", "password": current]).status
                    == 200)
        }
    }

    @Test("a login password longer than sign-up allows is refused before anything is charged or hashed")
    func overlongLoginPassword() throws {
        var policy = RateLimitPolicy()
        policy.failedLoginPerAccount = RateLimit(2, per: 300)
        let hasher = GatedHasher(iterations: 1000)
        try withAccounts(.sqlite, rateLimits: policy, hasher: hasher) { server in
            _ = try server.signIn("ada@example.com")
            hasher.resetMeter()
            let long = String(repeating: "x", count: 1025)
            for _ in 0..<3 {
                let login = try server.app("POST", "auth/login", json: ["email": "ada@example.com", "password": long])
                #expect(login.status == 400)
            }
            #expect(hasher.spent == 0)
            #expect(
                try server.app(
                    "POST", "auth/login", json: ["email": "ada@example.com", "password": "correct horse battery"]
                )
                .status == 200, "the account's failure budget is untouched")
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

    @Test("a secret in a path stays out of the log on 405, 413 and 404 answers, however the path is mangled")
    func secretPathsOnErrors() throws {
        try withAccounts(.sqlite) { server in
            let key = "SECRETKEYSECRETKEYSECRETKEYSECRETKEYSECRETK"
            let put = try RawHTTP.request(port: server.port, method: "PUT", path: "/account/password/reset/key/" + key)
            #expect(put.status == 405)
            let head =
                "POST /account/password/reset/key/" + key + " HTTP/1.1\r\nHost: x\r\nContent-Length: 900000000\r\n\r\n"
            let tooLarge = try RawHTTP.exchange(port: server.port, Array(head.utf8))
            #expect(tooLarge.status == 413)
            // Links mangled by a mail client or a person: every outcome is 404, none logs the key.
            let base = "/account/password/reset/key/"
            for path in [
                base + key + "/", base + key + "%2F", "/account/password/reset/key//" + key,
                "/account/password//reset/key/" + key, "/ACCOUNT/password/reset/key/" + key,
                "/account/password/reset/" + key, "/account/reset/key/" + key + ".html", "/" + key,
            ] {
                let response = try RawHTTP.request(port: server.port, path: path)
                #expect(response.status == 404, "\(path)")
            }
            let log = server.log.lines.joined()
            #expect(!log.contains("SECRETKEY"))
            #expect(log.contains("PUT /account/password/reset/key/*** 405"))
            #expect(log.contains("POST /account/password/reset/key/*** 413"))
            #expect(log.contains("GET /account/password/reset/*** 404"))
            #expect(log.contains("GET /account/reset/key/***.html 404"))
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
        // IPv4 clients a dual-stack socket or a proxy reports as ::ffff:a.b.c.d are each their own
        // IPv4 address, not one /64 shared by every IPv4 client.
        #expect(RateLimiter.clientKey("::ffff:192.0.2.7") == "192.0.2.7")
        #expect(RateLimiter.clientKey("::ffff:192.0.2.8") != RateLimiter.clientKey("::ffff:192.0.2.7"))
    }

    @Test(
        "addresses are one dot-atom, one @ and a host name, in ASCII: lists, names, comments and look-alikes are refused",
        arguments: [
            "victim@example.com,a", "<victim@example.com>", "Victim <victim@example.com>", "x@y.z(comment)",
            "\"quoted\"@example.com", "a b@example.com", "vic\u{200B}tim@example.com", "vict\u{0456}m@example.com",
            "\u{0430}da@example.com", "re\u{0301}sume@example.com", "r\u{00E9}sume@example.com", "a..b@example.com",
            ".a@example.com", "a.@example.com", "a@-example.com", "a@example-.com", "a@example.123", "a@example",
            "a@@example.com", "a@example..com", "\u{202E}moc.elpmaxe@a", "a@exa_mple.com", "a@example.com\u{FEFF}",
        ])
    func addressSyntax(address: String) throws {
        #expect(Credentials.normalizedEmail(address) == nil)
    }

    @Test("well-formed addresses are kept, trimmed and lowercased")
    func wellFormedAddresses() {
        #expect(Credentials.normalizedEmail(" Ada.Lovelace+Tag@Example.COM ") == "ada.lovelace+tag@example.com")
        #expect(Credentials.normalizedEmail("o'brien@mail.example.co.uk") == "o'brien@mail.example.co.uk")
        #expect(Credentials.normalizedEmail("x@xn--bcher-kva.example") == "x@xn--bcher-kva.example")
        #expect(Credentials.normalizedEmail("a!#$%&*/=?^_`{|}~-z@example.com") != nil)
    }

    @Test("an address with a list or a display name reaches neither an account, nor a mail, nor a budget")
    func listsEscapeNothing() throws {
        var policy = RateLimitPolicy()
        policy.resetPerEmail = RateLimit(1, per: 900)
        try withAccounts(.sqlite, rateLimits: policy) { server in
            _ = try server.signIn("victim@example.com")
            for variant in ["victim@example.com,a", "<victim@example.com>", "x@example.com(victim@example.com)"] {
                let reset = try server.app("POST", "auth/password/request", json: ["email": variant])
                #expect(reset.status == 400 && reset.errorCodes == ["invalid"], "\(variant)")
                let signup = try server.app("POST", "auth/signup", json: ["email": variant, "password": password])
                #expect(signup.status == 400, "\(variant)")
            }
            #expect(server.mailer.mails.isEmpty)
            #expect(
                try server.app("POST", "auth/password/request", json: ["email": "victim@example.com"]).status == 200)
            #expect(
                try server.app("POST", "auth/password/request", json: ["email": "victim@example.com"]).status == 429)
            #expect(server.mailer.mails.map(\.to) == ["victim@example.com"])
        }
    }

    @Test("every login costs the configured hashing work: unknown, cheaper-hashed and wrong alike")
    func loginTimingIsEqualized() throws {
        let hasher = GatedHasher(iterations: 3000)
        try withAccounts(.sqlite, hasher: hasher) { server in
            _ = try server.signIn("current@example.com")
            // An account whose hash an earlier, cheaper configuration made.
            let cheap = try PasswordHasher(iterations: 1000).hash(password)
            _ = try server.signIn("old@example.com")
            try server.application.database.execute(
                "UPDATE users SET password_hash = $1 WHERE email = 'old@example.com'", [.text(cheap)])
            for email in ["nobody@example.com", "old@example.com", "current@example.com"] {
                hasher.resetMeter()
                let login = try server.app("POST", "auth/login", json: ["email": email, "password": "a wrong guess"])
                #expect(login.status == 400)
                #expect(hasher.spent == 3000, "\(email) spent \(hasher.spent) iterations")
            }
            let stored = {
                try server.application.database.execute(
                    "SELECT password_hash FROM users WHERE email = 'old@example.com'"
                ).first?.string("password_hash")
            }
            #expect(try stored() == cheap, "a wrong password upgrades nothing")
            #expect(
                try server.app("POST", "auth/login", json: ["email": "old@example.com", "password": password]).status
                    == 200)
            let upgraded = try #require(try stored())
            #expect(
                PasswordHasher.iterations(of: upgraded) == 3000,
                "the right password remakes the hash at the configured cost")
            #expect(
                try server.app("POST", "auth/login", json: ["email": "old@example.com", "password": password]).status
                    == 200)
        }
    }

    @Test("the app door reads only application/json bodies: another site's text/plain spends nothing")
    func jsonOnly() throws {
        var policy = RateLimitPolicy()
        policy.signupPerAddress = RateLimit(1, per: 3600)
        try withAccounts(.sqlite, rateLimits: policy) { server in
            let body = Data(#"{"email":"ada@example.com","password":"correct horse battery"}"#.utf8)
            for types in [
                ["text/plain"], ["application/x-www-form-urlencoded"], [], ["application/json", "text/plain"],
                ["application/jsonp"],
            ] {
                let response = try RawHTTP.request(
                    port: server.port, method: "POST", path: "/_allauth/app/v1/auth/signup",
                    headers: types.map { ("Content-Type", $0) }, body: body)
                #expect(response.status == 415, "\(types)")
                #expect(response.errorCodes == ["unsupported_media_type"])
                #expect(response.header("Cache-Control") == "no-store")
            }
            #expect(try server.application.database.execute("SELECT COUNT(*) AS n FROM users").first?.int("n") == 0)
            let json = try RawHTTP.request(
                port: server.port, method: "POST", path: "/_allauth/app/v1/auth/signup",
                headers: [("Content-Type", "Application/JSON; charset=utf-8")], body: body)
            #expect(json.status == 200, "the budget of one sign-up was not spent by the refused ones")
        }
    }

    @Test("an empty or blank token is no token; a token sent twice is invalid")
    func tokenHeaderForms() throws {
        try withAccounts(.sqlite) { server in
            for (index, blank) in ["", " ", "\t"].enumerated() {
                let config = try server.app("GET", "config", headers: [("X-Session-Token", blank)])
                #expect(config.status == 200, "'\(blank)'")
                let login = try server.app(
                    "POST", "auth/signup", json: ["email": "a\(index)@example.com", "password": password],
                    headers: [("X-Session-Token", blank)])
                #expect(login.status == 200, "an app that always sends the header can sign in")
                #expect(try server.standing(blank).text == #"{"standing":null}"#)
            }
            let token = try server.signIn("ada@example.com")
            let twice = [("X-Session-Token", token), ("X-Session-Token", token)]
            #expect(try server.app("GET", "auth/session", headers: twice).status == 410)
            #expect(try RawHTTP.request(port: server.port, path: "/api/v1/app-info", headers: twice).status == 401)
            let mixed = [("X-Session-Token", token), ("X-Session-Token", "")]
            #expect(try RawHTTP.request(port: server.port, path: "/api/v1/app-info", headers: mixed).status == 401)
            #expect(try server.appInfo(token).status == 200)
        }
    }
}
