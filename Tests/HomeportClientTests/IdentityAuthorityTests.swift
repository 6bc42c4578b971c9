import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

/// Who may say which installation a server is (issue 8, findings 2 and 8).
@Suite("Identity: learned from the primary, matched on every field")
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
