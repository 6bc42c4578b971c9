import Foundation
import HomeportAPNs
import HomeportCrypto
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

#if canImport(Glibc)
    import Glibc
#endif

private func device(_ number: Int) -> String {
    String(format: "%064x", number)
}

/// Push settings that send to `standIn`.
func pushSettings(_ standIn: APNsStandIn, maximumAttempts: Int = 8) throws -> PushSettings {
    PushSettings(
        topic: APNsStandIn.topic,
        apns: APNsSettings(
            keyPEM: try String(contentsOfFile: standIn.keyFile, encoding: .utf8), keyID: APNsStandIn.keyID,
            teamID: APNsStandIn.teamID,
            client: APNsClient.Configuration(
                productionURL: standIn.url, sandboxURL: standIn.url, caFile: standIn.caFile)),
        maximumAttempts: maximumAttempts)
}

extension AccountsHarness {
    /// Notifies ada and lets the sender run one pass.
    func pushToAda(_ title: String = "Hello") throws {
        try application.push.notify(
            ProductNotification(code: ServerCatalogue.testCode, title: title), email: "ada@example.com")
    }

    /// Runs sender passes until nothing is due.
    func drain() throws {
        let sender = try #require(application.sender)
        while try sender.drainOnce() > 0 {}
    }

    /// Makes every waiting push due, as if its backoff had passed (the clock stays, so the
    /// provider token's `iat` stays true for the stand-in).
    func makeDue() throws {
        try application.database.execute("UPDATE push_outbox SET next_attempt_at = 0 WHERE state = 'pending'")
    }

    func outboxRows() throws -> [Row] {
        try application.database.execute("SELECT state, attempts, last_error, apns_id FROM push_outbox ORDER BY id")
    }
}

@Suite("The APNs sender, against a stand-in that checks every request", .tags(.process, .postgres, .interop))
struct PushSenderTests {
    @Test(
        "a push goes over HTTP/2 with a provider token APNs accepts, and leaves the outbox", arguments: Backend.allCases
    )
    func delivers(backend: Backend) throws {
        let standIn = try APNsStandIn()
        try withAccounts(backend, push: try pushSettings(standIn), clockStart: Date()) { server in
            let ada = try server.signIn("ada@example.com")
            for number in 1...20 { _ = try server.register(device(number), token: ada) }
            try server.pushToAda("Hello there")
            #expect(standIn.waitForRequests(20))
            let requests = standIn.requests()
            #expect(requests.count == 20)
            #expect(
                requests.allSatisfy { $0["status"] as? Int == 200 && $0["invalid"] == nil }, "\(requests.first ?? [:])")
            #expect(requests.allSatisfy { $0["http_version"] as? String == "2" })
            #expect(Set(requests.compactMap { $0["client_port"] as? Int }).count == 1, "one connection, many streams")
            #expect(Set(requests.compactMap { $0["apns_id"] as? String }).count == 20)
            #expect(Set(requests.compactMap { $0["jwt"] as? String }).count == 1, "one provider token, reused")
            let payload = try #require(requests.first?["payload"] as? [String: Any])
            let appData = try #require(payload["homeport"] as? [String: Any])
            let identity = try RawHTTP.request(port: server.port, path: "/api/v1/server-identity")
            #expect(appData["s"] as? String == identity.jsonObject?["instanceId"] as? String)
            try eventually(timeout: .seconds(2)) { try server.outboxRows().isEmpty }
            #expect(try server.outboxRows().isEmpty, "delivered pushes leave the outbox")
        }
    }

    @Test(
        "a sender looks for leases that ran out once a second of its clock, not with each batch, and takes them then",
        arguments: Backend.allCases)
    func lapsedOnceASecond(backend: Backend) throws {
        let standIn = try APNsStandIn()
        try withAccounts(backend, push: try pushSettings(standIn), clockStart: Date()) { server in
            let sender = try #require(server.application.sender)
            sender.stop()
            let ada = try server.signIn("ada@example.com")
            for number in 1...2 { #expect(try server.register(device(number), token: ada).status == 200) }
            // This second's look: nothing there.
            #expect(try sender.drainOnce() == 0)
            try server.pushToAda()
            // One row was claimed by a sender that stopped; its lease ran out a second ago.
            let now = server.clock.unixSeconds
            try server.application.database.execute(
                """
                UPDATE push_outbox SET state = 'sending', claimed_by = 'stopped', claimed_until = $1
                WHERE id = (SELECT MIN(id) FROM push_outbox)
                """, [.integer(now - 1)])
            #expect(try sender.drainOnce() == 1, "the due row; the lapsed one waits for the next second")
            #expect(try server.outboxRows().count == 1)
            server.clock.advance(by: 1)
            #expect(try sender.drainOnce() == 1, "a second later, the lapsed row")
            #expect(try server.outboxRows().isEmpty)
            #expect(standIn.waitForRequests(2))
            #expect(Set(standIn.requests().compactMap { $0["device"] as? String }) == [device(1), device(2)])
        }
    }

    @Test("410 prunes a registration unless it was registered again after Apple's timestamp")
    func unregistered() throws {
        let standIn = try APNsStandIn()
        let now = Int64(Date().timeIntervalSince1970)
        try standIn.script(tokens: [
            device(1): [["status": 410, "reason": "Unregistered", "timestamp": (now + 60) * 1000]],
            device(2): [["status": 410, "reason": "Unregistered", "timestamp": (now - 3600) * 1000]],
        ])
        try withAccounts(.sqlite, push: try pushSettings(standIn), clockStart: Date()) { server in
            let ada = try server.signIn("ada@example.com")
            for number in 1...3 { _ = try server.register(device(number), token: ada) }
            try server.pushToAda()
            try server.drain()
            #expect(standIn.waitForRequests(3))
            #expect(
                try server.registeredDevices() == [device(2), device(3)],
                "Apple learned of device 1 after it was registered: gone; device 2 was registered again since: kept")
            #expect(try server.outboxRows().isEmpty)
            // The log says what happened to each: one removed, one kept.
            let lines = server.log.lines
            #expect(lines.filter { $0.contains("device unregistered; registration removed") }.count == 1, "\(lines)")
            #expect(lines.filter { $0.contains("a newer registration of the token is kept") }.count == 1, "\(lines)")
        }
    }

    @Test(
        "a refused token or a reason Apple says not to retry is not retried",
        arguments: [
            ("BadDeviceToken", 400, true), ("DeviceTokenNotForTopic", 400, true), ("TopicDisallowed", 400, false),
            ("PayloadTooLarge", 413, false), ("Forbidden", 403, false),
        ])
    func notRetried(reason: String, status: Int, prunes: Bool) throws {
        let standIn = try APNsStandIn()
        try standIn.script(tokens: [device(1): [["status": status, "reason": reason]]])
        try withAccounts(.sqlite, push: try pushSettings(standIn), clockStart: Date()) { server in
            let ada = try server.signIn("ada@example.com")
            _ = try server.register(device(1), token: ada)
            try server.pushToAda()
            try server.drain()
            try server.makeDue()
            try server.drain()
            #expect(standIn.waitForRequests(1))
            usleep(300_000)
            #expect(standIn.requests().count == 1, "sent once, never again")
            #expect(try server.registeredDevices() == (prunes ? [] : [device(1)]))
            let rows = try server.outboxRows()
            #expect(rows.map { $0.string(at: 0) } == (prunes ? [] : ["failed"]))
            if !prunes { #expect(rows.first?.string(at: 2) == reason) }
        }
    }

    @Test("no answer, 429 and 503 are tried again with backoff, then delivered; past the limit given up")
    func retries() throws {
        let standIn = try APNsStandIn()
        try standIn.script(tokens: [
            device(1): [
                ["status": 503, "reason": "ServiceUnavailable"], ["status": 429, "reason": "TooManyRequests"],
                ["status": 200],
            ],
            device(2): [["status": 500, "reason": "InternalServerError"]],
        ])
        try withAccounts(.sqlite, push: try pushSettings(standIn, maximumAttempts: 3), clockStart: Date()) { server in
            let ada = try server.signIn("ada@example.com")
            _ = try server.register(device(1), token: ada)
            _ = try server.register(device(2), token: ada)
            try server.pushToAda()
            try server.drain()
            let waiting = try server.outboxRows()
            #expect(waiting.map { $0.string(at: 0) } == ["pending", "pending"])
            #expect(waiting.map { $0.int(at: 1) } == [1, 1])
            try server.drain()
            #expect(standIn.requests().count == 2, "not before the backoff has passed")
            for _ in 0..<2 {
                try server.makeDue()
                try server.drain()
            }
            #expect(standIn.requests().filter { $0["device"] as? String == device(1) }.count == 3)
            let rows = try server.outboxRows()
            #expect(rows.count == 1 && rows.first?.string(at: 0) == "failed" && rows.first?.int(at: 1) == 3)
            let ids = Set(
                standIn.requests().filter { $0["device"] as? String == device(1) }.compactMap {
                    $0["apns_id"] as? String
                })
            #expect(ids.count == 1, "the same apns-id on every attempt")
        }
    }

    @Test("an expired provider token is replaced once and the push sent again at once")
    func expiredProviderToken() throws {
        let standIn = try APNsStandIn()
        try standIn.script(expireTokensOlderThan: 1500)
        try withAccounts(.sqlite, push: try pushSettings(standIn), clockStart: Date()) { server in
            // A token another replica minted half an hour ago.
            let key = try ES256Key(pem: try String(contentsOfFile: standIn.keyFile, encoding: .utf8))
            let old = try ProviderToken.mint(
                key: key, keyID: APNsStandIn.keyID, teamID: APNsStandIn.teamID,
                issuedAt: server.clock.unixSeconds - 1800)
            try server.application.database.execute(
                "INSERT INTO apns_provider_token (id, key_id, team_id, token, issued_at) VALUES (1, $1, $2, $3, $4)",
                [.text(old.keyID), .text(old.teamID), .text(old.jwt), .integer(old.issuedAt)])
            let ada = try server.signIn("ada@example.com")
            _ = try server.register(device(1), token: ada)
            try server.pushToAda()
            try server.drain()
            #expect(standIn.waitForRequests(2))
            let requests = standIn.requests()
            #expect(requests.map { $0["status"] as? Int } == [403, 200])
            #expect(requests.first?["reason"] as? String == "ExpiredProviderToken")
            let tokens = requests.compactMap { $0["jwt"] as? String }
            #expect(Set(tokens).count == 2, "one new token, not one per attempt")
            #expect(tokens.first == old.jwt)
            let stored = try server.application.database.execute("SELECT token FROM apns_provider_token").first?.string(
                at: 0)
            #expect(
                stored?.hasPrefix(ProviderTokenSource.sealedPrefix) == true && stored?.contains("eyJ") == false,
                "the new token is shared through the database, sealed: \(stored ?? "nothing")")
            let replica = try ProviderTokenSource(
                database: server.application.database, key: key, keyID: APNsStandIn.keyID,
                teamID: APNsStandIn.teamID, clock: server.clock)
            #expect(try replica.current().jwt == tokens.last, "another replica with the key opens it")
        }
    }

    @Test("a provider token refused even when new is not minted again and again")
    func refusedTokensAreNotChurned() throws {
        let standIn = try APNsStandIn()
        try standIn.script(expireTokensOlderThan: -1000)  // Apple's clock far ahead: every token "expired"
        try withAccounts(.sqlite, push: try pushSettings(standIn), clockStart: Date()) { server in
            let ada = try server.signIn("ada@example.com")
            _ = try server.register(device(1), token: ada)
            for _ in 0..<3 {
                try server.pushToAda()
                try server.drain()
            }
            #expect(standIn.waitForRequests(3))
            let tokens = Set(standIn.requests().compactMap { $0["jwt"] as? String })
            #expect(tokens.count == 1, "a fresh token is not replaced: Apple would refuse the churn")
            #expect(try server.outboxRows().allSatisfy { $0.string(at: 0) == "pending" }, "the pushes wait")
        }
    }

    @Test(
        "an APNs host that closes, then resets, the connection while batches go out: the server lives on, every push waits to be tried again"
    )
    func hostGoesAwayMidBatch() throws {
        let dropper = try DroppingTLSPeer()
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let database = "sqlite:" + data.file("h.sqlite")
        #expect(try ServerProcess.run(["migrate", "--database", database]).status == 0)
        let opened = try DatabaseURL(parsing: database).open()
        defer { opened.close() }
        try opened.execute(
            """
            INSERT INTO users (email, password_hash, approval, created_at, password_changed_at)
            VALUES ('ada@example.com', 'x', 'approved', 0, 0)
            """)
        // 700 devices: a batch of 500 on the first connection, which the host closes, and one of
        // 200 on the second, which it resets.
        try opened.execute(
            """
            WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 700)
            INSERT INTO push_devices (token, environment, topic, user_id, created_at, updated_at)
            SELECT printf('%064x', x), 'production', '', (SELECT id FROM users), 0, 0 FROM n
            """)
        let sent = try ServerProcess.run([
            "push", "send", "--database", database, "--email", "ada@example.com", "--code",
            "homeport/core:push.test", "--title", "To every device", "--apns-topic", APNsStandIn.topic,
            "--max-devices-per-account", "700",
        ])
        #expect(sent.status == 0 && sent.output.contains("700 push(es) queued"), "\(sent.output) \(sent.error)")
        let server = try ServerProcess(serve: [
            "--database", database, "--apns-topic", APNsStandIn.topic, "--apns-key-file", dropper.keyFile,
            "--apns-key-id", APNsStandIn.keyID, "--apns-team-id", APNsStandIn.teamID, "--apns-base-url", dropper.url,
            "--apns-ca-file", dropper.caFile,
        ])
        defer { server.stop() }
        var rows: [Row] = []
        try eventually(every: .milliseconds(50)) {
            rows = try opened.execute("SELECT state, attempts, last_error FROM push_outbox")
            return !server.isRunning || rows.allSatisfy { $0.int(at: 1) ?? 0 >= 1 }
        }
        #expect(server.isRunning, "the server is still running: \(server.standardError.suffix(500))")
        #expect(rows.count == 700)
        #expect(
            rows.allSatisfy {
                $0.string(at: 0) == "pending" && $0.int(at: 1) == 1
                    && $0.string(at: 2) == "the connection to APNs failed"
            }, "\(Set(rows.map { "\($0.string(at: 0) ?? "") \($0.int(at: 1) ?? 0) \($0.string(at: 2) ?? "")" }))")
    }
}

@Suite("Pushes from several replicas", .tags(.process, .postgres, .interop))
struct PushReplicaTests {
    @Test("three replicas on one PostgreSQL database drain one outbox of 1,000: each push once, one provider token")
    func threeReplicas() throws {
        let standIn = try APNsStandIn()
        let (url, cleanUp) = try Backend.postgres.makeDatabaseURL()
        defer { cleanUp() }
        #expect(try ServerProcess.run(["migrate", "--database", url.rawText]).status == 0)
        let database = try url.open()
        defer { database.close() }
        try database.execute(
            """
            INSERT INTO users (email, password_hash, approval, created_at, password_changed_at)
            VALUES ('ada@example.com', 'x', 'approved', 0, 0)
            """)
        try database.execute(
            """
            INSERT INTO push_devices (token, environment, topic, user_id, session_key_hash, created_at, updated_at)
            SELECT lpad(to_hex(n), 64, '0'), 'production', '', (SELECT id FROM users), NULL, 0, 0
            FROM generate_series(1, 1000) AS n
            """)
        let sent = try ServerProcess.run([
            "push", "send", "--database", url.rawText, "--email", "ada@example.com", "--code",
            "homeport/core:push.test",
            "--title", "To every device", "--apns-topic", APNsStandIn.topic, "--max-devices-per-account", "1000",
        ])
        #expect(sent.status == 0 && sent.output.contains("1000 push(es) queued"), "\(sent.output) \(sent.error)")
        let apns = ["--database", url.rawText] + standIn.serverArguments
        let replicas = try (0..<3).map { _ in try ServerProcess(serve: apns) }
        defer { replicas.forEach { $0.stop() } }
        #expect(standIn.waitForRequests(1000, timeout: 60))
        var left: Int64? = -1
        try eventually(every: .milliseconds(50)) {
            left = try database.execute("SELECT COUNT(*) FROM push_outbox").first?.int(at: 0)
            return left == 0
        }
        #expect(left == 0, "the outbox is drained")
        usleep(500_000)
        let requests = standIn.requests()
        #expect(requests.count == 1000, "no push was sent twice")
        #expect(Set(requests.compactMap { $0["apns_id"] as? String }).count == 1000)
        #expect(Set(requests.compactMap { $0["device"] as? String }).count == 1000)
        #expect(requests.allSatisfy { $0["status"] as? Int == 200 })
        #expect(Set(requests.compactMap { $0["jwt"] as? String }).count == 1, "one provider token for every replica")
    }
}

@Suite("push send notifies as the serving process does", .tags(.process, .postgres, .interop))
struct PushSendSettingsTests {
    @Test(
        "push send takes the serve's topic, payload key and catalogue it recorded; a flag given wins; never served and no topic: refused"
    )
    func servingSettings() throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let database = "sqlite:" + data.file("h.sqlite")
        try #"{"codes": [{"code": "journal:entry.shared", "title": "Shared"}]}"#.write(
            toFile: data.file("catalogue.json"), atomically: true, encoding: .utf8)
        let send = { (extra: [String]) in
            try ServerProcess.run(
                [
                    "push", "send", "--database", database, "--email", "ada@example.com", "--code",
                    "journal:entry.shared",
                    "--title", "Hello",
                ] + extra)
        }
        #expect(try ServerProcess.run(["migrate", "--database", database]).status == 0)
        let unknown = try send([])
        #expect(unknown.status == 1 && unknown.error.contains("--apns-topic"), "\(unknown.error)")

        let server = try ServerProcess(serve: [
            "--database", database, "--signup", "open", "--password-iterations", "1000", "--apns-topic",
            "net.example.books", "--push-key", "officer", "--catalogue", data.file("catalogue.json"),
        ])
        defer { server.stop() }
        let signup = try RawHTTP.request(
            port: server.port, method: "POST", path: "/_allauth/app/v1/auth/signup",
            headers: [("Content-Type", "application/json")],
            body: Data(#"{"email":"ada@example.com","password":"correct horse battery"}"#.utf8))
        let token = try #require(signup.sessionToken)
        let registered = try RawHTTP.request(
            port: server.port, method: "POST", path: "/api/v1/push/devices",
            headers: [("Content-Type", "application/json"), ("X-Session-Token", token)],
            body: Data(#"{"token":"\#(String(repeating: "ab", count: 32))","environment":"sandbox"}"#.utf8))
        #expect(registered.status == 200)

        let sent = try send([])
        #expect(sent.status == 0 && sent.output.contains("1 push(es) queued"), "\(sent.output) \(sent.error)")
        let payload = try ServerProcess.runProgram(
            "/usr/bin/sqlite3", [data.file("h.sqlite"), "SELECT payload FROM push_outbox ORDER BY id DESC LIMIT 1"])
        #expect(payload.output.contains(#""officer":{"#), "the serve's payload key: \(payload.output)")
        // A flag given on the command line wins over what serve recorded.
        let other = try send(["--push-key", "books"])
        #expect(other.status == 0)
        let second = try ServerProcess.runProgram(
            "/usr/bin/sqlite3", [data.file("h.sqlite"), "SELECT payload FROM push_outbox ORDER BY id DESC LIMIT 1"])
        #expect(second.output.contains(#""books":{"#), "\(second.output)")
    }
}
