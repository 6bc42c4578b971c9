import Foundation
import HomeportServer
import HomeportTestSupport
import Testing

/// Signing in at the web door through the provider's own pages: the authorization code flow
/// with PKCE, a state bound to the browser, a nonce the ID token must carry, the code exchanged
/// with the client's secret; errors are pages that say what happened.
@Suite("Provider sign-in at the web door", .tags(.process, .interop, .browser))
struct WebProviderSignInTests {
    static let secret = "s3cret-of-the-web-client"

    /// A server with the stand-in as provider `household` (its web client with a secret), the
    /// stand-in issuing tokens at the server's time.
    func withProvider(_ body: (AccountsHarness, OIDCStandIn) throws -> Void) throws {
        let standIn = try OIDCStandIn()
        try withAccounts(.sqlite) { server in
            let file = NSTemporaryDirectory() + "homeport-oidc-secret-\(UUID().uuidString)"
            try Data((Self.secret + "\n").utf8).write(to: URL(fileURLWithPath: file))
            defer { try? FileManager.default.removeItem(atPath: file) }
            let added = try ServerProcess.run([
                "oidc", "add", "household", "--issuer", standIn.issuer, "--client-id", "homeport-web",
                "--client-secret-file", file, "--name", "Household", "--database", server.url.rawText,
            ])
            #expect(added.status == 0, "\(added.error)")
            server.clock.advance(by: 1)
            try standIn.control([
                "now": Int(server.clock.now().timeIntervalSince1970), "client_secret": Self.secret,
            ])
            try body(server, standIn)
        }
    }

    /// Follows a start link through the provider's authorization endpoint; the provider's
    /// redirect back, as a path of the server.
    func toProvider(_ browser: Browser, _ standIn: OIDCStandIn, start: String) throws -> String {
        let started = try browser.get(start)
        #expect(started.status == 303, "\(started.text)")
        let location = try #require(started.header("Location"))
        let request = try #require(URLComponents(string: location))
        #expect(location.hasPrefix(standIn.issuer + "/authorize?"))
        var query: [String: String] = [:]
        for item in request.queryItems ?? [] { query[item.name] = item.value }
        #expect(query["response_type"] == "code" && query["client_id"] == "homeport-web")
        #expect(query["code_challenge_method"] == "S256" && query["code_challenge"]?.count == 43)
        #expect(query["nonce"] != nil && query["state"] != nil && query["scope"] == "openid email profile")
        #expect(query["redirect_uri"] == "http://127.0.0.1:\(browser.port)/account/provider/callback")
        let answered = try RawHTTP.request(
            port: standIn.port, path: "/authorize?" + (request.percentEncodedQuery ?? ""))
        let back = try #require(answered.header("Location"), "\(answered.status)")
        return String(back.dropFirst("http://127.0.0.1:\(browser.port)".count))
    }

    @Test("a button on the sign-in page, the provider's pages, and back signed in; the secret goes as Basic")
    func signIn() throws {
        try withProvider { server, standIn in
            let browser = Browser(port: server.port)
            let login = try browser.get("/account/login")
            #expect(login.text.contains("href=\"/account/provider/household/start\">Continue with Household"))
            let back = try toProvider(browser, standIn, start: "/account/provider/household/start")
            let signedIn = try browser.get(back)
            #expect(signedIn.status == 303 && signedIn.header("Location") == "/account", "\(signedIn.text)")
            #expect(try browser.get("/account").text.contains("web@example.com"))
            #expect(try standIn.tokenAuthentication() == "basic")
            // The way back again: used.
            let again = Browser(port: server.port)
            again.cookies = browser.cookies
            let replay = try again.get(back)
            #expect(replay.status == 400 && replay.text.contains("already used"), "\(replay.text)")
            #expect(!server.log.lines.joined().contains(Self.secret))
        }
    }

    /// How many code exchanges the stand-in's token endpoint has seen.
    func exchanges(_ standIn: OIDCStandIn) throws -> Int {
        try RawHTTP.request(port: standIn.port, path: "/stats").jsonObject?["token"] as? Int ?? -1
    }

    @Test(
        "RFC 9207: an answer naming another issuer, or none from a provider that names itself, is refused before its code is exchanged"
    )
    func issuerInTheAnswer() throws {
        try withProvider { server, standIn in
            let browser = Browser(port: server.port)
            func control(_ extra: [String: Any]) throws {
                try standIn.control(
                    ["now": Int(server.clock.now().timeIntervalSince1970), "client_secret": Self.secret].merging(extra)
                    {
                        $1
                    })
            }
            // Another issuer's answer on this flow's state (a provider that sent the browser on to
            // another): refused, and its code never goes to the token endpoint with the verifier.
            try control(["answer_iss": "https://other.example"])
            let before = try exchanges(standIn)
            let mixed = try browser.get(try toProvider(browser, standIn, start: "/account/provider/household/start"))
            #expect(mixed.status == 400 && mixed.text.contains("could not be accepted"), "\(mixed.text)")
            #expect(try exchanges(standIn) == before, "the code was not exchanged")
            #expect(browser.cookies["homeport_session"] == nil)
            // Its own name: signed in.
            try control(["answer_iss": standIn.issuer])
            let own = try browser.get(try toProvider(browser, standIn, start: "/account/provider/household/start"))
            #expect(own.status == 303, "\(own.text)")
            // A provider whose discovery says it names itself, answering without: refused. (The
            // document is kept an hour: an hour on, it is read again.)
            server.clock.advance(by: 3601)
            try control(["iss_supported": true, "answer_iss": NSNull()])
            let fresh = Browser(port: server.port)
            let unnamed = try fresh.get(try toProvider(fresh, standIn, start: "/account/provider/household/start"))
            #expect(unnamed.status == 400 && unnamed.text.contains("could not be accepted"), "\(unnamed.text)")
            try control(["iss_supported": true])
            let named = try fresh.get(try toProvider(fresh, standIn, start: "/account/provider/household/start"))
            #expect(named.status == 303, "\(named.text)")
        }
    }

    @Test("a way back in another browser, a refusal, a wrong nonce, a provider down: pages that say so, no session")
    func failures() throws {
        try withProvider { server, standIn in
            // Started in one browser, brought back in another (an attacker's link to a victim).
            let mine = Browser(port: server.port)
            let back = try toProvider(mine, standIn, start: "/account/provider/household/start")
            let victim = Browser(port: server.port)
            let crossed = try victim.get(back)
            #expect(crossed.status == 400 && crossed.text.contains("another browser"), "\(crossed.text)")
            #expect(victim.cookies["homeport_session"] == nil)

            try standIn.control([
                "now": Int(server.clock.now().timeIntervalSince1970), "client_secret": Self.secret,
                "authorize_error": "access_denied",
            ])
            let declined = try mine.get(try toProvider(mine, standIn, start: "/account/provider/household/start"))
            #expect(declined.status == 400 && declined.text.contains("You declined to sign in at Household"))
            #expect(declined.header("Content-Type")?.hasPrefix("text/html") == true)

            try standIn.control([
                "now": Int(server.clock.now().timeIntervalSince1970), "client_secret": Self.secret,
                "nonce": "not-the-one-sent",
            ])
            let replayed = try mine.get(try toProvider(mine, standIn, start: "/account/provider/household/start"))
            #expect(replayed.status == 400 && replayed.text.contains("could not be accepted"), "\(replayed.text)")

            try standIn.control([
                "now": Int(server.clock.now().timeIntervalSince1970), "client_secret": "another secret",
            ])
            let wrongSecret = try mine.get(try toProvider(mine, standIn, start: "/account/provider/household/start"))
            #expect(wrongSecret.status == 400, "\(wrongSecret.text)")
            #expect(mine.cookies["homeport_session"] == nil)
            let log = server.log.lines.joined()
            #expect(log.contains("token endpoint answered HTTP 401"), "the reason is logged")
        }
    }

    @Test("a password account connects the provider and removes it; a provider's own account keeps its last way in")
    func connectAndRemove() throws {
        try withProvider { server, standIn in
            _ = try server.signIn("ada@example.com")
            let ada = Browser(port: server.port)
            _ = try ada.get("/account/login")
            #expect(
                try ada.post("/account/login", ["email": "ada@example.com", "password": "correct horse battery"])
                    .status == 303)
            #expect(try ada.get("/account").text.contains("/account/providers"))
            let page = try ada.get("/account/providers")
            #expect(page.text.contains("No sign-in provider is linked") && page.text.contains("Connect Household"))
            // Linking from a link another site shows (no token of this page): refused.
            let forged = try ada.get("/account/provider/household/start?process=connect")
            #expect(forged.status == 403, "\(forged.status)")
            let start = try #require(
                page.text.firstMatch(of: /href="(\/account\/provider\/household\/start\?process=connect[^"]*)"/)
                    .map { String($0.output.1).replacingOccurrences(of: "&amp;", with: "&") })
            let back = try toProvider(ada, standIn, start: start)
            let connected = try ada.get(back)
            #expect(
                connected.status == 303 && connected.header("Location") == "/account/providers", "\(connected.text)")
            let listed = try ada.get("/account/providers")
            #expect(listed.text.contains("web@example.com"))
            #expect(
                try ada.post("/account/providers/remove", ["provider": "household", "account": "web-1"]).status == 303)
            #expect(try ada.get("/account/providers").text.contains("No sign-in provider is linked"))

            // Someone the provider made an account for: its link is its only way in.
            let web = Browser(port: server.port)
            #expect(try web.get(try toProvider(web, standIn, start: "/account/provider/household/start")).status == 303)
            _ = try web.get("/account/providers")
            let kept = try web.post("/account/providers/remove", ["provider": "household", "account": "web-1"])
            #expect(kept.status == 400 && kept.text.contains("only way into your account"), "\(kept.text)")
        }
    }

    @Test("someone new whose address has an account chooses another address on a page")
    func signupWithAnotherAddress() throws {
        try withProvider { server, standIn in
            _ = try server.signIn("web@example.com")
            let browser = Browser(port: server.port)
            let back = try toProvider(browser, standIn, start: "/account/provider/household/start")
            let asked = try browser.get(back)
            #expect(asked.status == 303 && asked.header("Location") == "/account/provider/signup", "\(asked.text)")
            let form = try browser.get("/account/provider/signup")
            #expect(form.status == 200 && form.text.contains("Household signed you in"))
            let taken = try browser.post("/account/provider/signup", ["email": "web@example.com"])
            #expect(taken.status == 400 && taken.text.contains("already uses this address"))
            let created = try browser.post("/account/provider/signup", ["email": "web@home.example"])
            #expect(created.status == 303 && created.header("Location") == "/account", "\(created.text)")
            #expect(try browser.get("/account").text.contains("web@home.example"))
        }
    }

    @Test("a provider that cannot be reached gets a page, not a stack of JSON")
    func providerDown() throws {
        try withProvider { server, standIn in
            try standIn.control(["discovery_status": 503])
            let browser = Browser(port: server.port)
            let down = try browser.get("/account/provider/household/start")
            #expect(down.status == 503 && down.text.contains("Household cannot be reached now"), "\(down.text)")
            #expect(down.header("Content-Type")?.hasPrefix("text/html") == true)
            let unknown = try browser.get("/account/provider/nobody/start")
            #expect(unknown.status == 503 && unknown.text.contains("no such sign-in"))
        }
    }
}
