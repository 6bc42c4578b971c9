import Foundation
import HomeportCrypto
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

extension Browser {
    /// Signs up `email` at the web door.
    func signUp(_ email: String) throws {
        _ = try get("/account/signup")
        let signup = try post("/account/signup", ["email": email, "password": "correct horse battery", "website": ""])
        #expect(signup.status == 303)
    }

    /// Posts `subscription` as the notifications page's script does, with the page's token.
    func subscribe(_ subscription: WebPushStandIn.Subscription, csrf: String) throws -> RawResponse {
        try post(
            "/account/notifications",
            [
                "endpoint": subscription.endpoint, "p256dh": subscription.p256dh, "auth": subscription.auth,
                "website": "",
            ], csrf: csrf)
    }
}

/// The CSRF token the notifications page gives its script.
private func pageToken(_ page: RawResponse) throws -> String {
    let range = try #require(page.text.range(of: #"data-csrf=""#))
    return String(page.text[range.upperBound...].prefix { $0 != "\"" })
}

@Suite("The web door: notifications in this browser", .tags(.process, .interop, .browser))
struct WebDoorNotificationsTests {
    @Test("offered only where the server sends Web Push; the page runs this origin's scripts and no other")
    func page() throws {
        try withAccounts(.sqlite, push: try webPushSettings()) { server in
            let browser = Browser(port: server.port)
            #expect(try browser.get("/account/notifications").header("Location") == "/account/login")
            try browser.signUp("ada@example.com")
            #expect(try browser.get("/account").text.contains(#"<a href="/account/notifications">"#))
            let page = try browser.get("/account/notifications")
            #expect(page.status == 200)
            #expect(
                page.header("Content-Security-Policy")
                    == "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; script-src 'self'; "
                    + "connect-src 'self'; worker-src 'self'")
            let key = try #require(server.application.push.settings.webPushKey)
            #expect(page.text.contains(#"data-key="\#(key)""#))
            #expect(page.text.contains(#"<script src="/account/notifications.js"></script>"#))
            #expect(!page.text.contains("<script>"), "no inline script")
            for (path, needle) in [
                ("/account/notifications.js", "pushManager.subscribe"), ("/account/push-worker.js", "showNotification"),
            ] {
                let script = try browser.get(path)
                #expect(script.status == 200 && script.text.contains(needle))
                #expect(script.header("Content-Type") == "text/javascript; charset=utf-8")
                #expect(script.header("X-Content-Type-Options") == "nosniff")
            }
        }
        try withAccounts(.sqlite) { server in
            let browser = Browser(port: server.port)
            try browser.signUp("ada@example.com")
            #expect(!(try browser.get("/account").text.contains("/account/notifications")))
            let page = try browser.get("/account/notifications")
            #expect(page.status == 404 && page.text.contains("does not send notifications to browsers"))
        }
    }

    @Test(
        "the page's subscription gets the account's pushes, decrypted by the push service; bad input, a forged form, removal and sign-out"
    )
    func subscription() throws {
        let service = try WebPushStandIn()
        let subscription = try service.subscribe()
        try withAccounts(.sqlite, push: try webPushSettings(), clockStart: Date()) { server in
            let browser = Browser(port: server.port)
            try browser.signUp("ada@example.com")
            let token = try pageToken(try browser.get("/account/notifications"))
            let name = "webpush:" + Digest.sha256Hex(subscription.endpoint)

            // What an attacker's page or a broken script sends changes nothing.
            let forged = try browser.subscribe(subscription, csrf: "forged")
            #expect(forged.status == 403)
            browser.origin = "https://evil.example"
            #expect(try browser.subscribe(subscription, csrf: token).status == 403)
            browser.origin = "http://127.0.0.1:\(server.port)"
            var bad = subscription
            bad.endpoint = "ftp://push.example.net/x"
            let refused = try browser.subscribe(bad, csrf: token)
            #expect(refused.status == 400)
            #expect((refused.jsonObject?["error"] as? [String: Any])?["field"] as? String == "endpoint")
            bad = subscription
            bad.auth = "AAAA"
            #expect(try browser.subscribe(bad, csrf: token).status == 400)
            #expect(try server.registeredDevices().isEmpty)

            let answer = try browser.subscribe(subscription, csrf: token)
            #expect(answer.status == 200, "\(answer.text)")
            #expect(answer.jsonObject?["token"] as? String == name)
            #expect(try server.registeredDevices() == [name])
            try server.pushToAda("Your loan is ready")
            try server.drain()
            #expect(try eventually { try service.messages().delivered.count == 1 })
            let message = try #require(try service.messages().delivered.first)
            let instance = try server.application.identity.instanceID().description
            #expect((message.payload["homeport"] as? [String: Any])?["s"] as? String == instance)
            #expect(
                ((message.payload["aps"] as? [String: Any])?["alert"] as? [String: Any])?["title"] as? String
                    == "Your loan is ready")

            let removed = try browser.post(
                "/account/notifications/remove", ["endpoint": subscription.endpoint, "website": ""], csrf: token)
            #expect(removed.status == 204)
            #expect(try server.registeredDevices().isEmpty)

            #expect(try browser.subscribe(subscription, csrf: token).status == 200)
            _ = try browser.get("/account")
            #expect(try browser.post("/account/logout", [:]).status == 303)
            #expect(try server.registeredDevices().isEmpty, "signing out in the browser turns its notifications off")
        }
    }
}
