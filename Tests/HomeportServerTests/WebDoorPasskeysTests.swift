import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// Passkeys at the web door, through its forms as the pages' script posts them (Chromium runs
/// the same pages with its virtual authenticator in interop/browser/webdoor.py --passkeys).
@Suite("The web door: passkeys through its forms")
struct WebDoorPasskeysTests {
    static let url = "https://books.example.net"
    static let password = "correct horse battery"

    private func browser(_ server: AccountsHarness) -> Browser {
        let browser = Browser(port: server.port)
        browser.origin = Self.url
        return browser
    }

    /// A credential as the pages' script puts it in its form's `credential` field.
    static func formText(_ credential: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: credential), as: UTF8.self)
    }

    private func json(_ answer: RawResponse) throws -> [String: Any] {
        try #require(answer.jsonObject, "\(answer.status) \(answer.text)")
    }

    /// Signs `email` up at the web door and adds a passkey of `authenticator` from the passkeys page.
    private func withPasskey(_ server: AccountsHarness, _ authenticator: SoftAuthenticator) throws -> Browser {
        let browser = browser(server)
        _ = try browser.get("/account/signup")
        #expect(
            try browser.post("/account/signup", ["email": "ada@example.com", "password": Self.password]).status == 303)
        let page = try browser.get("/account/passkeys")
        #expect(page.status == 200 && page.text.contains("No passkeys yet."), "\(page.text)")
        let wrong = try browser.post("/account/passkeys/options", ["password": "not it", "website": ""])
        #expect(wrong.status == 400 && wrong.text.contains("That is not your password."), "\(wrong.text)")
        let options = try json(
            try browser.post("/account/passkeys/options", ["password": Self.password, "website": ""]))
        let credential = try authenticator.register(options, origin: Self.url)
        let text = try Self.formText(credential)
        let added = try browser.post("/account/passkeys/add", ["name": "Laptop", "credential": text, "website": ""])
        // The first second factor: its recovery codes, shown this once.
        #expect(added.status == 200 && added.text.contains("The passkey was added"), "\(added.text)")
        #expect(added.text.components(separatedBy: "class=\"recovery-code\"").count == 11)
        let listed = try browser.get("/account/passkeys")
        #expect(listed.text.contains("Laptop"))
        return browser
    }

    /// The sign-in page's passkey ceremony: the options (and the cookie they set), then the answer.
    private func passkeySignIn(
        _ browser: Browser, _ authenticator: SoftAuthenticator, keepCookie: Bool = true,
        change: (inout [String: Any]) -> Void = { _ in }
    ) throws -> RawResponse {
        _ = try browser.get("/account/login")
        let options = try json(try browser.post("/account/passkey/options", ["website": ""]))
        if !keepCookie { browser.cookies = browser.cookies.filter { !$0.key.contains("webauthn") } }
        var credential = try authenticator.assert(options, origin: Self.url)
        change(&credential)
        let text = try Self.formText(credential)
        return try browser.post("/account/passkey/login", ["credential": text, "website": ""])
    }

    @Test(
        "the sign-in page offers passkeys (its script, this origin's only, and in the address field's autofill) where the server has a relying party"
    )
    func page() throws {
        try withAccounts(.sqlite, publicURL: Self.url) { server in
            let login = try browser(server).get("/account/login")
            #expect(
                login.text.contains("Sign in with a passkey")
                    && login.text.contains(#"<script src="/account/passkeys.js"></script>"#))
            #expect(login.text.contains(#"autocomplete="username webauthn""#), "conditional mediation")
            #expect(!login.text.contains("<script>"), "no inline script")
            #expect(login.header("Content-Security-Policy") == WebDoor.passkeyPolicy)
            let script = try browser(server).get("/account/passkeys.js")
            #expect(script.status == 200 && script.text.contains("navigator.credentials.get"))
            #expect(script.header("Content-Type") == "text/javascript; charset=utf-8")
        }
        try withAccounts(.sqlite, publicURL: "http://192.168.1.5:8080") { server in
            let login = try Browser(port: server.port).get("/account/login")
            #expect(
                !login.text.contains("passkey") && !login.text.contains("webauthn")
                    && login.header("Content-Security-Policy")?.contains("script-src") != true)
        }
    }

    @Test(
        "a passkey added from the passkeys page signs in from the sign-in page; its ceremony cookie is bound, short and HttpOnly",
        arguments: [SoftAuthenticator.Algorithm.es256, .edDSA])
    func signIn(algorithm: SoftAuthenticator.Algorithm) throws {
        try withAccounts(.sqlite, publicURL: Self.url) { server in
            let authenticator = try SoftAuthenticator(algorithm)
            let browser = try withPasskey(server, authenticator)
            #expect(try browser.post("/account/logout", ["website": ""]).status == 303)
            _ = try browser.get("/account/login")
            let options = try browser.post("/account/passkey/options", ["website": ""])
            let cookie = try #require(options.headers.first { $0.name.lowercased() == "set-cookie" }?.value)
            #expect(cookie.hasPrefix("__Host-homeport_webauthn="), "\(cookie)")
            for attribute in ["HttpOnly", "SameSite=Lax", "Max-Age=300", "Secure", "Path=/"] {
                #expect(cookie.contains(attribute), "\(attribute): \(cookie)")
            }
            #expect(options.header("Cache-Control") == "no-store")
            let signed = try passkeySignIn(browser, authenticator)
            #expect(signed.status == 303 && signed.header("Location") == "/account", "\(signed.text)")
            let home = try browser.get("/account")
            #expect(home.text.contains("ada@example.com") && home.text.contains("Sign out"), "signed in")
        }
    }

    @Test(
        "refused at the web door: without its ceremony cookie, another browser's cookie, garbage, a forged form, a clone"
    )
    func refusals() throws {
        try withAccounts(.sqlite, publicURL: Self.url) { server in
            let authenticator = try SoftAuthenticator(signCount: 7)
            let browser = try withPasskey(server, authenticator)
            #expect(try browser.post("/account/logout", ["website": ""]).status == 303)
            func refused(_ answer: RawResponse, _ why: String) {
                #expect(answer.status == 400 && answer.text.contains("That passkey could not sign you in."), "\(why)")
                #expect(answer.header("Location") == nil, "\(why)")
            }
            refused(try passkeySignIn(browser, authenticator, keepCookie: false), "no ceremony cookie")
            // Another browser's ceremony: its cookie, this browser's answer.
            let other = self.browser(server)
            _ = try other.get("/account/login")
            _ = try other.post("/account/passkey/options", ["website": ""])
            _ = try browser.get("/account/login")
            let mine = try json(try browser.post("/account/passkey/options", ["website": ""]))
            let answer = try authenticator.assert(mine, origin: Self.url)
            let text = try Self.formText(answer)
            refused(
                try other.post("/account/passkey/login", ["credential": text, "website": ""]),
                "another browser's cookie")
            refused(try passkeySignIn(browser, authenticator) { $0 = ["type": "public-key"] }, "garbage")
            _ = try browser.get("/account/login")
            #expect(try browser.post("/account/passkey/login", ["credential": "{", "website": ""]).status == 400)
            // A form from another site: the CSRF guard answers first, nothing is charged or signed.
            browser.origin = "https://evil.example.net"
            #expect(try browser.post("/account/passkey/options", ["website": ""]).status == 403)
            browser.origin = Self.url
            // A clone behind the counter.
            #expect(try passkeySignIn(browser, authenticator).status == 303)
            _ = try browser.get("/account")
            #expect(try browser.post("/account/logout", ["website": ""]).status == 303)
            authenticator.signCount = 2
            refused(try passkeySignIn(browser, authenticator), "a clone")
            // The honeypot.
            _ = try browser.get("/account/login")
            #expect(try browser.post("/account/passkey/options", ["website": "spam"]).status == 400)
        }
    }

    @Test(
        "an authenticator without a counter: its answer sent again with the same ceremony cookie finds the challenge used"
    )
    func replayWithoutCounter() throws {
        try withAccounts(.sqlite, publicURL: Self.url) { server in
            let authenticator = try SoftAuthenticator(signCount: 0)
            let browser = try withPasskey(server, authenticator)
            #expect(try browser.post("/account/logout", ["website": ""]).status == 303)
            _ = try browser.get("/account/login")
            let options = try json(try browser.post("/account/passkey/options", ["website": ""]))
            let ceremony = try #require(browser.cookies.first { $0.key.contains("webauthn") })
            let text = try Self.formText(try authenticator.assert(options, origin: Self.url))
            #expect(try browser.post("/account/passkey/login", ["credential": text, "website": ""]).status == 303)
            _ = try browser.get("/account")
            #expect(try browser.post("/account/logout", ["website": ""]).status == 303)
            _ = try browser.get("/account/login")
            browser.cookies[ceremony.key] = ceremony.value
            let replayed = try browser.post("/account/passkey/login", ["credential": text, "website": ""])
            #expect(replayed.status == 400 && replayed.text.contains("That passkey could not sign you in."))
        }
    }

    @Test("a password sign-in to an account with a passkey takes the passkey as its second step")
    func secondStep() throws {
        try withAccounts(.sqlite, publicURL: Self.url) { server in
            let authenticator = try SoftAuthenticator()
            let browser = try withPasskey(server, authenticator)
            #expect(try browser.post("/account/logout", ["website": ""]).status == 303)
            _ = try browser.get("/account/login")
            let first = try browser.post(
                "/account/login", ["email": "ada@example.com", "password": Self.password, "website": ""])
            #expect(first.status == 303 && first.header("Location") == "/account/2fa/authenticate", "\(first.text)")
            let step = try browser.get("/account/2fa/authenticate")
            #expect(step.text.contains("Use a passkey") && step.text.contains("recovery codes"), "\(step.text)")
            #expect(step.header("Content-Security-Policy") == WebDoor.passkeyPolicy)
            let options = try json(try browser.post("/account/2fa/webauthn/options", ["website": ""]))
            let allowed = (options["publicKey"] as? [String: Any])?["allowCredentials"] as? [[String: Any]]
            #expect(allowed?.count == 1)
            // Garbage first: the step again, with its error; then the passkey.
            let garbage = try browser.post("/account/2fa/webauthn", ["credential": "{}", "website": ""])
            #expect(garbage.status == 400 && garbage.text.contains("That passkey could not sign you in."))
            let fresh = try json(try browser.post("/account/2fa/webauthn/options", ["website": ""]))
            let text = try Self.formText(try authenticator.assert(fresh, origin: Self.url))
            let signed = try browser.post("/account/2fa/webauthn", ["credential": text, "website": ""])
            #expect(signed.status == 303 && signed.header("Location") == "/account", "\(signed.text)")
            #expect(try browser.get("/account").text.contains("Sign out"))
            // Nothing waits now: the options are refused.
            #expect(try browser.post("/account/2fa/webauthn/options", ["website": ""]).status == 409)
        }
    }

    @Test("the passkeys page: signed in only; rename and remove by their owner; removing asks for the password")
    func manage() throws {
        try withAccounts(.sqlite, publicURL: Self.url) { server in
            #expect(try browser(server).get("/account/passkeys").header("Location") == "/account/login")
            let authenticator = try SoftAuthenticator()
            let browser = try withPasskey(server, authenticator)
            #expect(
                try browser.post(
                    "/account/passkeys/rename", ["id": "1", "name": "Phone", "password": Self.password, "website": ""]
                ).status == 303)
            #expect(try browser.get("/account/passkeys").text.contains("Phone"))
            let unconfirmed = try browser.post(
                "/account/passkeys/rename", ["id": "1", "name": "Phone", "password": "nope", "website": ""])
            #expect(unconfirmed.status == 400 && unconfirmed.text.contains("That is not your password."))
            let empty = try browser.post(
                "/account/passkeys/rename", ["id": "1", "name": "  ", "password": Self.password, "website": ""])
            #expect(empty.status == 400)
            let wrong = try browser.post("/account/passkeys/remove", ["id": "1", "password": "nope", "website": ""])
            #expect(wrong.status == 400 && wrong.text.contains("That is not your password."))
            // Bob cannot touch ada's.
            let bob = self.browser(server)
            _ = try bob.get("/account/signup")
            _ = try bob.post("/account/signup", ["email": "bob@example.com", "password": Self.password])
            _ = try bob.get("/account/passkeys")
            #expect(
                try bob.post(
                    "/account/passkeys/rename", ["id": "1", "name": "Mine", "password": Self.password, "website": ""]
                ).status == 400)
            let bobs = try bob.post("/account/passkeys/remove", ["id": "1", "password": Self.password, "website": ""])
            #expect(bobs.status == 400 && bobs.text.contains("No passkey of yours"))
            #expect(
                try browser.post("/account/passkeys/remove", ["id": "1", "password": Self.password, "website": ""])
                    .status == 303)
            #expect(try browser.get("/account/passkeys").text.contains("No passkeys yet."))
        }
    }
}
