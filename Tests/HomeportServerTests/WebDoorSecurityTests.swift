import Foundation
import HomeportServer
import HomeportTestSupport
import Testing

/// The web door under attack: session fixation, forged forms, posts from other sites.
@Suite("The web door's sessions and CSRF defence", .tags(.browser))
struct WebDoorSecurityTests {
    private func signedInBrowser(_ server: AccountsHarness, _ email: String = "ada@example.com") throws -> Browser {
        let browser = Browser(port: server.port)
        _ = try browser.get("/account/signup")
        let signup = try browser.post("/account/signup", ["email": email, "password": "correct horse battery"])
        #expect(signup.status == 303)
        _ = try browser.get("/account")
        return browser
    }

    @Test("signing in while holding a session ends that session (rotation)", arguments: [true, false])
    func loginRotates(sameAccount: Bool) throws {
        try withAccounts(.sqlite) { server in
            _ = try server.signIn("bob@example.com")
            let browser = try signedInBrowser(server)
            let before = try #require(browser.cookies["homeport_session"])
            _ = try browser.get("/account/login")
            let login = try browser.post(
                "/account/login",
                ["email": sameAccount ? "ada@example.com" : "bob@example.com", "password": "correct horse battery"])
            #expect(login.status == 303)
            let after = try #require(browser.cookies["homeport_session"])
            #expect(after != before)
            let stale = Browser(port: server.port)
            stale.cookies["homeport_session"] = before
            #expect(try stale.get("/account").status == 303, "the earlier session is gone")
            let webSessions = try server.application.database.execute(
                "SELECT COUNT(*) AS n FROM sessions WHERE kind = 'web'"
            ).first?.int("n")
            #expect(webSessions == 1)
        }
    }

    @Test("a cookie and a field an attacker makes up are refused, even when they match each other")
    func madeUpPairs() throws {
        try withAccounts(.sqlite) { server in
            let attacker = Browser(port: server.port)
            let madeUp = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
            attacker.cookies["homeport_csrf"] = madeUp
            let forged = try attacker.post(
                "/account/signup", ["email": "ada@example.com", "password": "correct horse battery"], csrf: madeUp)
            #expect(forged.status == 403)

            // A real seed, with the seed itself as the field (the old double-submit pair).
            let browser = Browser(port: server.port)
            _ = try browser.get("/account/signup")
            let seed = try #require(browser.cookies["homeport_csrf"])
            #expect(browser.formToken != seed, "the form's token is not the cookie's value")
            let echoed = try browser.post(
                "/account/signup", ["email": "ada@example.com", "password": "correct horse battery"], csrf: seed)
            #expect(echoed.status == 403)

            // Another browser's valid token with this browser's seed.
            let other = Browser(port: server.port)
            _ = try other.get("/account/signup")
            let crossed = try browser.post(
                "/account/signup", ["email": "ada@example.com", "password": "correct horse battery"],
                csrf: other.formToken)
            #expect(crossed.status == 403)
            let count = try server.application.database.execute("SELECT COUNT(*) AS n FROM users").first?.int("n")
            #expect(count == 0)
        }
    }

    @Test("a post from another site is refused by its Origin or Referer, before the token is looked at")
    func otherSites() throws {
        try withAccounts(.sqlite, publicURL: "http://books.example.net") { server in
            let browser = Browser(port: server.port)
            _ = try browser.get("/account/signup")
            let fields = ["email": "ada@example.com", "password": "correct horse battery"]
            for origin in ["http://evil.example", "null", "http://127.0.0.1:1", "http://127.0.0.1.evil.example"] {
                browser.origin = origin
                #expect(try browser.post("/account/signup", fields).status == 403, "\(origin)")
            }
            // No Origin (an older browser): the Referer decides.
            browser.origin = nil
            let referred = try RawHTTP.request(
                port: server.port, method: "POST", path: "/account/signup",
                headers: [
                    ("Cookie", "homeport_csrf=\(browser.cookies["homeport_csrf"] ?? "")"),
                    ("Referer", "http://evil.example/page"), ("Content-Type", "application/x-www-form-urlencoded"),
                ],
                body: Data("csrf_token=\(browser.formToken ?? "")&email=a%40example.com&password=longenough".utf8))
            #expect(referred.status == 403)
            #expect(try server.application.database.execute("SELECT COUNT(*) AS n FROM users").first?.int("n") == 0)

            // The public address counts as this site too (a proxy that rewrites Host), and a client
            // that sends neither header still needs its token.
            browser.origin = "http://books.example.net"
            #expect(try browser.post("/account/password/reset", ["email": "ada@example.com"]).status == 200)
            browser.origin = nil
            #expect(try browser.post("/account/password/reset", ["email": "ada@example.com"]).status == 200)
        }
    }

    @Test(
        "pages send their referrer to this origin only: with no referrer at all a browser sends a same-origin form's Origin as null, which the CSRF check refuses"
    )
    func referrerReachesOwnForms() throws {
        try withAccounts(.sqlite, publicURL: nil) { server in
            let browser = Browser(port: server.port)
            let page = try browser.get("/account/signup")
            #expect(page.header("Referrer-Policy") == "same-origin")
            // What Chromium and Firefox send under `no-referrer`: refused, so the policy matters.
            browser.origin = "null"
            #expect(
                try browser.post("/account/signup", ["email": "a@example.com", "password": "longenough"]).status == 403)
        }
    }

    @Test("a token minted before sign-in does not work after it, nor after sign-out")
    func tokensRotate() throws {
        try withAccounts(.sqlite) { server in
            let browser = Browser(port: server.port)
            _ = try browser.get("/account/login")
            let beforeSignIn = try #require(browser.formToken)
            _ = try server.signIn("ada@example.com")
            let login = try browser.post(
                "/account/login", ["email": "ada@example.com", "password": "correct horse battery"])
            #expect(login.status == 303)
            #expect(login.headers.contains { $0.value.hasPrefix("homeport_csrf=") }, "a new seed at sign-in")
            #expect(try browser.post("/account/logout", [:], csrf: beforeSignIn).status == 403)
            #expect(try browser.get("/account").status == 200, "the refused post changed nothing")

            let signedIn = try #require(browser.formToken)
            #expect(signedIn != beforeSignIn)
            #expect(try browser.post("/account/logout", [:]).status == 303)
            _ = try browser.get("/account/login")
            #expect(
                try browser.post(
                    "/account/login", ["email": "ada@example.com", "password": "correct horse battery"],
                    csrf: signedIn
                ).status == 403)
        }
    }
}
