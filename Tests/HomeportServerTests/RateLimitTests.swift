import Foundation
import HomeportStorage
import HomeportTestSupport
import Testing

@testable import HomeportServer

@Suite("Rate limits: two doors, one budget", .tags(.process, .postgres, .browser))
struct RateLimitTests {
    static var tightLogin: RateLimitPolicy {
        var policy = RateLimitPolicy()
        policy.failedLoginPerAccount = RateLimit(3, per: 300)
        return policy
    }

    @Test("each budget's name sets its own limit and no other; each counts under a counter of its own")
    func budgetsAsValues() throws {
        #expect(RateLimitPolicy.names.count == Set(RateLimitPolicy.names).count, "a name once")
        var refused = RateLimitPolicy()
        let unknown = refused.set("no-such-budget", to: RateLimit(1, per: 1))
        #expect(!unknown)
        #expect(refused == RateLimitPolicy(), "an unknown name changes nothing")
        for (index, budget) in Budget.settable.enumerated() {
            var policy = RateLimitPolicy()
            let limit = RateLimit(1000 + index, per: 7)
            let accepted = policy.set(budget.name, to: limit)
            #expect(accepted)
            #expect(budget.limit(in: policy) == limit, "\(budget.name)")
            // Every other budget keeps its default.
            for other in Budget.settable where other.name != budget.name {
                #expect(other.limit(in: policy) == other.limit(in: RateLimitPolicy()), "\(other.name)")
            }
        }
        // A product's budget has its limit in force whatever the policy, and counters of its own.
        let product = Budget(product: "books-added-per-account", limit: RateLimit(3, per: 60))
        var everything = RateLimitPolicy()
        for name in RateLimitPolicy.names { _ = everything.set(name, to: RateLimit(1, per: 1)) }
        #expect(product.limit(in: everything) == RateLimit(3, per: 60))
        #expect(product.counter("account:7") == "product:books-added-per-account:account:7")
        let counters = Budget.settable.map(\.counter) + [Budget.decoyMailPerAccount.counter]
        #expect(counters.count == Set(counters).count, "no two budgets share a counter")
        #expect(Budget.signupPerAddress.counter("203.0.113.7") == "signup:ip:203.0.113.7")
    }

    @Test("failed logins on the web door use up the app door's budget too", arguments: Backend.allCases)
    func webFailuresRefuseApp(backend: Backend) throws {
        try withAccounts(backend, rateLimits: Self.tightLogin) { server in
            _ = try server.signIn("ada@example.com")
            let browser = Browser(port: server.port)
            _ = try browser.get("/account/login")
            for _ in 0..<3 {
                let failed = try browser.post(
                    "/account/login", ["email": "ada@example.com", "password": "wrong guess!"])
                #expect(failed.status == 400)
            }
            let webRefused = try browser.post(
                "/account/login", ["email": "ada@example.com", "password": "wrong guess!"])
            #expect(webRefused.status == 429)
            #expect(webRefused.text.contains("Too many attempts"))

            let app = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": "correct horse battery"])
            // As allauth: a form error the app can show, with when to try again.
            #expect(app.status == 400, "even the right password waits")
            #expect(app.errorCodes == ["too_many_login_attempts"], "\(app.text)")
            let retry = Int(app.header("Retry-After") ?? "") ?? 0
            #expect(retry > 0 && retry <= 300)

            server.clock.advance(by: 301)
            #expect(
                try server.app(
                    "POST", "auth/login", json: ["email": "ada@example.com", "password": "correct horse battery"]
                )
                .status == 200)
        }
    }

    @Test("failed logins on the app door refuse the web door")
    func appFailuresRefuseWeb() throws {
        try withAccounts(.sqlite, rateLimits: Self.tightLogin) { server in
            _ = try server.signIn("ada@example.com")
            for _ in 0..<3 {
                _ = try server.app(
                    "POST", "auth/login", json: ["email": "ada@example.com", "password": "wrong guess!"])
            }
            let browser = Browser(port: server.port)
            _ = try browser.get("/account/login")
            let refused = try browser.post(
                "/account/login", ["email": "ada@example.com", "password": "correct horse battery"])
            #expect(refused.status == 429)
            #expect(refused.header("Retry-After") != nil)
        }
    }

    @Test("signups and reset requests are limited per address across both doors")
    func signupAndReset() throws {
        var policy = RateLimitPolicy()
        policy.signupPerAddress = RateLimit(2, per: 3600)
        policy.resetPerEmail = RateLimit(1, per: 900)
        try withAccounts(.sqlite, rateLimits: policy) { server in
            #expect(
                try server.app("POST", "auth/signup", json: ["email": "a@example.com", "password": "long enough pw"])
                    .status == 200)
            let browser = Browser(port: server.port)
            _ = try browser.get("/account/signup")
            #expect(
                try browser.post("/account/signup", ["email": "b@example.com", "password": "long enough pw"]).status
                    == 303)
            let third = try server.app(
                "POST", "auth/signup", json: ["email": "c@example.com", "password": "long enough pw"])
            #expect(third.status == 429)
            let count = try server.application.database.execute("SELECT COUNT(*) AS n FROM users").first?.int("n")
            #expect(count == 2)

            #expect(try server.app("POST", "auth/password/request", json: ["email": "a@example.com"]).status == 200)
            let second = try server.app("POST", "auth/password/request", json: ["email": "a@example.com"])
            #expect(second.status == 429)
            // An unknown address is limited the same way: the refusal reveals nothing.
            #expect(try server.app("POST", "auth/password/request", json: ["email": "zz@example.com"]).status == 200)
            #expect(try server.app("POST", "auth/password/request", json: ["email": "zz@example.com"]).status == 429)
            #expect(server.mailer.mails.filter { $0.to == "a@example.com" }.count == 1)
        }
    }

    @Test("reset requests are counted per mailbox: +tags of one address share its budget")
    func resetBudgetPerMailbox() throws {
        var policy = RateLimitPolicy()
        policy.resetPerEmail = RateLimit(2, per: 900)
        try withAccounts(.sqlite, rateLimits: policy) { server in
            _ = try server.signIn("ada@example.com")
            let request = { (email: String) in
                try server.app("POST", "auth/password/request", json: ["email": email]).status
            }
            #expect(try request("ada+1@example.com") == 200)
            #expect(try request("ada+2@example.com") == 200)
            #expect(try request("ada+3@example.com") == 429, "a third tag is the same mailbox")
            #expect(try request("ada@example.com") == 429, "and so is the address without one")
            #expect(try request("ada.b+1@example.com") == 200, "another mailbox has its own budget")
            #expect(try request("Ada+1@example.com") == 429, "whatever its case")
        }
    }

    @Test("Gmail ignores dots and has two names: every spelling of one Gmail mailbox shares its budget")
    func gmailSpellings() throws {
        #expect(RateLimiter.mailbox("a.d.a+x@googlemail.com") == "ada@gmail.com")
        #expect(RateLimiter.mailbox("A.Da@GMail.com") == "ada@gmail.com")
        #expect(RateLimiter.mailbox("a.da@example.com") == "a.da@example.com", "other providers keep their dots")
        var policy = RateLimitPolicy()
        policy.resetPerEmail = RateLimit(2, per: 900)
        try withAccounts(.sqlite, rateLimits: policy) { server in
            let statuses = try ["ada@gmail.com", "a.d.a@gmail.com", "ad.a@googlemail.com", "a.da+x@gmail.com"].map {
                try server.app("POST", "auth/password/request", json: ["email": $0]).status
            }
            #expect(statuses == [200, 200, 429, 429])
        }
    }

    @Test(
        "one mailbox gets at most the day's mail that strangers can cause; the owner's sign-in codes are not held back"
    )
    func mailPerMailboxPerDay() throws {
        var policy = RateLimitPolicy()
        policy.mailPerMailbox = RateLimit(3, per: 86400)
        try withAccounts(.sqlite, emailVerification: .code, rateLimits: policy) { server in
            // The sign-up's code is the first mail of the day (anyone could have signed up).
            _ = try server.signupPending("ada@example.com")
            let reset = { (email: String) in
                try server.app("POST", "auth/password/request", json: ["email": email]).status
            }
            #expect(try reset("ada@example.com") == 200)
            server.clock.advance(by: 3600)
            #expect(try reset("ada+x@example.com") == 200)
            server.clock.advance(by: 3600)
            // Each kind's own budget is whole again; the day's is spent.
            #expect(try reset("ada@example.com") == 429)
            #expect(server.mailer.mails.count == 3)
            // The owner signs in with the right password: the code comes all the same.
            let login = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": "correct horse battery"])
            #expect(login.status == 401, "\(login.text)")
            #expect(server.mailer.mails.count == 4 && server.mailer.mails.last?.kind == "verification_code")
            // Another mailbox has its own day.
            #expect(try reset("bob@example.com") == 200)
            server.clock.advance(by: 86400)
            #expect(try reset("ada@example.com") == 200, "a new day")
        }
    }

    @Test(
        "a spent day of mail refuses a new address's sign-up as a taken one's (429, nothing created); refusals spend none of it"
    )
    func spentDayAtSignup() throws {
        var policy = RateLimitPolicy()
        policy.mailPerMailbox = RateLimit(2, per: 86400)
        policy.signupPerAddress = RateLimit(1000, per: 60)
        try withAccounts(.sqlite, emailVerification: .code, rateLimits: policy) { server in
            let signup = { (email: String) in
                try server.app("POST", "auth/signup", json: ["email": email, "password": "correct horse battery"])
                    .status
            }
            // Strangers ask resets for an address with no account until its day is spent.
            for _ in 0..<2 {
                #expect(
                    try server.app("POST", "auth/password/request", json: ["email": "new@example.com"]).status == 200)
                server.clock.advance(by: 1000)
            }
            #expect(try signup("new@example.com") == 429)
            #expect(try server.application.accounts.accounts().isEmpty, "nothing was created")
            // A taken address: its owner signed up yesterday; strangers sign up with it again and
            // again. Only the first is mailed; the refused ones spend none of the day, so the
            // owner's reset still goes out.
            server.clock.advance(by: 86400)
            _ = try server.signupPending("ada@example.com")
            server.clock.advance(by: 86400)
            let statuses = try (0..<20).map { _ in try signup("ada@example.com") }
            #expect(statuses.first == 401 && statuses.dropFirst().allSatisfy { $0 == 429 }, "\(statuses)")
            #expect(try server.app("POST", "auth/password/request", json: ["email": "ada@example.com"]).status == 200)
        }
    }

    @Test("the budget holds across two server processes on one PostgreSQL database")
    func acrossReplicas() throws {
        let (url, cleanUp) = try Backend.postgres.makeDatabaseURL()
        defer { cleanUp() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let arguments = [
            "--database", url.rawText, "--signup", "open", "--password-iterations", "1000",
            "--rate-limits", "failed-login-per-account=3/300", "--outbox", directory.file("outbox"),
        ]
        let web = try ServerProcess(serve: arguments)
        let app = try ServerProcess(serve: arguments)
        let signup = try RawHTTP.request(
            port: app.port, method: "POST", path: "/_allauth/app/v1/auth/signup",
            headers: [("Content-Type", "application/json")],
            body: Data(#"{"email":"ada@example.com","password":"correct horse battery"}"#.utf8))
        #expect(signup.status == 200)

        let browser = Browser(port: web.port)
        _ = try browser.get("/account/login")
        for _ in 0..<3 {
            #expect(
                try browser.post("/account/login", ["email": "ada@example.com", "password": "wrong guess!"]).status
                    == 400)
        }
        let refused = try RawHTTP.request(
            port: app.port, method: "POST", path: "/_allauth/app/v1/auth/login",
            headers: [("Content-Type", "application/json")],
            body: Data(#"{"email":"ada@example.com","password":"correct horse battery"}"#.utf8))
        #expect(refused.status == 400 && refused.errorCodes == ["too_many_login_attempts"])
        #expect(web.stop() == 0 && app.stop() == 0)
    }
}
