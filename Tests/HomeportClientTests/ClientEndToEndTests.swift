import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

@Suite("Client end to end, against real homeport-server processes", .tags(.process))
struct ClientEndToEndTests {
    @Test("credentials reach only verified addresses of the installation; a dead primary fails over")
    func noLeaksAndFailover() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
        let theirs = try Installation(hosts: ["127.0.0.1"])
        let recorder = try RecordingListener(behaviour: .respond(status: 404, headers: [:], body: "{}"))
        let html = try RecordingListener(
            behaviour: .respond(
                status: 200, headers: ["Content-Type": "text/html"], body: "<!doctype html><form>Sign in</form>"))
        let redirector = try RecordingListener(
            host: "127.0.0.2",
            behaviour: .respond(status: 302, headers: ["Location": recorder.url + "/steal"], body: ""))
        let impostor = try RecordingListener(
            behaviour: .respond(
                status: 200, headers: ["Content-Type": "application/json"],
                body: #"{"product":"homeport","protocolVersion":1,"instanceId":"\#(UUID().uuidString.lowercased())"}"#))
        let spy = SpyTransport()
        let client = try makeClient(home, spy)

        guard
            case .signedIn(let record) = try await client.signup(
                at: try mine.address("127.0.0.1"), email: "ada@example.com", password: password)
        else {
            Issue.record("signup did not sign in")
            return
        }
        let server = record.key
        #expect(record.instanceID != nil)
        try await client.addAddress(try mine.address("127.0.0.2"), to: server)
        try await client.addAddress(try mine.address("::1"), to: server)
        try await client.addAddress(try mine.address("localhost"), to: server)

        let theirAddress = try theirs.address("127.0.0.1")
        let theirID = try #require(try theirs.identity())
        await #expect(throws: ClientError.identityMismatch(address: theirAddress.url, seen: theirID)) {
            try await client.addAddress(theirAddress, to: server)
        }
        await #expect(throws: ClientError.notAnAPI(address: html.url, answer: "an HTML page")) {
            try await client.addAddress(try ServerAddress(parsing: html.url, allowHTTP: true), to: server)
        }
        await #expect(throws: ClientError.self) {
            try await client.addAddress(try ServerAddress(parsing: redirector.url, allowHTTP: true), to: server)
        }
        await #expect(throws: ClientError.self) {
            try await client.addAddress(try ServerAddress(parsing: impostor.url, allowHTTP: true), to: server)
        }
        #expect(try client.directory.find(server).alternatives.count == 3, "only the real alternatives were kept")

        let first = try await client.appInfo(server)
        #expect(first.via.url == (try mine.address("127.0.0.1")).url)

        mine.stop("127.0.0.1")
        let failover = try await client.appInfo(server)
        #expect(failover.via.url != (try mine.address("127.0.0.1")).url)
        #expect(failover.info.instanceId == record.instanceID)

        for listener in [recorder, html, redirector, impostor] {
            #expect(!listener.sawCredential, "\(listener.url) got a credential")
        }
        #expect(recorder.requests.isEmpty, "the off-host redirect was not followed")
        let allowed = Set(["127.0.0.1", "127.0.0.2", "::1", "localhost"].map { "\($0):\(mine.ports[$0]!)" })
        #expect(spy.originsGivenToken.isSubset(of: allowed), "\(spy.originsGivenToken)")
        #expect(!spy.originsGivenToken.contains("127.0.0.1:\(theirs.ports["127.0.0.1"]!)"))
    }

    @Test("after a network path change nothing is sent before a fresh probe")
    func pathChange() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1", "127.0.0.2"])
        let spy = SpyTransport()
        let events = EventLog()
        let client = try makeClient(home, spy, events: events)
        let record = try await signUp(client, at: mine)
        try await client.addAddress(try mine.address("127.0.0.2"), to: record.key)
        _ = try await client.appInfo(record.key)
        _ = try await client.appInfo(record.key)  // reuses the winner on the same path

        client.networkPathChanged(to: "cafe")
        #expect(events.all.contains(.pathChanged("cafe")))
        spy.reset()
        let answer = try await client.appInfo(record.key)
        let requests = spy.requests
        let firstWithToken = try #require(requests.firstIndex { $0.headers["X-Session-Token"] != nil })
        let probedBefore = requests[..<firstWithToken].contains {
            $0.url.path == "/api/v1/server-identity" && $0.url.port == requests[firstWithToken].url.port
        }
        #expect(probedBefore, "the address was probed on the new path before the token went there")
        #expect(
            requests.filter { $0.url.path == "/api/v1/server-identity" }.allSatisfy {
                $0.headers["X-Session-Token"] == nil
            })
        #expect(answer.info.instanceId == record.instanceID)
    }

    @Test("a blackholed preferred address does not stop the choice, and gets no credential")
    func blackhole() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1", "127.0.0.2"])
        let hole = try RecordingListener(host: "127.0.0.1", behaviour: .blackhole)
        let spy = SpyTransport()
        let client = try makeClient(home, spy)
        let record = try await signUp(client, at: mine)
        // Make the blackhole the most preferred address (the last winner) of the same record.
        var rigged = record
        rigged.alternatives = [
            .init(address: try ServerAddress(parsing: hole.url, allowHTTP: true), verifiedPaths: ["home": Date()]),
            .init(address: try mine.address("127.0.0.2"), verifiedPaths: ["home": Date()]),
        ]
        rigged.lastWinner = hole.url
        try client.directory.save(rigged)
        mine.stop("127.0.0.1")
        let answer = try await client.appInfo(record.key)
        #expect(answer.via.url == (try mine.address("127.0.0.2")).url)
        #expect(!hole.requests.isEmpty, "the blackhole was probed")
        #expect(!hole.sawCredential)
    }

    @Test(
        "identity change of a server whose key is not pinned: the event fires, alternatives become unverified, the primary keeps working"
    )
    func identityChange() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1", "127.0.0.2"])
        let events = EventLog()
        let client = try makeClient(home, SpyTransport(), events: events)
        var record = try await signUp(client, at: mine)
        try await client.addAddress(try mine.address("127.0.0.2"), to: record.key)
        let old = try #require(record.instanceID)
        // A record whose key is not pinned (as one signed in before its server had a key): the
        // primary keeps the trust the person gave it (a pinned one gets nothing without the key).
        record = try #require(try client.directory.update(record.key) { $0.publicKey = nil })

        mine.stop()
        let reset = try ServerProcess.run(["identity", "reset", "--replicas-stopped", "--database", mine.database])
        #expect(reset.status == 0)
        try mine.start()

        let answer = try await client.appInfo(record.key)
        #expect(answer.via.url == (try mine.address("127.0.0.1")).url)
        let new = try #require(answer.info.instanceId)
        #expect(new != old)
        let changed = events.all.contains { event in
            if case .identityChanged(_, let was, let now, let alternatives) = event {
                return was == old && now == new && alternatives == [(try? mine.address("127.0.0.2"))?.url ?? ""]
            }
            return false
        }
        #expect(changed)
        let updated = try client.directory.find(new.description)
        #expect(updated.alternatives.allSatisfy { !$0.isVerified })
        #expect(try await client.appInfo(new.description).info.instanceId == new, "the primary keeps working")
        // The app's handle is the same after the reset: stored before, it names the moved record.
        #expect(updated.localID == record.localID && updated.key != record.key)
        #expect(client.directory.server(record.localID)?.key == new.description)
        #expect(try await client.appInfo(record.localID.uuidString).info.instanceId == new, "calls take the handle")
    }

    @Test("logout with the server stopped still erases the local session; a revoked token signs the account out")
    func signOut() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1"])
        let events = EventLog()
        let client = try makeClient(home, SpyTransport(), events: events)
        let record = try await signUp(client, at: mine)
        let vault = try FileVault(directory: home.file("vault"))
        let token = try #require(try vault.token(for: record.key))

        // Revoked on the server (signed out elsewhere): the next request signs the account out here.
        _ = try RawHTTP.request(
            port: mine.ports["127.0.0.1"]!, method: "DELETE", path: "/_allauth/app/v1/auth/session",
            headers: [("X-Session-Token", token)])
        await #expect(throws: ClientError.signedOut(server: record.key)) { try await client.appInfo(record.key) }
        #expect(events.all.contains(.signedOut(server: record.key)))
        #expect(try vault.token(for: record.key) == nil)

        _ = try await client.login(at: try mine.address("127.0.0.1"), email: "ada@example.com", password: password)
        #expect(try vault.token(for: record.key) != nil)
        mine.stop()
        let outcome = try await client.logout(record.key)
        #expect(outcome != .revoked, "the server was stopped: nothing confirmed the end of the session")
        #expect(try vault.token(for: record.key) == nil)
        #expect(try client.directory.find(record.key).signedOut)

        try await client.remove(record.key)
        #expect(client.directory.all.isEmpty)
    }
}

extension Installation {
    /// The installation's id, read from its identity route.
    func identity() throws -> InstanceID? {
        let host = hosts[0]
        let response = try RawHTTP.request(host: host, port: ports[host]!, path: "/api/v1/server-identity")
        return (response.jsonObject?["instanceId"] as? String).flatMap(InstanceID.init)
    }
}

/// Signs `client` up at the installation's first host and returns the enrolled record.
func signUp(_ client: HomeportClient, at installation: Installation) async throws -> ServerRecord {
    guard
        case .signedIn(let record) = try await client.signup(
            at: try installation.address(installation.hosts[0]), email: "ada@example.com", password: password)
    else { throw RawHTTPError("signup did not sign in") }
    return record
}
