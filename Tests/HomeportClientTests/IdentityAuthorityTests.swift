import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

/// Who may say which installation a server is (issue 8, findings 2, 5 and 8).
@Suite("Identity: learned from the primary, claimed only with proof, matched on every field")
struct IdentityAuthorityTests {
    @Test("an alternative whose app-info reports another id loses its verification; the record keeps its id")
    func alternativeCannotChangeTheIdentity() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1"])
        let events = EventLog()
        let client = try makeClient(home, SpyTransport(), events: events)
        let enrolled = try await signUp(client, at: mine)
        let id = try #require(enrolled.instanceID)
        // A server without a key, where the id is all a probe can check (with a pinned key the
        // liar would not even pass the probe; see InstallationKeyClientTests).
        _ = try client.directory.update(enrolled.key) { $0.publicKey = nil }
        let other = InstanceID(UUID())
        let liar = try RecordingListener(
            host: "127.0.0.2",
            behaviour: .routes([
                HomeportPath.serverIdentity: Peer.identity(id), HomeportPath.appInfo: Peer.appInfo(other),
            ]))
        let liarAddress = try ServerAddress(parsing: liar.url, allowHTTP: true)
        try await client.addAddress(liarAddress, to: enrolled.key)
        mine.stop()

        await #expect(throws: ClientError.self) { try await client.appInfo(enrolled.key) }
        let stored = try #require(client.directory.server(id.description))
        #expect(stored.instanceID == id)
        #expect(client.directory.server(other.description) == nil)
        #expect(stored.alternatives.first { $0.address == liarAddress }?.isVerified == false)
        let vault = try FileVault(directory: home.file("vault"))
        #expect(try vault.token(for: id.description) != nil, "the credential stays under the enrolled id")
        #expect(try vault.token(for: other.description) == nil)
        #expect(!events.all.contains { if case .identityChanged = $0 { true } else { false } })
    }

    @Test("a sign-in at a new address that claims an enrolled id, and is not that installation, changes nothing")
    func unprovenClaimIsRefused() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1"])
        let client = try makeClient(home, SpyTransport())
        let enrolled = try await signUp(client, at: mine)
        let id = try #require(enrolled.instanceID)
        let vault = try FileVault(directory: home.file("vault"))
        let adasToken = try #require(try vault.token(for: enrolled.key))
        let claimant = try RecordingListener(
            host: "127.0.0.2",
            behaviour: .routes([
                "POST " + AllauthAppPath.path(AllauthAppPath.login): Peer.signedIn(
                    token: "claimants-token", email: "mallory@example.com"),
                "DELETE " + AllauthAppPath.path(AllauthAppPath.session): Peer.signedOutEnvelope,
                HomeportPath.serverIdentity: Peer.identity(id), HomeportPath.appInfo: Peer.appInfo(id),
            ]))
        let claimantAddress = try ServerAddress(parsing: claimant.url, allowHTTP: true)

        await #expect(throws: ClientError.self) {
            try await client.login(at: claimantAddress, email: "mallory@example.com", password: password)
        }
        let stored = try #require(client.directory.server(id.description))
        #expect(stored.primary == enrolled.primary, "the primary was not replaced")
        #expect(stored.email == "ada@example.com")
        #expect(!stored.alternatives.contains { $0.address == claimantAddress })
        #expect(try vault.token(for: id.description) == adasToken, "the live session was not overwritten")
        #expect(
            claimant.requests.contains { $0.hasPrefix("DELETE " + AllauthAppPath.path(AllauthAppPath.session)) },
            "the session the claimant handed out was given back")
    }

    @Test("a claim with nothing to confirm it (the enrolled addresses are down) is refused")
    func unconfirmableClaimIsRefused() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1", "127.0.0.2"])
        let client = try makeClient(home, SpyTransport())
        let enrolled = try await signUp(client, at: mine)
        mine.stop("127.0.0.1")
        await #expect(throws: ClientError.self) {
            try await client.login(at: try mine.address("127.0.0.2"), email: "ada@example.com", password: password)
        }
        #expect(try client.directory.find(enrolled.key).primary == enrolled.primary)
    }

    @Test("a new address proven to be the installation becomes the primary; the live session it replaces is ended")
    func provenClaimReplacesAndEndsTheOldSession() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1", "127.0.0.2"])
        let client = try makeClient(home, SpyTransport())
        let enrolled = try await signUp(client, at: mine)
        let vault = try FileVault(directory: home.file("vault"))
        let adasToken = try #require(try vault.token(for: enrolled.key))
        let second = try mine.address("127.0.0.2")
        guard case .signedIn = try await client.signup(at: second, email: "cy@example.com", password: password)
        else { throw RawHTTPError("signup at the second address did not sign in") }

        let stored = try client.directory.find(enrolled.key)
        #expect(stored.primary == second)
        #expect(stored.email == "cy@example.com")
        #expect(stored.alternatives.contains { $0.address == enrolled.primary && $0.isVerified })
        let old = try RawHTTP.request(
            port: mine.ports["127.0.0.1"]!, path: HomeportPath.appInfo, headers: [("X-Session-Token", adasToken)])
        #expect(old.status == 401, "the replaced session was ended on the server")
        #expect(try vault.token(for: enrolled.key) != adasToken)
    }

    static let badIdentities: [(String, String)] = [
        (#"{"product":"","protocolVersion":1,"instanceId":"ID"}"#, "empty product"),
        (#"{"product":"bookorbit","protocolVersion":1,"instanceId":"ID"}"#, "another product"),
        (#"{"product":"homeport","protocolVersion":42,"instanceId":"ID"}"#, "protocol 42"),
        (#"{"product":"homeport","protocolVersion":0,"instanceId":"ID"}"#, "protocol 0"),
        (#"{"product":"homeport","protocolVersion":"1","instanceId":"ID"}"#, "protocol as a string"),
        (#"{"product":"homeport","instanceId":"ID"}"#, "no protocol"),
        (#"{"protocolVersion":1,"instanceId":"ID"}"#, "no product"),
    ]

    @Test("the probe matches product and protocol version too", arguments: badIdentities)
    func probeMatchesEveryField(body: String, label: String) async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let primary = try RecordingListener(behaviour: .routes([HomeportPath.serverIdentity: Peer.identity(id)]))
        let impostor = try RecordingListener(
            host: "127.0.0.2",
            behaviour: .routes([
                HomeportPath.serverIdentity: .init(
                    200, Peer.json, body.replacingOccurrences(of: "ID", with: id.description))
            ]))
        let (client, _) = try scriptedClient(home, record: try record(id, primary: primary.url))
        await #expect(throws: ClientError.self, "\(label)") {
            try await client.addAddress(try ServerAddress(parsing: impostor.url, allowHTTP: true), to: id.description)
        }
        #expect(try client.directory.find(id.description).alternatives.isEmpty, "\(label)")
        #expect(!impostor.sawCredential)
    }
}
