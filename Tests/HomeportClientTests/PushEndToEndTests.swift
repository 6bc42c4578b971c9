import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Synchronization
import Testing

/// Two installations push to one device token through the APNs stand-in; real homeport-server
/// processes; the client routes, resyncs and watches.
@Suite("Push end to end: two installations, one device token, real servers", .tags(.process, .interop))
struct PushEndToEndTests {
    static let device = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
    static let code = "homeport/core:chat.turn-ended"
    /// The one code every Homeport server's catalogue has.
    static let testCode = "homeport/core:push.test"

    /// `homeport-server push send` for ada on `installation`.
    @discardableResult
    func pushSend(
        _ installation: Installation, title: String, code: String = Self.code, thread: String = "chat:42", id: Int = 42,
        extra: [String]
    ) throws -> String {
        let result = try ServerProcess.run(
            [
                "push", "send", "--database", installation.database, "--email", "ada@example.com", "--code", code,
                "--title", title, "--thread", thread, "--id", String(id),
            ] + extra)
        #expect(result.status == 0, "\(result.error)")
        return result.output
    }

    func catalogueFetches(_ spy: SpyTransport, _ installation: Installation) -> Int {
        let port = installation.ports["127.0.0.1"]
        return spy.requests.filter { $0.url.path == HomeportPath.notificationsCatalogue && $0.url.port == port }.count
    }

    @Test(
        "each payload carries its own s, goes to its own server, and never makes the client resync the other's catalogue"
    )
    func twoInstallations() async throws {
        let home = try TemporaryDirectory()
        let files = try TemporaryDirectory()
        defer {
            home.remove()
            files.remove()
        }
        let standIn = try APNsStandIn()
        let apns = standIn.serverArguments
        // B has a plugin A lacks: the two catalogues, and so their versions, differ.
        let chat = #"{"code":"\#(Self.code)","title":"Turn ended"}"#
        try #"{"codes":[\#(chat)]}"#.write(toFile: files.file("a.json"), atomically: true, encoding: .utf8)
        try #"{"codes":[\#(chat),{"code":"books/loans:loan.due","title":"A loan is due"}]}"#.write(
            toFile: files.file("b.json"), atomically: true, encoding: .utf8)
        let aCatalogue = ["--catalogue", files.file("a.json")]
        let bCatalogue = ["--catalogue", files.file("b.json")]
        let a = try Installation(hosts: ["127.0.0.1"], extra: apns + aCatalogue)
        let b = try Installation(hosts: ["127.0.0.1"], extra: apns + bCatalogue)
        let spy = SpyTransport()
        let events = EventLog()
        // No pause between resyncs: a fight between the two catalogues could not hide behind it.
        let client = try makeClient(home, spy, events: events) { $0.catalogueResyncInterval = .zero }

        guard
            case .signedIn(let recordA) = try await client.signup(
                at: try a.address("127.0.0.1"), email: "ada@example.com", password: password)
        else {
            Issue.record("no session on A")
            return
        }
        // The token is set while signed in on A only; signing in on B registers it there too.
        let outcomes = try await client.setDeviceToken(Self.device, environment: .sandbox)
        #expect(outcomes[recordA.key] == .registered(PushDeviceRegistration(token: Self.device, environment: .sandbox)))
        guard
            case .signedIn(let recordB) = try await client.signup(
                at: try b.address("127.0.0.1"), email: "ada@example.com", password: password)
        else {
            Issue.record("no session on B")
            return
        }
        #expect(
            events.all.contains(
                .pushDevice(
                    server: recordB.key,
                    outcome: .registered(PushDeviceRegistration(token: Self.device, environment: .sandbox)))))
        let (serverA, serverB) = (recordA.key, recordB.key)
        #expect(serverA != serverB)

        // One push from each: same thread name, same object id, on two servers.
        try pushSend(a, title: "from A 0", extra: ["--apns-topic", APNsStandIn.topic] + aCatalogue)
        try pushSend(b, title: "from B 0", extra: ["--apns-topic", APNsStandIn.topic] + bCatalogue)
        #expect(standIn.waitForRequests(2))
        func payloads() throws -> [Data] {
            try standIn.requests().compactMap { $0["payload"] }.map { try JSONSerialization.data(withJSONObject: $0) }
        }
        var seen: [String: RoutedPush] = [:]
        for payload in try payloads() {
            let routed = try await client.receivePush(payload)
            seen[routed.title] = routed
        }
        let fromA = try #require(seen["from A 0"])
        let fromB = try #require(seen["from B 0"])
        #expect(fromA.server == serverA)
        #expect(fromB.server == serverB)
        #expect(fromA.threadID == "\(serverA):chat:42")
        #expect(fromB.threadID == "\(serverB):chat:42")
        #expect(fromA.deepLink == fromB.deepLink, "the same link text…")
        #expect(fromA.server != fromB.server, "…opened on two different servers")
        #expect(
            fromA.catalogueVersion != fromB.catalogueVersion, "the catalogues differ, so one shared copy would fight")
        #expect(!fromA.resyncDue && !fromB.resyncDue)
        #expect(catalogueFetches(spy, a) == 1)
        #expect(catalogueFetches(spy, b) == 1)
        #expect(try client.keptCatalogue(serverB)?.codes.contains { $0.code == "books/loans:loan.due" } == true)
        #expect(try client.keptCatalogue(serverA)?.codes.contains { $0.code == "books/loans:loan.due" } == false)

        // More pushes from both, interleaved: no catalogue is fetched again.
        for index in 1...3 {
            try pushSend(a, title: "from A \(index)", extra: ["--apns-topic", APNsStandIn.topic] + aCatalogue)
            try pushSend(b, title: "from B \(index)", extra: ["--apns-topic", APNsStandIn.topic] + bCatalogue)
        }
        #expect(standIn.waitForRequests(8))
        for payload in try payloads().dropFirst(2) {
            let routed = try await client.receivePush(payload)
            #expect(routed.server == (routed.title.hasPrefix("from A") ? serverA : serverB))
            #expect(!routed.resyncDue)
        }
        #expect(catalogueFetches(spy, a) == 1, "pushes from B made the client resync A")
        #expect(catalogueFetches(spy, b) == 1, "pushes from A made the client resync B")
        #expect(standIn.requests().allSatisfy { $0["device"] as? String == Self.device })

        // Logout withdraws the token from A only.
        try await client.logout(serverA)
        #expect(events.all.contains(.pushDevice(server: serverA, outcome: .unregistered)))
        let devicesA = try ServerProcess.run(["push", "devices", "--database", a.database, "--json"])
        let devicesB = try ServerProcess.run(["push", "devices", "--database", b.database, "--json"])
        #expect(devicesA.output.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        #expect(devicesB.output.contains(String(Self.device.prefix(8))))
    }

    @Test("watch gets a notification from push send, and resumes with Last-Event-ID after the server restarts")
    func watchAcrossRestart() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1"])
        let client = try makeClient(home, SpyTransport())
        guard
            case .signedIn(let record) = try await client.signup(
                at: try mine.address("127.0.0.1"), email: "ada@example.com", password: password)
        else {
            Issue.record("no session")
            return
        }
        let step = Mutex(0)
        let server = Unchecked(mine)
        let stream = client.notificationStream(record.key) { _ in try await Task.sleep(for: .milliseconds(200)) }
        let watched = await watch(stream, until: { $0.ids.count >= 2 }) { watched in
            // Each step once, in order: send on the first connection; restart after the first
            // notification, with one more sent while the server is down.
            let next = step.withLock { step -> Int? in
                switch (step, watched.events.last) {
                case (0, .connected?):
                    step = 1
                    return 1
                case (1, .notification?):
                    step = 2
                    return 2
                default: return nil
                }
            }
            do {
                if next == 1 { try pushSend(server.value, title: "before the restart", code: Self.testCode, extra: []) }
                if next == 2 {
                    server.value.stop()
                    try pushSend(
                        server.value, title: "while it was down", code: Self.testCode, thread: "chat:43", id: 43,
                        extra: [])
                    try server.value.start()
                }
            } catch {
                Issue.record("\(error)")
            }
        }
        #expect(watched.notifications.map(\.title) == ["before the restart", "while it was down"])
        #expect(watched.notifications.allSatisfy { $0.s == record.instanceID })
        let first = try #require(watched.notifications.first?.id)
        #expect(
            watched.events.contains {
                if case .connected(_, let after) = $0 { return after == String(first) }
                return false
            }, "reconnected with Last-Event-ID")
        #expect(!watched.disconnects.isEmpty)

        // The command line: resume after event 0, so it prints both.
        let result = try ServerProcess.runClient(
            ["notifications", "watch", record.key, "--json", "--count", "2", "--last-event-id", "0"],
            environment: ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"])
        #expect(result.status == 0, "\(result.error)")
        let titles = result.output.split(separator: "\n").compactMap {
            ((try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any])?["notification"]
                as? [String: Any]
        }.compactMap { $0["title"] as? String }
        #expect(titles == ["before the restart", "while it was down"])
    }
}

/// A value handed to a closure that may run on another thread, where the test knows only one
/// thread uses it at a time.
final class Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
