import Foundation
import HomeportServer
import HomeportTestSupport
import Testing

@Suite("The web door", .tags(.browser))
struct WebDoorTests {
    @Test("sign-up and sign-in set an HttpOnly, SameSite=Lax session cookie; sign-out ends it")
    func cookieSession() throws {
        try withAccounts(.sqlite) { server in
            let browser = Browser(port: server.port)
            let form = try browser.get("/account/signup")
            #expect(form.status == 200)
            #expect(form.header("Content-Type") == "text/html; charset=utf-8")
            #expect(form.text.contains("name=\"csrf_token\"") && form.text.contains("name=\"website\""))
            #expect(form.header("Set-Cookie")?.contains("HttpOnly; SameSite=Lax") == true)

            let signup = try browser.post(
                "/account/signup", ["email": "ada@example.com", "password": "correct horse battery", "website": ""])
            #expect(signup.status == 303)
            #expect(signup.header("Location") == "/account")
            let cookie = try #require(signup.headers.first { $0.value.hasPrefix("homeport_session=") }?.value)
            #expect(
                cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax") && cookie.contains("Max-Age=31536000"))
            #expect(!cookie.contains("Secure"), "plain-HTTP public address: no Secure flag")
            let home = try browser.get("/account")
            #expect(home.status == 200 && home.text.contains("ada@example.com"))

            let logout = try browser.post("/account/logout", [:])
            #expect(logout.status == 303)
            #expect(try browser.get("/account").status == 303)

            _ = try browser.get("/account/login")
            let login = try browser.post(
                "/account/login", ["email": "ada@example.com", "password": "correct horse battery"])
            #expect(login.status == 303)
            #expect(try browser.get("/account").text.contains("ada@example.com"))
            let wrong = Browser(port: server.port)
            _ = try wrong.get("/account/login")
            let refused = try wrong.post(
                "/account/login", ["email": "ada@example.com", "password": "not the password"])
            #expect(refused.status == 400 && refused.text.contains("not correct"))
        }
    }

    @Test("cookies are Secure and __Host- named when the public address is HTTPS")
    func secureCookies() throws {
        try withAccounts(.sqlite, publicURL: "https://books.example.net") { server in
            let browser = Browser(port: server.port)
            _ = try browser.get("/account/signup")
            let signup = try browser.post(
                "/account/signup", ["email": "ada@example.com", "password": "correct horse battery"])
            let cookie = try #require(signup.headers.first { $0.value.hasPrefix("__Host-homeport_session=") }?.value)
            #expect(cookie.contains("; Secure") && cookie.contains("Path=/") && !cookie.contains("Domain"))
            let seed = try #require(signup.headers.first { $0.value.hasPrefix("__Host-homeport_csrf=") }?.value)
            #expect(seed.contains("; Secure") && seed.contains("Path=/"))
            #expect(!signup.headers.contains { $0.value.hasPrefix("homeport_") }, "no cookie without the prefix")
            #expect(try browser.get("/account").text.contains("ada@example.com"))
        }
    }

    @Test("a form without its CSRF token is refused with 403 and changes nothing")
    func csrf() throws {
        try withAccounts(.sqlite) { server in
            let browser = Browser(port: server.port)
            _ = try browser.get("/account/signup")
            let forged = try browser.post(
                "/account/signup", ["email": "ada@example.com", "password": "correct horse battery"], csrf: "forged")
            #expect(forged.status == 403)
            let noCookie = Browser(port: server.port)
            let missing = try noCookie.post(
                "/account/signup", ["email": "ada@example.com", "password": "correct horse battery"], csrf: "")
            #expect(missing.status == 403)
            let count = try server.application.database.execute("SELECT COUNT(*) AS n FROM users").first?.int("n")
            #expect(count == 0)
        }
    }

    @Test("a filled honeypot is refused and creates no account")
    func honeypot() throws {
        try withAccounts(.sqlite) { server in
            let browser = Browser(port: server.port)
            _ = try browser.get("/account/signup")
            let bot = try browser.post(
                "/account/signup",
                ["email": "bot@example.com", "password": "correct horse battery", "website": "http://spam.example"])
            #expect(bot.status == 400)
            let count = try server.application.database.execute("SELECT COUNT(*) AS n FROM users").first?.int("n")
            #expect(count == 0)
        }
    }

    @Test("a browser session cannot call the API, and app and web sessions stay at their own door")
    func doorsStaySeparate() throws {
        try withAccounts(.sqlite) { server in
            let browser = Browser(port: server.port)
            _ = try browser.get("/account/signup")
            _ = try browser.post("/account/signup", ["email": "ada@example.com", "password": "correct horse battery"])
            let webToken = try #require(browser.cookies["homeport_session"])
            #expect(try browser.get("/api/v1/app-info").status == 401, "the cookie does not open the API")
            #expect(try server.appInfo(webToken).status == 401, "nor does its value in the header")
            #expect(try server.app("GET", "auth/session", token: webToken).status == 410)

            let appToken = try server.signIn("ada@example.com")
            let visitor = Browser(port: server.port)
            visitor.cookies["homeport_session"] = appToken
            #expect(try visitor.get("/account").status == 303, "an app token is not a web session")
        }
    }

    @Test("the reset page works with the mailed key, once")
    func webReset() throws {
        try withAccounts(.sqlite) { server in
            _ = try server.signIn("ada@example.com")
            let browser = Browser(port: server.port)
            _ = try browser.get("/account/password/reset")
            #expect(try browser.post("/account/password/reset", ["email": "ada@example.com"]).status == 200)
            let key = try #require(server.mailer.resetKey(for: "ada@example.com"))
            #expect(try browser.get("/account/password/reset/key/\(key)").status == 200)
            let done = try browser.post("/account/password/reset/key/\(key)", ["password": "a brand new password"])
            #expect(done.status == 200 && done.text.contains("Password changed"))
            #expect(try browser.get("/account/password/reset/key/\(key)").status == 400)
            #expect(
                try server.app(
                    "POST", "auth/login", json: ["email": "ada@example.com", "password": "a brand new password"]
                ).status == 200)
        }
    }
}
