import Foundation
import HomeportServer
import HomeportStorage
import HomeportTestSupport
import Testing

@Suite("Session tokens on the app door and the API prefix", .tags(.postgres))
struct SessionTokenTests {
    @Test(
        "a login token opens app-info; the same value as a cookie does not; logout ends it", arguments: Backend.allCases
    )
    func tokenLifecycle(backend: Backend) throws {
        try withAccounts(backend) { server in
            let token = try server.signIn("ada@example.com")
            let info = try server.appInfo(token)
            #expect(info.status == 200)
            #expect(info.header("Cache-Control") == "no-store")
            let features = info.jsonObject?["features"] as? [String] ?? []
            // Every capability the server offers, the push routes and the in-app stream included.
            #expect(
                features == ["server-connection-identity", "session-token", "push-server-id", "notifications-stream"])
            #expect(info.jsonObject?["instanceId"] as? String != nil)
            #expect(info.jsonObject?["protocolVersion"] as? Int == 1)

            // The same value as a cookie, with no header: refused, with the body a dead token gets.
            let asCookie = try RawHTTP.request(
                port: server.port, path: "/api/v1/app-info",
                headers: [("Cookie", "homeport_session=\(token); sessionid=\(token)")])
            let missing = try server.appInfo(nil)
            let bogus = try server.appInfo(token.withFirstCharacterChanged)
            #expect(asCookie.status == 401 && missing.status == 401 && bogus.status == 401)
            #expect(asCookie.body == missing.body && bogus.body == missing.body, "a dead token never says why")

            let logout = try server.app("DELETE", "auth/session", token: token)
            #expect(logout.status == 401)
            #expect((logout.jsonObject?["meta"] as? [String: Any])?["is_authenticated"] as? Bool == false)
            #expect(try server.appInfo(token).status == 401)
            #expect(try server.app("GET", "auth/session", token: token).status == 410)
        }
    }

    @Test("a password change rotates the changer's token and ends every other session", arguments: Backend.allCases)
    func passwordChangeRotates(backend: Backend) throws {
        try withAccounts(backend) { server in
            let phone = try server.signIn("ada@example.com")
            let tablet = try server.signIn("ada@example.com")
            let other = try server.signIn("bob@example.com")
            #expect(phone != tablet)
            let change = try server.app(
                "POST", "account/password/change", token: phone,
                json: ["current_password": "correct horse battery", "new_password": "a new long password"])
            #expect(change.status == 200)
            let rotated = try #require(change.sessionToken)
            #expect(rotated != phone)
            #expect(try server.appInfo(rotated).status == 200)
            #expect(try server.appInfo(phone).status == 401)
            #expect(try server.appInfo(tablet).status == 401)
            #expect(try server.app("GET", "auth/session", token: phone).status == 410)
            #expect(try server.appInfo(other).status == 200, "another person's session is untouched")
            // The new password works and the old one does not.
            #expect(
                try server.app(
                    "POST", "auth/login", json: ["email": "ada@example.com", "password": "correct horse battery"]
                ).status == 400)
            #expect(
                try server.app(
                    "POST", "auth/login", json: ["email": "ada@example.com", "password": "a new long password"]
                ).status == 200)
        }
    }

    @Test("a wrong current password or a weak new one changes nothing")
    func passwordChangeRefusals() throws {
        try withAccounts(.sqlite) { server in
            let token = try server.signIn("ada@example.com")
            let wrong = try server.app(
                "POST", "account/password/change", token: token,
                json: ["current_password": "not it at all", "new_password": "a new long password"])
            #expect(wrong.status == 400)
            #expect(wrong.errorCodes == ["enter_current_password"])
            let weak = try server.app(
                "POST", "account/password/change", token: token,
                json: ["current_password": "correct horse battery", "new_password": "short"])
            #expect(weak.status == 400)
            #expect(weak.errorCodes == ["password_too_short"])
            #expect(try server.appInfo(token).status == 200)
            let anonymous = try server.app(
                "POST", "account/password/change",
                json: ["current_password": "correct horse battery", "new_password": "a new long password"])
            #expect(anonymous.status == 401)
        }
    }

    @Test("no value stored in the sessions table works as a token", arguments: Backend.allCases)
    func storedValuesAreNotTokens(backend: Backend) throws {
        try withAccounts(backend) { server in
            let token = try server.signIn("ada@example.com")
            _ = try server.signIn("bob@example.com")
            let rows = try server.application.database.execute("SELECT * FROM sessions")
            #expect(rows.count == 2)
            var candidates: Set<String> = []
            for row in rows {
                for value in row.values {
                    if case .text(let text) = value { candidates.insert(text) }
                }
            }
            #expect(!candidates.contains(token))
            for candidate in candidates {
                #expect(try server.appInfo(candidate).status == 401, "\(candidate)")
                #expect(try server.app("GET", "auth/session", token: candidate).status != 200)
            }
            #expect(try server.appInfo(token).status == 200)
        }
    }

    @Test("sessions live their fixed lifetime and no longer")
    func expiry() throws {
        try withAccounts(.sqlite) { server in
            let token = try server.signIn("ada@example.com")
            server.clock.advance(by: 364 * 86400)
            #expect(try server.appInfo(token).status == 200)
            server.clock.advance(by: 2 * 86400)
            #expect(try server.appInfo(token).status == 401)
            #expect(try server.app("GET", "auth/session", token: token).status == 410)
        }
    }

    @Test("logging in while signed in is 409; signing up with a taken address is 400 and changes nothing")
    func conflicts() throws {
        try withAccounts(.sqlite) { server in
            let token = try server.signIn("ada@example.com")
            let again = try server.app(
                "POST", "auth/login", token: token,
                json: ["email": "ada@example.com", "password": "correct horse battery"])
            #expect(again.status == 409)
            let taken = try server.app(
                "POST", "auth/signup", json: ["email": "ADA@example.com", "password": "something else entirely"])
            #expect(taken.status == 400)
            #expect(taken.errorCodes == ["email_taken"])
            let count = try server.application.database.execute("SELECT COUNT(*) AS n FROM users").first?.int("n")
            #expect(count == 1)
        }
    }

    @Test(
        "bad bodies are 400 with the field named, and change nothing",
        arguments: [
            ("{bad json", "invalid", nil), (#"{"email":"a@example.com"}"#, "required", "password"),
            (#"{"email":"not-an-address","password":"long enough pw"}"#, "invalid", "email"),
            (#"{"email":"a@example.com","password":7}"#, "invalid", "password"),
        ] as [(String, String, String?)])
    func badBodies(body: String, code: String, param: String?) throws {
        try withAccounts(.sqlite) { server in
            for path in ["auth/signup", "auth/login"] {
                let response = try RawHTTP.request(
                    port: server.port, method: "POST", path: "/_allauth/app/v1/" + path,
                    headers: [("Content-Type", "application/json")], body: Data(body.utf8))
                #expect(response.status == 400)
                let error = (response.jsonObject?["errors"] as? [[String: Any]])?.first
                #expect(error?["code"] as? String == code)
                #expect(error?["param"] as? String == param)
            }
            let count = try server.application.database.execute("SELECT COUNT(*) AS n FROM users").first?.int("n")
            #expect(count == 0)
        }
    }

    @Test(
        "app-info omits instanceId, and still answers 200, when the identity cannot be read",
        arguments: Backend.allCases)
    func appInfoWithoutIdentity(backend: Backend) throws {
        try withAccounts(backend) { server in
            let token = try server.signIn("ada@example.com")
            try server.application.database.execute("DROP TABLE server_identity")
            let info = try server.appInfo(token)
            #expect(info.status == 200)
            #expect(info.jsonObject?["instanceId"] == nil)
            #expect(!info.text.contains("instanceId"))
            #expect((info.jsonObject?["features"] as? [String])?.contains("server-connection-identity") == true)
        }
    }

    @Test("no password or token reaches the log")
    func nothingSecretLogged() throws {
        try withAccounts(.sqlite) { server in
            let token = try server.signIn("ada@example.com", "very secret words")
            _ = try server.appInfo(token)
            _ = try server.app(
                "POST", "account/password/change", token: token,
                json: ["current_password": "very secret words", "new_password": "other secret words"])
            _ = try server.app("POST", "auth/password/request", json: ["email": "ada@example.com"])
            let key = try #require(server.mailer.resetKey(for: "ada@example.com"))
            _ = try RawHTTP.request(port: server.port, path: "/account/password/reset/key/\(key)")
            let log = server.log.lines.joined()
            #expect(!log.contains("secret words"))
            #expect(!log.contains(token))
            #expect(!log.contains(key))
            #expect(log.contains("GET /account/password/reset/key/***"))
        }
    }
}
