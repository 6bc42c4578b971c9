import Foundation
import HomeportServer
import HomeportStorage
import HomeportTestSupport
import Testing

/// Deleting an account (app door, web door, `users delete`): everything that was its own goes in
/// one transaction, its tokens die, its address can sign up again; a sign-in racing the deletion
/// never leaves a session behind.
@Suite("Deleting an account", .tags(.process, .postgres, .browser))
struct AccountDeletionTests {
    static let push = PushSettings(topic: "net.example.books")
    static let device = String(repeating: "ab", count: 32)

    /// Rows of `table` that belong to the account `id` (by `user_id`).
    func rows(_ server: AccountsHarness, _ table: String, user id: Int64) throws -> Int64 {
        try server.application.database.execute("SELECT COUNT(*) AS n FROM \(table) WHERE user_id = $1", [.integer(id)])
            .first?.int("n") ?? -1
    }

    func accountID(_ server: AccountsHarness, _ email: String) throws -> Int64? {
        try server.application.database.execute("SELECT id FROM users WHERE email = $1", [.text(email)]).first?.int(
            "id")
    }

    @Test(
        "deleting takes every session, device, queued push, mute, notification, reset key and queued mail, and nothing of anyone else's; the address signs up again",
        arguments: Backend.allCases)
    func deletesEverything(backend: Backend) throws {
        try withAccounts(backend, push: Self.push) { server in
            let first = try server.signIn("ada@example.com")
            let second = try server.signIn("ada@example.com")
            let bo = try server.signIn("bo@example.com")
            let ada = try #require(try accountID(server, "ada@example.com"))
            let boID = try #require(try accountID(server, "bo@example.com"))
            for (token, device) in [(first, Self.device), (bo, String(repeating: "cd", count: 32))] {
                #expect(
                    try server.app(
                        "POST", "/api/v1/push/devices", token: token, json: ["token": device, "environment": "sandbox"]
                    ).status == 200)
                #expect(try server.app("PUT", "/api/v1/notifications/mutes/chat:1", token: token).status == 204)
            }
            for user in [ada, boID] {
                try server.application.push.notify(
                    ProductNotification(code: "homeport/core:push.test", title: "Hello"), to: user)
            }
            #expect(try server.app("POST", "auth/password/request", json: ["email": "ada@example.com"]).status == 200)
            let resetKey = try #require(server.mailer.resetKey(for: "ada@example.com"))
            let stream = try RawHTTP.connect(port: server.port, timeout: 10)
            defer { close(stream) }
            RawHTTP.send(
                stream, "GET /api/v1/notifications/stream HTTP/1.1\r\nHost: x\r\nX-Session-Token: \(second)\r\n\r\n")
            let reader = StreamReader(fd: stream)
            #expect(reader.wait(for: ": connected"))

            // A wrong password, or none, changes nothing.
            let wrong = try server.app("POST", "account/delete", token: first, json: ["password": "not it at all"])
            #expect(wrong.status == 400 && wrong.errorCodes == ["incorrect_password"], "\(wrong.text)")
            let empty = try server.app("POST", "account/delete", token: first, json: ["password": ""])
            #expect(empty.status == 400 && empty.errorCodes == ["required"], "\(empty.text)")
            #expect(try server.app("POST", "account/delete", json: ["password": "correct horse battery"]).status == 401)
            #expect(try server.appInfo(first).status == 200)

            let deleted = try server.app(
                "POST", "account/delete", token: first, json: ["password": "correct horse battery"])
            #expect(deleted.status == 200, "\(deleted.text)")
            #expect((deleted.jsonObject?["meta"] as? [String: Any])?["is_authenticated"] as? Bool == false)
            for token in [first, second] { #expect(try server.appInfo(token).status == 401) }
            #expect(try accountID(server, "ada@example.com") == nil)
            for table in ["sessions", "push_devices", "notification_mutes", "notifications", "password_resets"] {
                #expect(try rows(server, table, user: ada) == 0, "\(table)")
                if table != "password_resets" {
                    #expect(try rows(server, table, user: boID) >= 1, "bo's \(table) stay")
                }
            }
            let outbox = try server.application.database.execute(
                "SELECT device_token FROM push_outbox"
            ).compactMap { $0.string("device_token") }
            #expect(!outbox.contains(Self.device) && outbox.contains(String(repeating: "cd", count: 32)), "\(outbox)")
            #expect(reader.wait(for: "\r\n0\r\n\r\n", timeout: 5) || reader.closed, "the stream ended")
            let reset = try server.app(
                "POST", "auth/password/reset", json: ["key": resetKey, "password": "a brand new password"])
            #expect(reset.status == 400, "the reset key went with the account")
            #expect(try server.appInfo(bo).status == 200)

            // The address is free again: a new account, with nothing of the old one's.
            let again = try server.signIn("ada@example.com", "another good password")
            let newID = try #require(try accountID(server, "ada@example.com"))
            #expect(newID != ada)
            #expect(try rows(server, "notifications", user: newID) == 0)
            #expect(try server.appInfo(again).status == 200)
        }
    }

    @Test(
        "a sign-in whose password check overlaps the deletion gets no session that outlives it",
        arguments: Backend.allCases)
    func raceWithLogin(backend: Backend) throws {
        let hasher = GatedHasher()
        try withAccounts(backend, hasher: hasher) { server in
            let token = try server.signIn("ada@example.com")
            let ada = try #require(try accountID(server, "ada@example.com"))
            hasher.arm()
            let login = LockedBox<RawResponse?>(nil)
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                login.value = try? server.app(
                    "POST", "auth/login", json: ["email": "ada@example.com", "password": "correct horse battery"])
                done.signal()
            }
            #expect(hasher.waitUntilHeld(), "the sign-in reached its password check")
            // The operator deletes the account while the sign-in's check is under way.
            #expect(try server.application.accounts.deleteAccount(email: "ada@example.com"))
            hasher.open()
            done.wait()
            let answer = try #require(login.value)
            #expect(answer.status != 200, "\(answer.text)")
            if let late = answer.sessionToken { #expect(try server.appInfo(late).status == 401) }
            #expect(try rows(server, "sessions", user: ada) == 0)
            #expect(try server.appInfo(token).status == 401)
        }
    }

    @Test("the web door deletes after the password, clears the cookie, and the operator's users delete needs --yes")
    func webDoorAndOperator() throws {
        try withAccounts(.sqlite) { server in
            let browser = Browser(port: server.port)
            _ = try browser.get("/account/signup")
            _ = try browser.post(
                "/account/signup", ["email": "ada@example.com", "password": "correct horse battery", "website": ""])
            #expect(try browser.get("/account").text.contains("/account/delete"))
            let form = try browser.get("/account/delete")
            #expect(form.status == 200 && form.text.contains("ada@example.com"))
            let wrong = try browser.post("/account/delete", ["password": "not the password", "website": ""])
            #expect(wrong.status == 400 && wrong.text.contains("Incorrect password"), "\(wrong.status)")
            #expect(try accountID(server, "ada@example.com") != nil)
            // Without the form's CSRF token, nothing happens.
            let forged = try browser.post(
                "/account/delete", ["password": "correct horse battery", "website": ""], csrf: "forged")
            #expect(forged.status == 403)
            #expect(try accountID(server, "ada@example.com") != nil)
            _ = try browser.get("/account/delete")
            let deleted = try browser.post("/account/delete", ["password": "correct horse battery", "website": ""])
            #expect(deleted.status == 200 && deleted.text.contains("deleted"), "\(deleted.text)")
            #expect(browser.cookies["homeport_session"] == nil)
            #expect(try accountID(server, "ada@example.com") == nil)
            #expect(try browser.get("/account").status == 303)
        }
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let database = "sqlite:" + data.file("h.sqlite")
        let server = try ServerProcess(serve: [
            "--database", database, "--signup", "open", "--password-iterations", "1000",
        ])
        defer { server.stop() }
        let signup = try RawHTTP.request(
            port: server.port, method: "POST", path: "/_allauth/app/v1/auth/signup",
            headers: [("Content-Type", "application/json")],
            body: Data(#"{"email":"bo@example.com","password":"correct horse battery"}"#.utf8))
        let token = try #require(signup.sessionToken)
        let unconfirmed = try ServerProcess.run(["users", "delete", "bo@example.com", "--database", database])
        #expect(unconfirmed.status == 3 && unconfirmed.error.contains("--yes"))
        #expect(
            try ServerProcess.run(["users", "delete", "nobody@example.com", "--yes", "--database", database]).status
                == 1)
        let done = try ServerProcess.run(["users", "delete", "BO@example.com", "--yes", "--database", database])
        #expect(done.status == 0, "\(done.error)")
        // Another process deleted it: this server's cache lets the token go within its second.
        usleep(1_100_000)
        #expect(
            try RawHTTP.request(port: server.port, path: "/api/v1/app-info", headers: [("X-Session-Token", token)])
                .status == 401)
    }
}
