import Foundation
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

#if canImport(Glibc)
    import Glibc
#endif

private let deviceA = "aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899"
private let deviceB = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
private let pushOn = PushSettings(topic: "net.example.books")

extension AccountsHarness {
    /// Registers `device` for the token's account.
    func register(_ device: String, token: String, environment: String = "sandbox") throws -> RawResponse {
        try app("POST", "/api/v1/push/devices", token: token, json: ["token": device, "environment": environment])
    }

    /// The device tokens registered on the server.
    func registeredDevices() throws -> [String] {
        try application.database.execute("SELECT token FROM push_devices ORDER BY token").compactMap {
            $0.string(at: 0)
        }
    }

    /// The outbox's payloads, oldest first.
    func outbox() throws -> [(token: String, payload: PushPayload)] {
        try application.database.execute("SELECT device_token, payload FROM push_outbox ORDER BY id").map {
            ($0.string(at: 0) ?? "", try PushPayload(decoding: Data(($0.string(at: 1) ?? "").utf8)))
        }
    }

    /// Opens the in-app stream.
    func openStream(_ token: String, lastEventID: Int64? = nil) throws -> StreamReader {
        try openNotificationStream(port: port, token: token, lastEventID: lastEventID)
    }
}

/// Opens the in-app stream of the server on `port` with `token` and expects it to say it is
/// connected; the caller closes the reader's `fd`.
func openNotificationStream(port: Int, token: String, lastEventID: Int64? = nil) throws -> StreamReader {
    let fd = try RawHTTP.connect(port: port, timeout: 10)
    var head = "GET /api/v1/notifications/stream HTTP/1.1\r\nHost: x\r\nX-Session-Token: \(token)\r\n"
    if let lastEventID { head += "Last-Event-ID: \(lastEventID)\r\n" }
    RawHTTP.send(fd, head + "\r\n")
    let reader = StreamReader(fd: fd)
    #expect(reader.wait(for: ": connected"), "the stream opens")
    return reader
}

@Suite("Push registrations, catalogue, mutes and the payload", .tags(.postgres))
struct PushAPITests {
    @Test(
        "a device registers (hex, lowercased), unregisters idempotently, and moves to the account that registers it last",
        arguments: Backend.allCases)
    func registration(backend: Backend) throws {
        try withAccounts(backend, push: pushOn) { server in
            let ada = try server.signIn("ada@example.com")
            let bob = try server.signIn("bob@example.com")
            let registered = try server.register(deviceA.uppercased(), token: ada)
            #expect(registered.status == 200)
            #expect(registered.jsonObject?["token"] as? String == deviceA)
            #expect(try server.registeredDevices() == [deviceA])
            #expect(try server.register(deviceA, token: bob).status == 200)
            let owner = try server.application.database.execute(
                "SELECT u.email FROM push_devices d JOIN users u ON u.id = d.user_id"
            ).first?.string(at: 0)
            #expect(owner == "bob@example.com", "one row per token per server: the last account has it")
            #expect(try server.app("DELETE", "/api/v1/push/devices/\(deviceA)", token: ada).status == 204)
            #expect(
                try server.registeredDevices() == [deviceA], "another account's registration is not ada's to remove")
            for _ in 0..<2 {
                #expect(try server.app("DELETE", "/api/v1/push/devices/\(deviceA)", token: bob).status == 204)
            }
            #expect(try server.registeredDevices().isEmpty)
        }
    }

    @Test(
        "bad registrations are 400 naming the field, and change nothing",
        arguments: [
            (["token": "xyz", "environment": "sandbox"], "token"),
            (["token": "abc", "environment": "sandbox"], "token"),
            (["token": String(repeating: "a", count: 202), "environment": "sandbox"], "token"),
            (["environment": "sandbox"], "token"), (["token": deviceA, "environment": "staging"], "environment"),
            (["token": deviceA], "environment"), (["token": 42, "environment": "sandbox"], "token"),
        ] as [([String: any Sendable], String)])
    func badRegistrations(body: [String: any Sendable], field: String) throws {
        try withAccounts(.sqlite, push: pushOn) { server in
            let ada = try server.signIn("ada@example.com")
            let response = try server.app("POST", "/api/v1/push/devices", token: ada, json: body)
            #expect(response.status == 400)
            let error = response.jsonObject?["error"] as? [String: Any]
            #expect(error?["code"] as? String == "invalid_field")
            #expect(error?["field"] as? String == field)
            #expect(try server.registeredDevices().isEmpty)
            let noToken = try server.app(
                "POST", "/api/v1/push/devices", token: nil, json: ["token": deviceA, "environment": "sandbox"])
            #expect(noToken.status == 401)
        }
    }

    @Test(
        "a push waiting for a device goes when the device leaves the account: unregistered, taken by another account, signed out, let go past the cap, expired",
        arguments: Backend.allCases)
    func waitingPushesFollowTheDevice(backend: Backend) throws {
        var settings = pushOn
        settings.maxDevicesPerAccount = 2
        let deviceC = String(repeating: "c", count: 64)
        try withAccounts(backend, push: settings) { server in
            func notify(_ email: String) throws {
                try server.application.push.notify(
                    ProductNotification(code: ServerCatalogue.testCode, title: "For \(email)"), email: email)
            }
            func waiting() throws -> [String] {
                try server.outbox().map { "\($0.token.prefix(2)):\($0.payload.aps.alert?.title ?? "")" }.sorted()
            }
            let ada = try server.signIn("ada@example.com")
            let adaElsewhere = try server.signIn("ada@example.com")
            let bob = try server.signIn("bob@example.com")
            #expect(try server.register(deviceA, token: ada).status == 200)
            #expect(try server.register(deviceB, token: adaElsewhere).status == 200)
            try notify("ada@example.com")
            #expect(try waiting() == ["00:For ada@example.com", "aa:For ada@example.com"])
            // Unregistered: its push goes, even one a sender has claimed (so that a failure of it
            // does not bring it back); the other device's stays.
            try server.application.database.execute(
                "UPDATE push_outbox SET state = 'sending', claimed_by = 'a sender' WHERE device_token = $1",
                [.text(deviceA)])
            #expect(try server.app("DELETE", "/api/v1/push/devices/\(deviceA)", token: ada).status == 204)
            #expect(try waiting() == ["00:For ada@example.com"])
            // Taken by Bob (a phone signed in to another account): Ada's pushes for it go, Bob's come.
            #expect(try server.register(deviceA, token: ada).status == 200)
            try notify("ada@example.com")
            #expect(try server.register(deviceA, token: bob).status == 200)
            try notify("bob@example.com")
            #expect(try waiting() == ["00:For ada@example.com", "00:For ada@example.com", "aa:For bob@example.com"])
            // Signed out: the session's device goes, and its pushes.
            _ = try server.app("DELETE", "auth/session", token: adaElsewhere)
            #expect(try waiting() == ["aa:For bob@example.com"])
            // Let go past the cap of two: Bob's oldest device, and its push.
            server.clock.advance(by: 1)
            #expect(try server.register(deviceB, token: bob).status == 200)
            server.clock.advance(by: 1)
            #expect(try server.register(deviceC, token: bob).status == 200)
            #expect(try server.registeredDevices() == [deviceB, deviceC])
            #expect(try waiting().isEmpty)
            // Expired (a year on), and pruned at the next sign-in: Bob's devices go, and their pushes.
            try notify("bob@example.com")
            #expect(try waiting() == ["00:For bob@example.com", "cc:For bob@example.com"])
            _ = try server.signIn("cy@example.com")
            server.clock.advance(by: 366 * 86400)
            _ = try server.signIn("cy@example.com")  // a login, which prunes what expired
            #expect(try server.registeredDevices().isEmpty)
            #expect(try waiting().isEmpty)
        }
    }

    @Test("every way a session ends removes the registrations made through it", arguments: Backend.allCases)
    func endingSessionsDropsRegistrations(backend: Backend) throws {
        try withAccounts(backend, push: pushOn) { server in
            // Logout.
            var token = try server.signIn("ada@example.com")
            _ = try server.register(deviceA, token: token)
            let other = try server.signIn("ada@example.com")
            _ = try server.register(deviceB, token: other)
            _ = try server.app("DELETE", "auth/session", token: token)
            #expect(try server.registeredDevices() == [deviceB], "only the logged-out session's device went")
            // Password change: every session of the person ends, the changer's too (it gets a new one).
            token = try server.signIn("ada@example.com")
            _ = try server.register(deviceA, token: token)
            #expect(
                try server.app(
                    "POST", "account/password/change", token: token,
                    json: ["current_password": "correct horse battery", "new_password": "a brand new password"]
                ).status == 200)
            #expect(try server.registeredDevices().isEmpty)
            // Hold.
            token =
                try server.app(
                    "POST", "auth/login", json: ["email": "ada@example.com", "password": "a brand new password"]
                ).sessionToken ?? ""
            _ = try server.register(deviceA, token: token)
            #expect(try server.application.accounts.setApproval(.held, email: "ada@example.com"))
            #expect(try server.registeredDevices().isEmpty)
            // Reset.
            #expect(try server.application.accounts.setApproval(.approved, email: "ada@example.com"))
            token =
                try server.app(
                    "POST", "auth/login", json: ["email": "ada@example.com", "password": "a brand new password"]
                ).sessionToken ?? ""
            _ = try server.register(deviceA, token: token)
            _ = try server.app("POST", "auth/password/request", json: ["email": "ada@example.com"])
            let key = try #require(server.mailer.resetKey(for: "ada@example.com"))
            _ = try server.app("POST", "auth/password/reset", json: ["key": key, "password": "yet another password"])
            #expect(try server.registeredDevices().isEmpty)
        }
    }

    @Test(
        "the catalogue answers its content hash as the ETag, 304 to If-None-Match, the same on every installation with the same codes"
    )
    func catalogue() throws {
        let extra = [CatalogueCode(code: "books/loans:due", title: "A loan is due")]
        let first = try withAccounts(.sqlite, push: PushSettings(extraCodes: extra)) { server in
            let token = try server.signIn("ada@example.com")
            let answer = try server.app("GET", "/api/v1/notifications/catalogue", token: token)
            #expect(answer.status == 200)
            let version = try #require(answer.jsonObject?["version"] as? String)
            #expect(answer.header("ETag") == "\"\(version)\"")
            let codes = (answer.jsonObject?["codes"] as? [[String: Any]])?.compactMap { $0["code"] as? String }
            #expect(codes == ["books/loans:due", "homeport/core:push.test", "homeport/core:signup.waiting"])
            for tag in ["\"\(version)\"", "W/\"\(version)\"", "\"other\", \"\(version)\"", "*"] {
                let cached = try server.app(
                    "GET", "/api/v1/notifications/catalogue", token: token, headers: [("If-None-Match", tag)])
                #expect(cached.status == 304, "\(tag)")
                #expect(cached.body.isEmpty)
            }
            #expect(
                try server.app(
                    "GET", "/api/v1/notifications/catalogue", token: token, headers: [("If-None-Match", "\"old\"")]
                )
                .status == 200)
            #expect(try server.app("GET", "/api/v1/notifications/catalogue", token: nil).status == 401)
            return version
        }
        let second = try withAccounts(.postgres, push: PushSettings(extraCodes: extra)) { server in
            try server.app("GET", "/api/v1/notifications/catalogue", token: try server.signIn("bob@example.com"))
                .jsonObject?["version"] as? String
        }
        #expect(second == first, "another installation with the same codes answers the same version")
        #expect(ServerCatalogue().version != first, "other codes, another version")
    }

    @Test("mutes are per account and per thread; a muted thread gets no push but stays in the log")
    func mutes() throws {
        try withAccounts(.sqlite, push: pushOn) { server in
            let ada = try server.signIn("ada@example.com")
            let bob = try server.signIn("bob@example.com")
            _ = try server.register(deviceA, token: ada)
            #expect(try server.app("PUT", "/api/v1/notifications/mutes/chat:7", token: ada).status == 204)
            #expect(try server.app("PUT", "/api/v1/notifications/mutes/chat:7", token: ada).status == 204)
            #expect(try server.app("GET", "/api/v1/notifications/mutes", token: ada).text == #"{"threads":["chat:7"]}"#)
            #expect(try server.app("GET", "/api/v1/notifications/mutes", token: bob).text == #"{"threads":[]}"#)
            for bad in ["a%20b", "<x>", String(repeating: "a", count: 129), ".", ".."] {
                let response = try server.app("PUT", "/api/v1/notifications/mutes/\(bad)", token: ada)
                #expect(response.status == 400, "\(bad)")
                #expect((response.jsonObject?["error"] as? [String: Any])?["field"] as? String == "thread")
            }
            let push = server.application.push
            let muted = try push.notify(
                ProductNotification(code: ServerCatalogue.testCode, title: "Hi", thread: "chat:7"),
                email: "ada@example.com")
            #expect(muted.muted && muted.queued == 0)
            #expect(try server.outbox().isEmpty)
            let open = try push.notify(
                ProductNotification(code: ServerCatalogue.testCode, title: "Hi", thread: "chat:8"),
                email: "ada@example.com")
            #expect(open.queued == 1 && open.seq == muted.seq + 1)
            #expect(try server.app("DELETE", "/api/v1/notifications/mutes/chat:7", token: ada).status == 204)
            #expect(
                try push.notify(
                    ProductNotification(code: ServerCatalogue.testCode, title: "Hi", thread: "chat:7"),
                    email: "ada@example.com"
                )
                .queued == 1)
        }
    }

    @Test(
        "notifications and failed pushes are kept for the log's retention, then deleted; newer ones stay",
        arguments: Backend.allCases)
    func retention(backend: Backend) throws {
        try withAccounts(backend, push: pushOn) { server in
            let ada = try server.signIn("ada@example.com")
            _ = try server.register(deviceA, token: ada)
            let push = server.application.push
            let database = server.application.database
            try push.notify(ProductNotification(code: ServerCatalogue.testCode, title: "old"), email: "ada@example.com")
            server.clock.advance(by: 20 * 86400)
            try push.notify(
                ProductNotification(code: ServerCatalogue.testCode, title: "recent"), email: "ada@example.com")
            try database.execute("UPDATE push_outbox SET state = 'failed', last_error = 'BadTopic'")
            server.clock.advance(by: 11 * 86400)
            try server.application.retention.sweep()
            let titles = try database.execute("SELECT title FROM notifications").compactMap { $0.string(at: 0) }
            #expect(titles == ["recent"], "31 days old is past the 30 kept; 11 days old is not")
            #expect(try server.outbox().map(\.payload.aps.alert?.title) == ["recent"])
            // The stream resumes from what is left.
            let stream = try server.openStream(ada, lastEventID: 0)
            defer { close(stream.fd) }
            #expect(stream.wait(for: "recent"))
        }
    }

    @Test(
        "the payload is PROTOCOL §4's: s is the identity route's id, the thread is namespaced, mv is the catalogue's version",
        arguments: Backend.allCases)
    func payload(backend: Backend) throws {
        try withAccounts(backend, push: PushSettings(appDataKey: "officer", topic: "net.example.books")) { server in
            let ada = try server.signIn("ada@example.com")
            _ = try server.register(deviceA, token: ada)
            _ = try server.register(deviceB, token: ada, environment: "production")
            try server.application.push.notify(
                ProductNotification(
                    code: ServerCatalogue.testCode, title: "Turn ended", body: "Your move", thread: "chat:42",
                    objectID: 42), email: "ada@example.com")
            let identity = try RawHTTP.request(port: server.port, path: "/api/v1/server-identity")
            let idText = identity.jsonObject?["instanceId"] as? String
            let id = try #require(idText.flatMap { InstanceID($0) })
            let rows = try server.application.database.execute(
                "SELECT device_token, environment, topic, payload, apns_id FROM push_outbox ORDER BY device_token")
            #expect(rows.map { $0.string(at: 1) } == ["production", "sandbox"])
            #expect(rows.allSatisfy { $0.string(at: 2) == "net.example.books" })
            #expect(Set(rows.compactMap { $0.string(at: 4) }).count == 2, "one apns-id per push")
            let payload = try PushPayload(decoding: Data((rows.first?.string(at: 3) ?? "").utf8), appDataKey: "officer")
            #expect(payload.aps.alert == .init(title: "Turn ended", body: "Your move"))
            #expect(payload.aps.threadID == "\(id):chat:42")
            #expect(payload.aps.mutableContent == 1)
            #expect(
                payload.appData
                    == PushAppData(
                        s: id, c: ServerCatalogue.testCode, id: 42, mv: server.application.push.catalogue.version))
        }
    }

    @Test("a payload over 4096 bytes, an unknown code or a bad thread is refused when queued, and nothing is written")
    func refusals() throws {
        try withAccounts(.sqlite, push: pushOn) { server in
            let ada = try server.signIn("ada@example.com")
            _ = try server.register(deviceA, token: ada)
            let push = server.application.push
            #expect {
                try push.notify(
                    ProductNotification(
                        code: ServerCatalogue.testCode, title: "Long", body: String(repeating: "é", count: 2000),
                        thread: "chat:1"), email: "ada@example.com")
            } throws: { error in
                guard case .payloadTooLarge(let bytes) = error as? PushCenter.Refusal else { return false }
                return bytes > 4096
            }
            #expect(throws: PushCenter.Refusal.unknownCode("nope:nope")) {
                try push.notify(ProductNotification(code: "nope:nope", title: "x"), email: "ada@example.com")
            }
            #expect(throws: PushCenter.Refusal.invalidThread) {
                try push.notify(
                    ProductNotification(code: ServerCatalogue.testCode, title: "x", thread: "a b"),
                    email: "ada@example.com")
            }
            #expect(throws: PushCenter.Refusal.noAccount) {
                try push.notify(
                    ProductNotification(code: ServerCatalogue.testCode, title: "x"), email: "nobody@example.com")
            }
            #expect(try server.outbox().isEmpty)
            #expect(
                try server.application.database.execute("SELECT COUNT(*) FROM notifications").first?.int(at: 0) == 0)
        }
    }

    @Test("a test push goes to the caller's own devices, within its budget")
    func testPush() throws {
        var policy = RateLimitPolicy()
        policy.pushTestPerAccount = RateLimit(2, per: 600)
        try withAccounts(.sqlite, rateLimits: policy, push: pushOn) { server in
            let ada = try server.signIn("ada@example.com")
            let bob = try server.signIn("bob@example.com")
            _ = try server.register(deviceA, token: ada)
            _ = try server.register(deviceB, token: bob)
            let first = try server.app("POST", "/api/v1/push/test", token: ada)
            #expect(first.status == 202 && first.jsonObject?["queued"] as? Int == 1)
            #expect(try server.outbox().map(\.token) == [deviceA])
            #expect(try server.app("POST", "/api/v1/push/test", token: ada).status == 202)
            let refused = try server.app("POST", "/api/v1/push/test", token: ada)
            #expect(refused.status == 429 && refused.header("Retry-After") != nil)
            #expect(try server.app("POST", "/api/v1/push/test", token: bob).status == 202, "bob's budget is his own")
        }
    }
}

@Suite("Registrations and mutes have caps and a budget; a notification never fans out past the cap", .tags(.postgres))
struct PushCapTests {
    private static func device(_ index: Int) -> String { String(format: "%064x", 0xD0D0_0000 + index) }

    private static var capped: PushSettings {
        var settings = PushSettings(topic: "net.example.books")
        settings.maxDevicesPerAccount = 3
        settings.maxMutesPerAccount = 3
        return settings
    }

    @Test(
        "past the device cap the least recently registered goes, never the new one; a test push reaches the cap at most",
        arguments: Backend.allCases)
    func deviceCap(backend: Backend) throws {
        try withAccounts(backend, push: Self.capped) { server in
            let ada = try server.signIn("ada@example.com")
            let bob = try server.signIn("bob@example.com")
            #expect(try server.register(Self.device(99), token: bob).status == 200)
            for index in 0..<3 {
                #expect(try server.register(Self.device(index), token: ada).status == 200)
                server.clock.advance(by: 1)
            }
            // Registering device 0 again makes it the newest: device 1 is the least recent.
            #expect(try server.register(Self.device(0), token: ada).status == 200)
            server.clock.advance(by: 1)
            #expect(try server.register(Self.device(3), token: ada).status == 200)
            #expect(
                try server.registeredDevices()
                    == [Self.device(0), Self.device(2), Self.device(3), Self.device(99)].sorted())
            // Several in one second: each new one stays.
            for index in 4..<7 { #expect(try server.register(Self.device(index), token: ada).status == 200) }
            let adas = try server.application.push.devices(accountID: 1).map(\.token)
            #expect(adas.count == 3 && adas.contains(Self.device(6)), "\(adas)")

            // Rows written before the cap (a server upgraded) are not all pushed to.
            for index in 10..<20 {
                try server.application.database.execute(
                    """
                    INSERT INTO push_devices (token, environment, topic, user_id, session_key_hash, created_at, updated_at)
                    VALUES ($1, 'sandbox', '', 1, NULL, 0, 0)
                    """, [.text(Self.device(index))])
            }
            let queued = try server.app("POST", "/api/v1/push/test", token: ada)
            #expect(queued.status == 202)
            #expect(queued.jsonObject?["queued"] as? Int == 3)
        }
    }

    @Test("a device whose session expired (not ended, so not pruned yet) gets no push", arguments: Backend.allCases)
    func expiredSessionDevice(backend: Backend) throws {
        try withAccounts(backend, push: Self.capped) { server in
            let first = try server.signIn("ada@example.com")
            #expect(try server.register(Self.device(1), token: first).status == 200)
            server.clock.advance(by: 200 * 86400)
            let second = try server.signIn("ada@example.com")
            #expect(try server.register(Self.device(2), token: second).status == 200)
            // The first session (a year's lifetime) has expired; the second has not.
            server.clock.advance(by: 200 * 86400)
            let delivery = try server.application.push.notify(
                ProductNotification(code: ServerCatalogue.testCode, title: "Hello"), email: "ada@example.com")
            #expect(delivery.queued == 1)
            #expect(try server.outbox().map(\.token) == [Self.device(2)])
        }
    }

    @Test("past the mute cap a new mute is 409 too_many_mutes; muting again, and unmuting, still work")
    func muteCap() throws {
        try withAccounts(.sqlite, push: Self.capped) { server in
            let ada = try server.signIn("ada@example.com")
            for thread in ["a", "b", "c", "a"] {
                #expect(try server.app("PUT", "/api/v1/notifications/mutes/\(thread)", token: ada).status == 204)
            }
            let refused = try server.app("PUT", "/api/v1/notifications/mutes/d", token: ada)
            #expect(refused.status == 409)
            #expect(
                (refused.jsonObject?["error"] as? [String: Any])?["code"] as? String == APIErrorCode.tooManyMutes)
            #expect(try server.app("DELETE", "/api/v1/notifications/mutes/b", token: ada).status == 204)
            #expect(try server.app("PUT", "/api/v1/notifications/mutes/d", token: ada).status == 204)
            // A %00 would have cut the thread short (acting on "a"): refused, nothing changes.
            #expect(try server.app("DELETE", "/api/v1/notifications/mutes/a%00x", token: ada).status == 400)
            let threads = try server.app("GET", "/api/v1/notifications/mutes", token: ada).jsonObject?["threads"]
            #expect(threads as? [String] == ["a", "c", "d"])
        }
    }

    @Test("registrations and mutes share one budget per account: past it 429 with Retry-After, and nothing changes")
    func changeBudget() throws {
        var limits = RateLimitPolicy()
        limits.pushChangesPerAccount = RateLimit(4, per: 3600)
        try withAccounts(.sqlite, rateLimits: limits, push: Self.capped) { server in
            let ada = try server.signIn("ada@example.com")
            for index in 0..<3 { #expect(try server.register(Self.device(index), token: ada).status == 200) }
            #expect(try server.app("PUT", "/api/v1/notifications/mutes/a", token: ada).status == 204)
            let refused = try server.register(Self.device(9), token: ada)
            #expect(refused.status == 429)
            #expect(Int(refused.header("Retry-After") ?? "") ?? 0 > 0)
            #expect(try server.app("PUT", "/api/v1/notifications/mutes/b", token: ada).status == 429)
            #expect(try !server.registeredDevices().contains(Self.device(9)))
            // Another account has its own budget.
            let bob = try server.signIn("bob@example.com")
            #expect(try server.register(Self.device(9), token: bob).status == 200)
        }
    }
}
