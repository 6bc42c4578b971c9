import Foundation
import HomeportCrypto
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// Push settings that send to `standIn` as FCM.
func fcmSettings(_ standIn: FCMStandIn) throws -> PushSettings {
    var settings = PushSettings()
    var fcm = try FCMSettings.serviceAccount(fromFile: standIn.serviceAccountFile)
    fcm.baseURL = standIn.url
    settings.enableFCM(fcm)
    return settings
}

extension AccountsHarness {
    /// Registers an FCM registration token for the token's account.
    func register(fcm registration: String, token: String) throws -> RawResponse {
        try app("POST", HomeportPath.pushDevices, token: token, json: ["provider": "fcm", "token": registration])
    }
}

/// An FCM registration token of the usual shape.
private func fcmToken(_ number: Int) -> String {
    "d\(number)Xk3:APA91b" + String(repeating: "Hq7-_zK", count: 20)
}

@Suite("FCM: Android registrations, and pushes a stand-in FCM checks with google-auth", .tags(.process, .interop))
struct FCMTests {
    @Test("a registration token registers, is named fcm:<hash>, never echoed or logged, and unregisters by that name")
    func registration() throws {
        let standIn = try FCMStandIn()
        try withAccounts(.sqlite, push: try fcmSettings(standIn)) { server in
            let ada = try server.signIn("ada@example.com")
            let answer = try server.register(fcm: fcmToken(1), token: ada)
            #expect(answer.status == 200, "\(answer.text)")
            let name = "fcm:" + Digest.sha256Hex(fcmToken(1))
            #expect(answer.jsonObject?["provider"] as? String == "fcm")
            #expect(answer.jsonObject?["token"] as? String == name)
            #expect(!answer.text.contains(fcmToken(1)))
            #expect(try server.registeredDevices() == [name])
            for bad in ["short", fcmToken(1) + " ", fcmToken(1) + "/x", String(repeating: "a", count: 4097)] {
                let refused = try server.register(fcm: bad, token: ada)
                #expect(refused.status == 400 && refused.text.contains("\"token\""), "\(refused.text)")
            }
            #expect(try server.app("DELETE", HomeportPath.pushDevice(name), token: ada).status == 204)
            #expect(try server.registeredDevices().isEmpty)
            #expect(!server.log.lines.joined().contains(fcmToken(1)), "no whole registration token in the log")
        }
        try withAccounts(.sqlite, push: PushSettings(topic: "net.example.books")) { server in
            let ada = try server.signIn("ada@example.com")
            let refused = try server.register(fcm: fcmToken(1), token: ada)
            #expect(refused.status == 400 && refused.text.contains("\"provider\""), "\(refused.text)")
        }
    }

    @Test("a push reaches FCM as a data message with this server's s and a notification; one access token serves many")
    func delivers() throws {
        let standIn = try FCMStandIn()
        try withAccounts(.sqlite, push: try fcmSettings(standIn), clockStart: Date()) { server in
            let ada = try server.signIn("ada@example.com")
            #expect(try server.register(fcm: fcmToken(1), token: ada).status == 200)
            #expect(try server.register(fcm: fcmToken(2), token: ada).status == 200)
            try server.application.push.notify(
                ProductNotification(
                    code: ServerCatalogue.testCode, title: "Hello", body: "There", thread: "chat:42", objectID: 7),
                email: "ada@example.com")
            try server.pushToAda("Again")
            try server.drain()
            #expect(try eventually { try standIn.messages().delivered.count == 4 })
            let (delivered, refused, issued) = try standIn.messages()
            #expect(refused.isEmpty, "\(refused)")
            #expect(issued == 1, "one access token for every push")
            #expect(Set(delivered.map(\.token)) == [fcmToken(1), fcmToken(2)])
            let instance = try server.instanceID
            let first = try #require(delivered.first { $0.title == "Hello" })
            #expect(first.data["s"] == instance)
            #expect(first.data["c"] == ServerCatalogue.testCode)
            #expect(first.data["id"] == "7")
            #expect(first.data["thread"] == "\(instance):chat:42")
            #expect(first.data["mv"] == server.application.push.catalogue.version)
            #expect(first.body == "There" && first.priority == "HIGH")
            // What the server sends is what the client reads back as the APNs payload's twin.
            let message = try JSONSerialization.data(
                withJSONObject: ["data": first.data, "notification": ["title": first.title ?? "", "body": "There"]])
            let read = try PushPayload(decodingFCM: message)
            #expect(read.appData?.s?.description == instance && read.appData?.id == 7)
            #expect(read.aps.threadID == "\(instance):chat:42" && read.aps.alert?.title == "Hello")
            #expect(first.ttl.map { (86000...86400).contains(Int($0.dropLast()) ?? 0) } == true, "\(first.ttl ?? "")")
            #expect(try server.outboxRows().isEmpty)
        }
    }

    @Test(
        "only UNREGISTERED removes the registration; QUOTA_EXCEEDED waits; SENDER_ID_MISMATCH, INVALID_ARGUMENT and a 404 page give up"
    )
    func outcomes() throws {
        let standIn = try FCMStandIn()
        try standIn.answer(fcmToken(1), with: ["UNREGISTERED"])
        try standIn.answer(fcmToken(2), with: ["SENDER_ID_MISMATCH"])
        try standIn.answer(fcmToken(3), with: ["QUOTA_EXCEEDED"], retryAfter: 600)
        try standIn.answer(fcmToken(4), with: ["INVALID_ARGUMENT"])
        try standIn.answer(fcmToken(5), with: ["UNAVAILABLE"])
        try standIn.answer(fcmToken(6), with: ["PAGE_404"])
        try withAccounts(.sqlite, push: try fcmSettings(standIn), clockStart: Date()) { server in
            let ada = try server.signIn("ada@example.com")
            for number in 1...6 { #expect(try server.register(fcm: fcmToken(number), token: ada).status == 200) }
            try server.pushToAda()
            try server.drain()
            // Only FCM's own UNREGISTERED removes a device: another project's token, or a 404 page
            // that is not FCM's, says the configuration here is wrong, not the device.
            let kept = Set([2, 3, 4, 5, 6].map { "fcm:" + Digest.sha256Hex(fcmToken($0)) })
            #expect(Set(try server.registeredDevices()) == kept)
            let rows = try server.application.database.execute(
                "SELECT state, next_attempt_at, last_error FROM push_outbox ORDER BY id")
            #expect(
                rows.compactMap { $0.string(at: 0) }.sorted() == ["failed", "failed", "failed", "pending", "pending"],
                "\(rows)")
            #expect(
                Set(rows.filter { $0.string(at: 0) == "failed" }.compactMap { $0.string(at: 2) })
                    == ["fcm INVALID_ARGUMENT", "fcm SENDER_ID_MISMATCH", "fcm HTTP 404"])
            let quota = try #require(rows.first { $0.string(at: 2) == "fcm QUOTA_EXCEEDED" })
            #expect((quota.int(at: 1) ?? 0) >= server.clock.unixSeconds + 600, "not before Retry-After")
        }
    }

    @Test(
        "an app-data thread never stands in for aps.thread-id: Android hears only the thread the server's own checks passed"
    )
    func threadFromAPSOnly() {
        func message(_ payload: String) -> [String: String] {
            let item = OutboxItem(
                apnsID: UUID().uuidString.lowercased(), deviceToken: "fcm:" + String(repeating: "a", count: 64),
                environment: .production, topic: "", payload: payload, collapseID: nil, priority: 10, expiration: 0,
                provider: .fcm, webPush: nil, fcmToken: "a-registration-token")
            return FCMDelivery.message(item, now: 0)["data"] as? [String: String] ?? [:]
        }
        let planted = message(#"{"aps":{"alert":{"title":"Hi"}},"homeport":{"s":"server-a","thread":"server-b:chat"}}"#)
        #expect(planted["thread"] == nil && planted["s"] == "server-a", "\(planted)")
        let own = message(
            #"{"aps":{"alert":{"title":"Hi"},"thread-id":"server-a:chat"},"homeport":{"s":"server-a","thread":"server-b:x"}}"#
        )
        #expect(own["thread"] == "server-a:chat", "\(own)")
    }

    @Test("an access token FCM refuses is replaced once, and the push goes with the new one")
    func renewsAccessToken() throws {
        let standIn = try FCMStandIn()
        try withAccounts(.sqlite, push: try fcmSettings(standIn), clockStart: Date()) { server in
            let ada = try server.signIn("ada@example.com")
            #expect(try server.register(fcm: fcmToken(1), token: ada).status == 200)
            try server.pushToAda("First")
            try server.drain()
            #expect(try eventually { try standIn.messages().delivered.count == 1 })
            try standIn.revokeAccessTokens()
            try server.pushToAda("Second")
            try server.drain()
            #expect(try eventually { try standIn.messages().delivered.count == 2 })
            let (_, refused, issued) = try standIn.messages()
            #expect(issued == 2, "a second access token, once")
            #expect(refused.map(\.status) == [401])
            #expect(try server.outboxRows().isEmpty)
        }
    }

    @Test("replicas share one access token through the database, where it is sealed")
    func sharedAccessToken() throws {
        let standIn = try FCMStandIn()
        try withAccounts(.sqlite, push: try fcmSettings(standIn), clockStart: Date()) { a in
            let ada = try a.signIn("ada@example.com")
            #expect(try a.register(fcm: fcmToken(1), token: ada).status == 200)
            try a.pushToAda("From A")
            try a.drain()
            #expect(try eventually { try standIn.messages().delivered.count == 1 })
            // A stops sending; the second replica sends with the token A stored.
            try #require(a.application.sender).stop()
            try withAccounts(.sqlite, push: try fcmSettings(standIn), clockStart: Date(), database: a.url) { b in
                try b.pushToAda("From B")
                try b.drain()
                #expect(try eventually { try standIn.messages().delivered.count == 2 })
            }
            #expect(try standIn.messages().tokensIssued == 1, "one access token for both replicas")
            let rows = try a.application.database.execute("SELECT token FROM fcm_access_tokens")
            #expect(rows.count == 1)
            #expect(rows.first?.string(at: 0)?.contains("ya29.") == false, "sealed in the database")
        }
    }

    @Test("serve refuses an FCM base URL alone, a service-account file others may read or one without its key")
    func serveOptions() throws {
        let standIn = try FCMStandIn()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let open = directory.file("open.json")
        try FileManager.default.copyItem(atPath: standIn.serviceAccountFile, toPath: open)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: open)
        let keyless = directory.file("keyless.json")
        let account = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: standIn.serviceAccountFile)))
                as? [String: Any])
        try JSONSerialization.data(withJSONObject: account.filter { $0.key != "private_key" }).write(
            to: URL(fileURLWithPath: keyless))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyless)
        let database = ["--database", "sqlite:" + directory.file("h.sqlite"), "--listen", "127.0.0.1:1"]
        for (options, message) in [
            (["--fcm-base-url", standIn.url], "--fcm-base-url needs --fcm-service-account-file"),
            (["--fcm-service-account-file", open], "others"),
            (["--fcm-service-account-file", keyless], "has no private_key"),
            (
                ["--fcm-service-account-file", standIn.serviceAccountFile, "--fcm-base-url", "ftp://x"],
                "--fcm-base-url must be https://"
            ),
        ] {
            let run = try ServerProcess.run(["serve"] + database + options, timeout: 30)
            #expect(run.status == 2, "\(options): \(run.error)")
            #expect(run.error.contains(message), "\(options): \(run.error)")
        }
    }
}
