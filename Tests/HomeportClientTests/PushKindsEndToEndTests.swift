import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

/// One account on two installations, with three phones: an iPhone (APNs), an Android phone with
/// Google's services (FCM) and one with a UnifiedPush distributor (Web Push). Real
/// homeport-server processes sending to all three stand-ins at once; each phone's client routes
/// what it gets.
@Suite("Pushes of three kinds end to end: two installations, three phones, real servers", .tags(.process, .interop))
struct PushKindsEndToEndTests {
    static let device = "1f2e3d4c5b6a79880796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
    static let fcmToken = "cAbC1:APA91b" + String(repeating: "x9_Z-", count: 30)

    @Test("each notification reaches each phone once, through its own service, and routes to its own server")
    func threeKindsTwoServers() async throws {
        let files = try TemporaryDirectory()
        let homes = try (0..<3).map { _ in try TemporaryDirectory() }
        defer {
            files.remove()
            homes.forEach { $0.remove() }
        }
        let apns = try APNsStandIn()
        let fcm = try FCMStandIn()
        let webPush = try WebPushStandIn()
        let subscription = try webPush.subscribe()
        func serving(_ name: String) -> [String] {
            apns.serverArguments + [
                "--fcm-service-account-file", fcm.serviceAccountFile, "--fcm-base-url", fcm.url,
                "--vapid-key-file", files.file("\(name).vapid"), "--vapid-subject", "mailto:ops@example.net",
                // The stand-in push service listens on 127.0.0.1.
                "--webpush-allow-private-endpoints",
            ]
        }
        let installations = [
            try Installation(hosts: ["127.0.0.1"], extra: serving("a")),
            try Installation(hosts: ["127.0.0.1"], extra: serving("b")),
        ]
        let phones = try homes.map { try makeClient($0, SpyTransport()) }
        var servers: [String] = []
        for installation in installations {
            let address = try installation.address("127.0.0.1")
            guard
                case .signedIn(let record) = try await phones[0].signup(
                    at: address, email: "ada@example.com", password: password)
            else {
                Issue.record("no session")
                return
            }
            servers.append(record.key)
            for phone in phones.dropFirst() {
                guard case .signedIn = try await phone.login(at: address, email: "ada@example.com", password: password)
                else {
                    Issue.record("no session on the second phone")
                    return
                }
            }
            _ = try await phones[1].registerFCM(token: Self.fcmToken, with: record.key)
            _ = try await phones[2].registerWebPush(
                endpoint: subscription.endpoint,
                keys: WebPushKeys(p256dh: subscription.p256dh, auth: subscription.auth),
                with: record.key)
        }
        let outcomes = try await phones[0].setDeviceToken(Self.device, environment: .sandbox)
        #expect(outcomes.count == 2)

        for (installation, title) in zip(installations, ["from A", "from B"]) {
            let sent = try ServerProcess.run(
                [
                    "push", "send", "--database", installation.database, "--email", "ada@example.com", "--code",
                    "homeport/core:push.test", "--title", title, "--thread", "chat:42",
                ])
            #expect(sent.output.contains("3 push(es) queued"), "\(sent.output)\(sent.error)")
        }
        #expect(apns.waitForRequests(2))
        #expect(try eventually(timeout: .seconds(20)) { try fcm.messages().delivered.count == 2 })
        #expect(try eventually(timeout: .seconds(20)) { try webPush.messages().delivered.count == 2 })
        usleep(300_000)

        // Each phone routes what its service brought it: once per server, to that server.
        func routed(_ phone: HomeportClient, _ payloads: [Data]) async throws -> [String: String] {
            var result: [String: String] = [:]
            for payload in payloads {
                let push = try await phone.receivePush(payload)
                #expect(result[push.title] == nil, "\(push.title) arrived twice")
                result[push.title] = push.server
                #expect(push.threadID == "\(push.server):chat:42")
            }
            return result
        }
        let expected = ["from A": servers[0], "from B": servers[1]]
        let apple = try apns.requests().compactMap { $0["payload"] }.map {
            try JSONSerialization.data(withJSONObject: $0)
        }
        #expect(try await routed(phones[0], apple) == expected)
        let android = try fcm.messages().delivered.map {
            try JSONSerialization.data(
                withJSONObject: ["data": $0.data, "notification": ["title": $0.title ?? "", "body": $0.body ?? ""]])
        }
        #expect(try await routed(phones[1], android) == expected)
        let unified = try webPush.messages().delivered.map { try JSONSerialization.data(withJSONObject: $0.payload) }
        #expect(try await routed(phones[2], unified) == expected)
        // Two installations, two databases: each buys and keeps its own access token.
        #expect(try fcm.messages().tokensIssued == 2)
    }
}
