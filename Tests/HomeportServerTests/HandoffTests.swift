import Foundation
import HomeportCrypto
import HomeportServer
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

/// The handoff: a sign-in at the web door, in the browser, handed to the app that asked for it
/// (authorization code with PKCE, RFC 7636 and RFC 8252). The code works once, for two minutes,
/// only with the app's verifier; the page names the device; the way back is only where the app
/// said.
@Suite("Browser sign-in handed to an app", .tags(.postgres, .browser))
struct HandoffTests {
    static let password = "correct horse battery"

    /// A verifier and its S256 challenge.
    static func pkce() throws -> (verifier: String, challenge: String) {
        let verifier = try SecretToken.generate() + "-verifier"
        return (verifier, IdentityProof.base64URL(Digest.sha256(Array(verifier.utf8))))
    }

    /// `POST auth/handoff`.
    func begin(
        _ server: AccountsHarness, challenge: String, redirect: String = "com.example.books://signed-in",
        state: String = "state-123", device: String = "Ada's iPhone", method: String = "S256"
    ) throws -> RawResponse {
        try server.app(
            "POST", "auth/handoff",
            json: [
                "code_challenge": challenge, "code_challenge_method": method, "redirect_uri": redirect,
                "state": state, "device_name": device,
            ])
    }

    /// The path of the handoff's page, from `begin`'s answer.
    func pagePath(_ response: RawResponse, port: Int) throws -> String {
        let data = try #require(response.jsonObject?["data"] as? [String: Any], "\(response.text)")
        #expect(data["expires_in"] as? Int == 600)
        let url = try #require(data["url"] as? String)
        #expect(url.hasPrefix("http://127.0.0.1:\(port)/account/handoff/"), "\(url)")
        return String(url.dropFirst("http://127.0.0.1:\(port)".count))
    }

    /// Signs ada in at the web door of `browser` (an account made first when `signUp`).
    func signIn(_ browser: Browser, _ server: AccountsHarness) throws {
        _ = try server.signIn("ada@example.com")
        _ = try browser.get("/account/login")
        let login = try browser.post("/account/login", ["email": "ada@example.com", "password": Self.password])
        #expect(login.status == 303, "\(login.text)")
    }

    /// The way back the decision page gives (its link), and its query's parameters.
    func wayBack(_ page: RawResponse) throws -> (url: String, query: [String: String]) {
        let link = try #require(
            page.text.firstMatch(of: /href="([^"]+)">Open the app/).map { String($0.output.1) }, "\(page.text)")
        let url = link.replacingOccurrences(of: "&amp;", with: "&")
        #expect(page.text.contains("http-equiv=\"refresh\""))
        var query: [String: String] = [:]
        for pair in (URLComponents(string: url)?.queryItems ?? []) { query[pair.name] = pair.value }
        return (url, query)
    }

    /// Signs in at the browser and allows the handoff; the code the app gets back.
    func confirm(_ browser: Browser, _ server: AccountsHarness, path: String) throws -> String {
        let page = try browser.get(path)
        #expect(page.status == 200 && page.text.contains("Ada&#39;s iPhone"), "\(page.text)")
        #expect(page.text.contains("The sign-in goes to <strong>the app com.example.books</strong>"))
        let done = try browser.post(path, ["decision": "allow"])
        #expect(done.status == 200, "\(done.text)")
        let back = try wayBack(done)
        #expect(back.url.hasPrefix("com.example.books://signed-in?"))
        #expect(back.query["state"] == "state-123")
        return try #require(back.query["code"])
    }

    func exchange(_ server: AccountsHarness, code: String, verifier: String) throws -> RawResponse {
        try server.app("POST", "auth/handoff/token", json: ["code": code, "code_verifier": verifier])
    }

    @Test("signed out, the page waits for a sign-in; then it names the device, and the code becomes a session once")
    func wholeFlow() throws {
        try withAccounts(.sqlite) { server in
            let (verifier, challenge) = try Self.pkce()
            let path = try pagePath(try begin(server, challenge: challenge), port: server.port)
            let browser = Browser(port: server.port)
            // Signed out: to the sign-in, the handoff remembered.
            let first = try browser.get(path)
            #expect(first.status == 303 && first.header("Location") == "/account/login")
            _ = try server.signIn("ada@example.com")
            _ = try browser.get("/account/login")
            let login = try browser.post("/account/login", ["email": "ada@example.com", "password": Self.password])
            #expect(login.status == 303 && login.header("Location") == "/account")
            // The account page sends the browser back to the handoff.
            let home = try browser.get("/account")
            #expect(home.status == 303 && home.header("Location") == path, "\(home.headers)")
            let code = try confirm(browser, server, path: path)
            #expect(try browser.get("/account").status == 200, "the cookie is spent")

            let session = try exchange(server, code: code, verifier: verifier)
            #expect(session.status == 200, "\(session.text)")
            let token = try #require(session.sessionToken)
            let me = try server.app("GET", "auth/session", token: token)
            #expect(me.status == 200 && me.text.contains("ada@example.com"))
            // Once.
            let again = try exchange(server, code: code, verifier: verifier)
            #expect(again.status == 400 && again.errorCodes == ["invalid_handoff"], "\(again.text)")
            // The page of a used handoff is gone; nothing of it reaches the log.
            #expect(try browser.get(path).status == 410)
            let log = server.log.lines.joined()
            #expect(!log.contains(code) && !log.contains(path.split(separator: "/").last.map(String.init) ?? "-"))
        }
    }

    @Test(
        "another handoff's verifier spends the code; an expired code or page is refused; refusing sends error=access_denied"
    )
    func verifierAndTime() throws {
        try withAccounts(.sqlite) { server in
            let browser = Browser(port: server.port)
            try signIn(browser, server)
            let mine = try Self.pkce()
            let theirs = try Self.pkce()
            let path = try pagePath(try begin(server, challenge: mine.challenge), port: server.port)
            let code = try confirm(browser, server, path: path)
            let wrong = try exchange(server, code: code, verifier: theirs.verifier)
            #expect(wrong.status == 400 && wrong.errorCodes == ["invalid_handoff"])
            let right = try exchange(server, code: code, verifier: mine.verifier)
            #expect(right.status == 400, "a wrong verifier spends the code")

            let late = try pagePath(try begin(server, challenge: mine.challenge), port: server.port)
            let lateCode = try confirm(browser, server, path: late)
            server.clock.advance(by: 121)
            #expect(try exchange(server, code: lateCode, verifier: mine.verifier).status == 400)

            let stale = try pagePath(try begin(server, challenge: mine.challenge), port: server.port)
            server.clock.advance(by: 601)
            #expect(try browser.get(stale).status == 410)

            let refused = try pagePath(try begin(server, challenge: mine.challenge), port: server.port)
            _ = try browser.get(refused)
            let denied = try browser.post(refused, ["decision": "deny"])
            let back = try wayBack(denied)
            #expect(
                back.query["error"] == "access_denied" && back.query["state"] == "state-123"
                    && back.query["code"] == nil)
            #expect(try browser.get(refused).status == 410)
        }
    }

    @Test(
        "a handoff link followed from another site is not remembered, and one gone is forgotten: the account page does not loop to it"
    )
    func strangersHandoffs() throws {
        try withAccounts(.sqlite) { server in
            let (_, challenge) = try Self.pkce()
            let path = try pagePath(try begin(server, challenge: challenge, device: "your iPhone"), port: server.port)
            // A stranger's link, followed from their site by a signed-out browser.
            let victim = Browser(port: server.port)
            let followed = try victim.get(path, headers: [("Sec-Fetch-Site", "cross-site")])
            #expect(followed.status == 303, "\(followed.headers)")
            #expect(!victim.cookies.keys.contains { $0.contains("handoff") }, "\(victim.cookies)")
            try signIn(victim, server)
            #expect(try victim.get("/account").status == 200, "no handoff greets the person at sign-in")

            // Remembered from the app's own opening, then expired: the 410 clears the cookie.
            let late = Browser(port: server.port)
            #expect(try late.get(path).status == 303)
            #expect(late.cookies.keys.contains { $0.contains("handoff") }, "\(late.cookies)")
            server.clock.advance(by: 601)
            try signIn(late, server)
            let sent = try late.get("/account")
            #expect(sent.status == 303 && sent.header("Location") == path, "\(sent.headers)")
            #expect(try late.get(path).status == 410)
            #expect(!late.cookies.keys.contains { $0.contains("handoff") }, "\(late.cookies)")
            #expect(try late.get("/account").status == 200)
        }
    }

    @Test("a confirmation without the page's CSRF token, or signed out, confirms nothing")
    func forgedConfirmation() throws {
        try withAccounts(.sqlite) { server in
            let browser = Browser(port: server.port)
            try signIn(browser, server)
            let (_, challenge) = try Self.pkce()
            let path = try pagePath(try begin(server, challenge: challenge), port: server.port)
            // Another site's form: no token from the page, another origin.
            browser.origin = "https://evil.example"
            let forged = try browser.post(path, ["decision": "allow"], csrf: "not-the-token")
            #expect(forged.status == 403, "\(forged.status)")
            browser.origin = "http://127.0.0.1:\(server.port)"
            let stranger = Browser(port: server.port)
            _ = try stranger.get("/account/login")
            let signedOut = try stranger.post(path, ["decision": "allow"])
            #expect(signedOut.status == 303 && signedOut.header("Location") == "/account/login")
            // Still waiting: the owner can confirm it.
            #expect(try browser.get(path).status == 200)
        }
    }

    @Test("only an app scheme or a loopback URL with a port is a way back; S256 only; a device name without tricks")
    func requestChecks() throws {
        try withAccounts(.sqlite) { server in
            let (_, challenge) = try Self.pkce()
            for accepted in [
                "com.example.books://signed-in", "com.example.books:/oauth", "http://127.0.0.1:53123/callback",
                "http://[::1]:8080/cb?x=1",
            ] {
                let answer = try begin(server, challenge: challenge, redirect: accepted)
                #expect(answer.status == 200, "\(accepted): \(answer.text)")
            }
            for refused in [
                "http://127.0.0.1.evil.example:80/cb", "http://evil.example@127.0.0.1:8080/cb",
                "http://127.0.0.1:8080@evil.example/cb", "com.example.books://signed-in#fragment",
                "https://evil.example/cb", "myapp://signed-in", "microsoft-edge:https://evil.example/cb",
                "x-safari-https://evil.example/cb", "googlechromes://evil.example/cb", "webcal://evil.example/cal",
                "firefox://open-url?url=https://evil.example", ".com.example://cb", "com..example://cb",
                "http://localhost:8080/cb", "http://127.0.0.1/cb", "http://127.0.0.1:0/cb", "javascript:alert(1)",
                "data:text/html,hi", "JAVASCRIPT:alert(1)", "//evil.example/cb", "myapp ://x", "", "http://[::1]/cb",
                "http://127.0.0.2:8080/cb",
            ] {
                let answer = try begin(server, challenge: challenge, redirect: refused)
                #expect(answer.status == 400, "\(refused): \(answer.text)")
                #expect(answer.text.contains("redirect_uri"), "\(refused)")
            }
            #expect(try begin(server, challenge: challenge, method: "plain").errorCodes == ["invalid"])
            #expect(try begin(server, challenge: "short").status == 400)
            #expect(try begin(server, challenge: challenge, device: "Ada\u{202E}enohPi").status == 400)
            #expect(try begin(server, challenge: challenge, device: "").status == 400)
            #expect(try begin(server, challenge: challenge, state: "has space").status == 400)
            let missing = try server.app("POST", "auth/handoff", json: [:])
            #expect(
                missing.status == 400 && missing.errorCodes.allSatisfy { $0 == "required" }
                    && missing.errorCodes.count == 5)
        }
    }

    @Test("wrong codes cost failed sign-ins: past the budget even a right one waits")
    func budget() throws {
        var limits = RateLimitPolicy()
        _ = limits.set("failed-login-per-address", to: RateLimit(3, per: 600))
        try withAccounts(.sqlite, rateLimits: limits) { server in
            let browser = Browser(port: server.port)
            try signIn(browser, server)
            let (verifier, challenge) = try Self.pkce()
            let path = try pagePath(try begin(server, challenge: challenge), port: server.port)
            let code = try confirm(browser, server, path: path)
            for _ in 0..<3 {
                #expect(try exchange(server, code: try SecretToken.generate(), verifier: verifier).status == 400)
            }
            let spent = try exchange(server, code: code, verifier: verifier)
            #expect(spent.status == 400 && spent.errorCodes == ["too_many_login_attempts"], "\(spent.text)")
            #expect(spent.header("Retry-After") != nil)
        }
    }

    @Test("one code exchanged at two replicas at the same instant signs in once")
    func twoReplicas() throws {
        try withAccounts(.postgres) { first in
            try withAccounts(.postgres, database: first.url) { second in
                second.clock.advance(by: first.clock.now().timeIntervalSince(second.clock.now()))
                let browser = Browser(port: first.port)
                try signIn(browser, first)
                let (verifier, challenge) = try Self.pkce()
                let path = try pagePath(try begin(first, challenge: challenge), port: first.port)
                let code = try confirm(browser, first, path: path)
                let database = try first.url.open()
                defer { database.close() }
                let lock = try TableLock(first.url, table: "handoffs")
                let statuses = LockedBox<[Int]>([])
                let group = DispatchGroup()
                for server in [first, second] {
                    DispatchQueue.global().async(group: group) {
                        let status = (try? exchange(server, code: code, verifier: verifier))?.status ?? -1
                        statuses.mutate { $0.append(status) }
                    }
                }
                let lined = try waitForLockWaiters(2, in: database)
                lock.release()
                #expect(lined)
                #expect(group.wait(timeout: .now() + 30) == .success)
                #expect(statuses.value.sorted() == [200, 400], "\(statuses.value)")
            }
        }
    }
}
