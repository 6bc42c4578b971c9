import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

/// A client over one directory holding `records`, each with its own token.
func multiServerClient(
    _ home: TemporaryDirectory, records: [ServerRecord], path: String = "home", events: EventLog? = nil,
    configure: (inout ClientConfiguration) -> Void = { _ in }
) throws -> (client: HomeportClient, vault: MemoryVault, spy: SpyTransport) {
    let vault = MemoryVault()
    let directory = try ServerDirectory(directory: home.file(UUID().uuidString))
    for (index, record) in records.enumerated() {
        try directory.save(record)
        try vault.store(token: "token-\(index)", for: record.key)
    }
    var configuration = ClientConfiguration()
    configuration.probeDeadline = .seconds(2)
    configuration.requestDeadline = .seconds(2)
    configure(&configuration)
    let spy = SpyTransport()
    let client = HomeportClient(
        directory: directory, vault: vault, transport: spy, configuration: configuration, networkPath: path,
        onEvent: { event in events?.add(event) })
    return (client, vault, spy)
}

/// Canned answers of the push API.
enum PushPeer {
    static let device = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"

    static func catalogue(_ version: String, title: String = "Turn ended") -> RecordingListener.Canned {
        .init(
            200, ["Content-Type": "application/json", "ETag": "\"\(version)\""],
            #"{"version":"\#(version)","codes":[{"code":"homeport/core:chat.turn-ended","title":"\#(title)"}]}"#)
    }

    static let notModified = RecordingListener.Canned(304, ["ETag": "\"v\""], "")

    /// A Homeport server of `id` with the push API: device registrations, the catalogue, mutes.
    static func routes(_ id: InstanceID, catalogue: RecordingListener.Canned? = nil)
        -> [String: RecordingListener.Canned]
    {
        var routes: [String: RecordingListener.Canned] = [
            HomeportPath.serverIdentity: Peer.identity(id),
            "POST " + HomeportPath.pushDevices: .init(
                200, Peer.json, #"{"environment":"sandbox","token":"\#(device)"}"#),
            "DELETE " + HomeportPath.pushDevice(device): .init(204),
            "DELETE " + HomeportPath.pushDevice(String(repeating: "ab", count: 8)): .init(204),
            "GET " + HomeportPath.notificationsMutes: .init(200, Peer.json, #"{"threads":["chat:42"]}"#),
            "PUT " + HomeportPath.notificationsMute("chat:42"): .init(204),
            "DELETE " + HomeportPath.notificationsMute("chat:42"): .init(204),
            "DELETE " + AllauthAppPath.path(AllauthAppPath.session): Peer.signedOutEnvelope,
        ]
        if let catalogue { routes["GET " + HomeportPath.notificationsCatalogue] = catalogue }
        return routes
    }

    /// A push from `s` as its server builds it.
    static func payload(_ s: InstanceID?, mv: String, id: Int64 = 42) throws -> Data {
        try PushPayload(
            aps: .init(
                alert: .init(title: "Turn ended"),
                threadID: s.map { NotificationThread.namespaced("chat:\(id)", server: $0) }),
            appData: PushAppData(s: s, c: "homeport/core:chat.turn-ended", id: id, mv: mv)
        ).encoded()
    }
}

extension RecordingListener {
    /// The request heads whose request line starts with `prefix` (`"POST /api/v1/push/devices"`),
    /// a query after it or not.
    func heads(_ prefix: String) -> [String] {
        requests.filter { $0.hasPrefix(prefix + " ") || $0.hasPrefix(prefix + "?") }
    }
}

@Suite("Push on the client: registrations follow sessions, catalogues stay per server, mutes")
struct PushClientTests {
    /// A scripted server of a fresh id with the push API (and `catalogue`), and a client enrolled
    /// with it only.
    func onePeer(
        _ home: TemporaryDirectory, catalogue: RecordingListener.Canned? = nil, events: EventLog? = nil,
        configure: (inout ClientConfiguration) -> Void = { _ in }
    ) throws -> (id: InstanceID, peer: RecordingListener, client: HomeportClient, vault: MemoryVault) {
        let id = InstanceID(UUID())
        let peer = try RecordingListener(behaviour: .routes(PushPeer.routes(id, catalogue: catalogue)))
        let (client, vault, _) = try multiServerClient(
            home, records: [try record(id, primary: peer.url)], events: events, configure: configure)
        return (id, peer, client, vault)
    }

    @Test("a device token is registered with every server signed in on, through the session's send path")
    func registerEverywhere() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let (a, b, c) = (InstanceID(UUID()), InstanceID(UUID()), InstanceID(UUID()))
        let peerA = try RecordingListener(behaviour: .routes(PushPeer.routes(a)))
        let peerB = try RecordingListener(behaviour: .routes(PushPeer.routes(b)))
        let peerC = try RecordingListener(behaviour: .routes(PushPeer.routes(c)))
        var signedOut = try record(c, primary: peerC.url)
        signedOut.signedOut = true
        let (client, _, _) = try multiServerClient(
            home, records: [try record(a, primary: peerA.url), try record(b, primary: peerB.url), signedOut])

        let outcomes = try await client.setDeviceToken(PushPeer.device.uppercased(), environment: .sandbox)
        let registration = PushDeviceRegistration(token: PushPeer.device, environment: .sandbox)
        #expect(outcomes == [a.description: .registered(registration), b.description: .registered(registration)])
        for (peer, token) in [(peerA, "token-0"), (peerB, "token-1")] {
            let posts = peer.heads("POST " + HomeportPath.pushDevices)
            #expect(posts.count == 1)
            #expect(posts.first?.contains("X-Session-Token: \(token)") == true)
        }
        #expect(peerC.heads("POST " + HomeportPath.pushDevices).isEmpty, "not signed in there")
        #expect(client.directory.devices.registration(for: a.description) == registration)
        #expect(client.directory.devices.device == registration)

        await #expect(throws: ClientError.self) {
            try await client.registerDevice(token: "not-hex", environment: .production, with: a.description)
        }
        await #expect(throws: ClientError.self) {
            try await client.registerDevice(token: "abc", environment: .production, with: a.description)
        }
        #expect(peerA.heads("POST " + HomeportPath.pushDevices).count == 1, "nothing sent for a bad token")
    }

    @Test("a new device token replaces the old one on each server: the old one is withdrawn")
    func tokenChange() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let (a, peer, client, _) = try onePeer(home)
        let old = String(repeating: "ab", count: 8)
        try await client.setDeviceToken(old, environment: .sandbox)
        try await client.setDeviceToken(PushPeer.device, environment: .sandbox)
        #expect(peer.heads("DELETE " + HomeportPath.pushDevice(old)).count == 1)
        #expect(client.directory.devices.registration(for: a.description)?.token == PushPeer.device)
    }

    @Test("the device token never reaches an address that is not verified for the session")
    func onlyVerifiedAddresses() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let a = InstanceID(UUID())
        // On another network, a plain-HTTP primary must answer as the installation first; this
        // one answers as somebody else.
        let impostor = try RecordingListener(behaviour: .routes(PushPeer.routes(InstanceID(UUID()))))
        let (client, _, _) = try multiServerClient(
            home, records: [try record(a, primary: impostor.url, path: "home")], path: "cafe")
        await #expect(throws: ClientError.self) {
            try await client.registerDevice(token: PushPeer.device, environment: .sandbox, with: a.description)
        }
        #expect(!impostor.sawCredential)
        #expect(!impostor.requests.contains { $0.contains(PushPeer.device) })
    }

    @Test("logout withdraws the registration first; offline, logout and removal still erase locally")
    func unregisterBeforeLogout() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let events = EventLog()
        let (a, peer, client, vault) = try onePeer(home, events: events)
        try await client.registerDevice(token: PushPeer.device, environment: .sandbox, with: a.description)
        #expect(try await client.logout(a.description) == .revoked)
        let order = peer.requests.compactMap { head -> String? in
            let line = head.split(separator: "\r\n").first.map(String.init) ?? ""
            return line.hasPrefix("DELETE") ? line : nil
        }
        #expect(order.count == 2)
        #expect(order.first?.contains(HomeportPath.pushDevice(PushPeer.device)) == true, "unregistered before logout")
        #expect(order.last?.contains(AllauthAppPath.path(AllauthAppPath.session)) == true)
        #expect(events.all.contains(.pushDevice(server: a.description, outcome: .unregistered)))
        #expect(client.directory.devices.registration(for: a.description) == nil)
        #expect(try vault.token(for: a.description) == nil)

        // Offline: the server is gone, and logout still erases the session and the registration.
        let b = InstanceID(UUID())
        let gone = try RecordingListener(behaviour: .routes(PushPeer.routes(b, catalogue: PushPeer.catalogue("b1"))))
        let (offline, offlineVault, _) = try multiServerClient(
            home, records: [try record(b, primary: gone.url)], events: events)
        try await offline.registerDevice(token: PushPeer.device, environment: .sandbox, with: b.description)
        _ = try await offline.syncCatalogue(b.description).version
        gone.stop()
        #expect(try await offline.logout(b.description) != .revoked)
        #expect(try offlineVault.token(for: b.description) == nil)
        #expect(offline.directory.devices.registration(for: b.description) == nil)
        #expect(
            events.all.contains {
                if case .pushDevice(b.description, .unregistrationNotConfirmed) = $0 { return true }
                return false
            })
        try await offline.remove(b.description)
        #expect(offline.directory.all.isEmpty)
        #expect(offline.directory.catalogues.catalogue(for: b.description) == nil, "its catalogue goes with it")
    }

    @Test("removing a signed-in server offline removes it and forgets its registration")
    func removeOffline() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let (a, peer, client, vault) = try onePeer(home, catalogue: PushPeer.catalogue("v1"))
        try await client.registerDevice(token: PushPeer.device, environment: .sandbox, with: a.description)
        try await client.syncCatalogue(a.description)
        peer.stop()
        try await client.remove(a.description)
        #expect(client.directory.all.isEmpty)
        #expect(try vault.token(for: a.description) == nil)
        #expect(client.directory.devices.registration(for: a.description) == nil)
        #expect(client.directory.catalogues.catalogue(for: a.description) == nil)
    }

    @Test("pushes from A never resync B; ten pushes at once with a new mv fetch A's catalogue once")
    func cataloguesDoNotFight() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let (a, b) = (InstanceID(UUID()), InstanceID(UUID()))
        let peerA = try RecordingListener(behaviour: .routes(PushPeer.routes(a, catalogue: PushPeer.catalogue("a1"))))
        let peerB = try RecordingListener(behaviour: .routes(PushPeer.routes(b, catalogue: PushPeer.catalogue("b1"))))
        let (client, _, _) = try multiServerClient(
            home, records: [try record(a, primary: peerA.url), try record(b, primary: peerB.url)]
        ) { $0.catalogueResyncInterval = .zero }
        let catalogueGET = "GET " + HomeportPath.notificationsCatalogue

        // First pushes: each server's catalogue is fetched once, from that server.
        let first = try await client.receivePush(try PushPeer.payload(a, mv: "a1"))
        #expect(first.server == a.description)
        #expect(first.resyncDue == false)
        #expect(first.codeTitle == "Turn ended")
        _ = try await client.receivePush(try PushPeer.payload(b, mv: "b1"))
        #expect(peerA.heads(catalogueGET).count == 1)
        #expect(peerB.heads(catalogueGET).count == 1)

        // Alternating pushes: no more fetches anywhere (one shared catalogue would fetch on every one).
        for index in 0..<6 {
            let server = index.isMultiple(of: 2) ? a : b
            let routed = try await client.receivePush(try PushPeer.payload(server, mv: server == a ? "a1" : "b1"))
            #expect(routed.server == server.description)
            #expect(!routed.resyncDue)
        }
        #expect(peerA.heads(catalogueGET).count == 1)
        #expect(peerB.heads(catalogueGET).count == 1, "pushes from A made the client resync B")

        // A's catalogue changes: ten pushes at once, one conditional fetch, from A only.
        peerA.behaviour = .routes(PushPeer.routes(a, catalogue: PushPeer.catalogue("a2", title: "Your turn")))
        try await withThrowingTaskGroup(of: RoutedPush.self) { group in
            for _ in 0..<10 { group.addTask { try await client.receivePush(try PushPeer.payload(a, mv: "a2")) } }
            for try await routed in group { #expect(routed.server == a.description) }
        }
        let fetches = peerA.heads(catalogueGET)
        #expect(fetches.count == 2)
        #expect(fetches.last?.contains("If-None-Match: \"a1\"") == true)
        #expect(peerB.heads(catalogueGET).count == 1)
        #expect(try client.keptCatalogue(a.description)?.codes.first?.title == "Your turn")
        #expect(try client.keptCatalogue(b.description)?.version == "b1")

        // The catalogue persists with the rest of the client's state.
        let reopened = try ServerDirectory(directory: (client.directory.path as NSString).deletingLastPathComponent)
        #expect(reopened.catalogues.catalogue(for: a.description)?.version == "a2")
        #expect(reopened.catalogues.catalogue(for: b.description)?.version == "b1")
    }

    @Test("a 304 keeps the catalogue; a push whose resync fails is routed all the same")
    func notModifiedAndFailures() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let (a, peer, client, _) = try onePeer(home, catalogue: PushPeer.catalogue("a1")) {
            $0.catalogueResyncInterval = .zero
        }
        try await client.syncCatalogue(a.description)
        peer.behaviour = .routes(PushPeer.routes(a, catalogue: PushPeer.notModified))
        #expect(try await client.syncCatalogue(a.description).version == "a1")
        peer.behaviour = .routes(
            PushPeer.routes(a, catalogue: .init(200, ["Content-Type": "text/html"], "<html>sign in</html>")))
        let routed = try await client.receivePush(try PushPeer.payload(a, mv: "a9"))
        #expect(routed.server == a.description)
        #expect(routed.resyncDue, "the resync failed, so it is still due")
        #expect(try client.keptCatalogue(a.description)?.version == "a1")
    }

    @Test("routing fails closed for a push naming no enrolled server, and fetches nothing")
    func unknownServerFetchesNothing() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let (_, peer, client, _) = try onePeer(home, catalogue: PushPeer.catalogue("a1"))
        let stranger = InstanceID(UUID())
        await #expect(throws: PushRoutingFailure.unknownServer(stranger)) {
            try await client.receivePush(try PushPeer.payload(stranger, mv: "x"))
        }
        #expect(peer.heads("GET " + HomeportPath.notificationsCatalogue).isEmpty)
    }

    @Test("mutes: list, mute and unmute by the server's own thread name; another server's thread is refused")
    func mutes() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let (a, b) = (InstanceID(UUID()), InstanceID(UUID()))
        let peer = try RecordingListener(behaviour: .routes(PushPeer.routes(a)))
        let (client, _, _) = try multiServerClient(home, records: [try record(a, primary: peer.url)])
        #expect(try await client.mutedThreads(a.description) == ["chat:42"])
        #expect(try await client.mute("chat:42", on: a.description) == "chat:42")
        #expect(try await client.unmute("\(a):chat:42", on: a.description) == "chat:42", "a push's thread id works")
        #expect(peer.heads("PUT " + HomeportPath.notificationsMute("chat:42")).count == 1)
        #expect(peer.heads("DELETE " + HomeportPath.notificationsMute("chat:42")).count == 1)
        let before = peer.requests.count
        await #expect(throws: ClientError.self) { try await client.mute("\(b):chat:42", on: a.description) }
        await #expect(throws: ClientError.self) { try await client.mute("chat/../42", on: a.description) }
        await #expect(throws: ClientError.self) { try await client.mute("", on: a.description) }
        #expect(peer.requests.count == before, "nothing sent for a thread that is not this server's")
    }

    @Test("a caller may add conditions to a request, never a cookie, a credential or a Host")
    func extraHeaders() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let (a, peer, client, _) = try onePeer(home)
        for name in ["Cookie", "authorization", "Host", "X-Session-Token", "Accept"] {
            await #expect(throws: ClientError.self, "\(name)") {
                try await client.send("GET", HomeportPath.notificationsMutes, to: a.description, headers: [name: "x"])
            }
        }
        #expect(peer.requests.isEmpty, "nothing was sent")
        _ = try await client.send(
            "GET", HomeportPath.notificationsMutes, to: a.description, headers: ["If-None-Match": "\"v\""])
        #expect(peer.heads("GET " + HomeportPath.notificationsMutes).first?.contains("If-None-Match: \"v\"") == true)
    }

    @Test("an API refusal says its code and field")
    func refusals() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let a = InstanceID(UUID())
        var routes = PushPeer.routes(a)
        routes["POST " + HomeportPath.pushDevices] = .init(
            400, Peer.json, #"{"error":{"code":"invalid_field","message":"Not a token.","field":"token"}}"#)
        let peer = try RecordingListener(behaviour: .routes(routes))
        let (client, _, _) = try multiServerClient(home, records: [try record(a, primary: peer.url)])
        await #expect(
            throws: ClientError.refused(
                address: peer.url, status: 400, code: "invalid_field", message: "Not a token.", field: "token")
        ) {
            try await client.registerDevice(token: PushPeer.device, environment: .sandbox, with: a.description)
        }
        #expect(client.directory.devices.registration(for: a.description) == nil)
    }
}
