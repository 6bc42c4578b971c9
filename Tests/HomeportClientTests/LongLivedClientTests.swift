import Foundation
import HomeportClient
import HomeportTestSupport
import Testing

/// A client that runs for hours (`notifications watch`, an app in the background): it notices a
/// network move by itself, and a server that keeps closing the stream cannot make it spin.
@Suite("A long-lived client: network moves and a stream that keeps closing")
struct LongLivedClientTests {
    @Test("a stream that sends one heartbeat and closes is backed off, not reconnected every second")
    func heartbeatThenClose() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let server = try RecordingListener(
            behaviour: .routesAndStreams(
                [HomeportPath.serverIdentity: Peer.identity(id)], streamPath: HomeportPath.notificationsStream,
                [[.write(SSE.head), .write(": heartbeat\n\n"), .close]]))
        let (client, _) = try scriptedClient(home, record: try record(id, primary: server.url))
        let naps = Naps()
        let watched = await watch(client.notificationStream(id.description, sleep: naps.sleep)) {
            $0.disconnects.count >= 6
        }
        #expect(watched.disconnects.count >= 6)
        // The first wait is at most 1 s; each failure doubles it (with jitter of half).
        let waits = naps.all.prefix(6).map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        #expect(waits.count == 6)
        #expect((waits.last ?? 0) >= 16, "waits \(waits): a heartbeat alone reset the back-off")
    }

    @Test(
        "a stream that replays an event already delivered, or one without an id, and closes is backed off: a repeat is no progress",
        arguments: [true, false])
    func replayThenClose(withID: Bool) async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let server = try RecordingListener(
            behaviour: .routesAndStreams(
                [HomeportPath.serverIdentity: Peer.identity(id)], streamPath: HomeportPath.notificationsStream,
                [
                    [
                        .write(SSE.head),
                        .write(
                            withID
                                ? SSE.notification(7, s: id)
                                : SSE.notification(7, s: id).replacingOccurrences(of: "id: 7\n", with: "")),
                        .close,
                    ]
                ]))
        let (client, _) = try scriptedClient(home, record: try record(id, primary: server.url))
        let naps = Naps()
        let watched = await watch(client.notificationStream(id.description, sleep: naps.sleep)) {
            $0.disconnects.count >= 7
        }
        // With an id: delivered once, on the first connection; every later connection only repeats
        // it. Without: delivered each time (a repeat cannot be told), but never counted as progress.
        if withID { #expect(watched.notifications.map(\.id) == [7]) }
        let waits = naps.all.prefix(7).map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        #expect(waits.count == 7)
        // The first connection delivered something new, so the wait after it is the first one
        // (at most 1 s); the six repeats after it double it each time (jitter: half).
        #expect((waits.last ?? 0) >= 16, "waits \(waits): a replayed event reset the back-off")
    }

    @Test("a client that reads its network path notices a move: the address verified at home gets nothing elsewhere")
    func notices() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let primary = try RecordingListener(
            behaviour: .routes([HomeportPath.serverIdentity: Peer.identity(id), HomeportPath.appInfo: Peer.appInfo(id)])
        )
        // The LAN address: this installation at home.
        let lan = try RecordingListener(
            host: "127.0.0.2",
            behaviour: .routes([HomeportPath.serverIdentity: Peer.identity(id), HomeportPath.appInfo: Peer.appInfo(id)])
        )
        var enrolled = try record(id, primary: primary.url, verified: [lan.url], path: "home")
        enrolled.lastWinner = lan.url
        let path = LockedBox("home")
        let directory = try ServerDirectory(directory: home.file("state"))
        try directory.save(enrolled)
        let vault = MemoryVault()
        try vault.store(token: "t0ken", for: enrolled.key)
        var configuration = ClientConfiguration()
        configuration.probeDeadline = .seconds(2)
        configuration.requestDeadline = .seconds(2)
        configuration.networkPathSource = { path.value }
        let client = HomeportClient(
            directory: directory, vault: vault, transport: HomeportClient.defaultTransport(),
            configuration: configuration, networkPath: "home")

        let atHome = try await client.appInfo(enrolled.key)
        #expect(atHome.via.url == lan.url)

        // At the café, the same LAN address is somebody else's machine; nobody told the client.
        path.value = "cafe"
        lan.behaviour = .routes([
            HomeportPath.serverIdentity: Peer.identity(InstanceID(UUID())), HomeportPath.appInfo: Peer.appInfo(id),
        ])
        let lanRequestsBefore = lan.heads("GET " + HomeportPath.appInfo).count
        let away = try await client.appInfo(enrolled.key)
        #expect(away.via.url == primary.url)
        #expect(client.networkPath == "cafe")
        #expect(
            lan.heads("GET " + HomeportPath.appInfo).count == lanRequestsBefore, "the token went to the café's machine")
    }
}
