import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

/// Two installations push to one Web Push subscription through the stand-in service, which
/// decrypts and checks every push; real homeport-server processes, the client routes each.
@Suite("Web Push end to end: two installations, one subscription, real servers", .tags(.process, .interop))
struct WebPushEndToEndTests {
    @Test("each push decrypts with its own server's s and routes there; a 410 prunes only at the server that pushed")
    func twoInstallations() async throws {
        let home = try TemporaryDirectory()
        let files = try TemporaryDirectory()
        defer {
            home.remove()
            files.remove()
        }
        let service = try WebPushStandIn()
        let subscription = try service.subscribe()
        func vapid(_ name: String) -> [String] {
            [
                "--vapid-key-file", files.file("\(name).vapid"), "--vapid-subject", "mailto:ops@\(name).example.net",
                // The stand-in push service listens on 127.0.0.1.
                "--webpush-allow-private-endpoints",
            ]
        }
        let a = try Installation(hosts: ["127.0.0.1"], extra: vapid("a"))
        let b = try Installation(hosts: ["127.0.0.1"], extra: vapid("b"))
        let events = EventLog()
        let client = try makeClient(home, SpyTransport(), events: events)
        var servers: [String] = []
        for installation in [a, b] {
            guard
                case .signedIn(let record) = try await client.signup(
                    at: try installation.address("127.0.0.1"), email: "ada@example.com", password: password)
            else {
                Issue.record("no session")
                return
            }
            servers.append(record.key)
            let key = try #require(try await client.webPushKey(of: record.key))
            // The key the server signs with is the one `push vapid-key` prints from its file.
            let printed = try ServerProcess.run([
                "push", "vapid-key", "--vapid-key-file", files.file(a === installation ? "a.vapid" : "b.vapid"),
            ])
            #expect(printed.output.trimmingCharacters(in: .whitespacesAndNewlines) == key)
            let registered = try await client.registerWebPush(
                endpoint: subscription.endpoint,
                keys: WebPushKeys(p256dh: subscription.p256dh, auth: subscription.auth),
                with: record.key)
            #expect(registered.provider == .webpush && registered.token.hasPrefix("webpush:"))
        }

        for (installation, title) in [(a, "from A"), (b, "from B")] {
            let sent = try ServerProcess.run(
                [
                    "push", "send", "--database", installation.database, "--email", "ada@example.com", "--code",
                    "homeport/core:push.test", "--title", title, "--thread", "chat:42",
                ])
            #expect(sent.status == 0 && sent.output.contains("1 push(es) queued"), "\(sent.output)\(sent.error)")
        }
        #expect(try eventually(timeout: .seconds(20)) { try service.messages().delivered.count == 2 })
        let (delivered, refused) = try service.messages()
        #expect(refused.isEmpty, "\(refused)")
        var routedTo: [String: String] = [:]
        for message in delivered {
            let routed = try await client.receivePush(try JSONSerialization.data(withJSONObject: message.payload))
            routedTo[routed.title] = routed.server
            #expect(routed.threadID == "\(routed.server):chat:42")
        }
        #expect(routedTo == ["from A": servers[0], "from B": servers[1]])
        #expect(Set(delivered.map(\.key)).count == 2, "each server signs with its own VAPID key")

        // The service says the subscription is gone to A's next push: A forgets it, B keeps it.
        try service.answer(subscription, with: [410])
        let again = try ServerProcess.run(
            [
                "push", "send", "--database", a.database, "--email", "ada@example.com", "--code",
                "homeport/core:push.test", "--title", "again",
            ])
        #expect(again.status == 0)
        func devices(_ installation: Installation) throws -> String {
            try ServerProcess.run(["push", "devices", "--database", installation.database, "--json"]).output
        }
        #expect(
            try eventually(timeout: .seconds(20)) {
                try devices(a).trimmingCharacters(in: .whitespacesAndNewlines) == "[]"
            })
        let kept = try devices(b)
        #expect(kept.contains("\"provider\":\"webpush\"") && kept.contains("webpush:"), "\(kept)")
        #expect(!kept.contains(subscription.endpoint), "the endpoint is never listed")

        // The command line registers another subscription with A, as the library does.
        let other = try service.subscribe()
        let environment = ["HOMEPORT_HOME": home.path]
        let cli = try ServerProcess.runClient(
            [
                "push", "register", servers[0], "--provider", "webpush", "--endpoint", other.endpoint, "--p256dh",
                other.p256dh, "--auth", other.auth, "--json",
            ], environment: environment)
        #expect(cli.status == 0, "\(cli.error)")
        #expect(cli.output.contains("\"provider\" : \"webpush\"") || cli.output.contains("\"provider\":\"webpush\""))
        #expect(try devices(a).contains("webpush:"))
        let token = String(repeating: "ab", count: 32)
        let full = ["--endpoint", other.endpoint, "--p256dh", other.p256dh, "--auth", other.auth]
        for (arguments, message) in [
            (["--provider", "webpush"] + full.dropLast(2), "needs --endpoint, --p256dh and --auth"),
            (["--provider", "gcm"], "--provider is apns, fcm or webpush"),
            (["--provider", "fcm"], "needs SERVER and the FCM registration token"),
            ([token, "--provider", "webpush"] + full, "not a DEVICE_TOKEN"),
        ] {
            let run = try ServerProcess.runClient(
                ["push", "register", servers[0]] + arguments, environment: environment)
            #expect(run.status == 2, "\(arguments): \(run.error)")
            #expect(run.error.contains(message), "\(arguments): \(run.error)")
        }

        // Signing in again ends the old session, and the server forgets the subscription with it;
        // the client, which keeps only its name, tells the app to register it again.
        _ = try await client.login(at: try b.address("127.0.0.1"), email: "ada@example.com", password: password)
        #expect(
            events.all.contains {
                if case .pushDevice(let server, .registrationFailed(let why)) = $0 {
                    return server == servers[1] && why.contains("register it again")
                }
                return false
            }, "\(events.all)")
    }
}
