import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

/// Who may say which installation a server is (issue 8, finding 8).
@Suite("Identity: matched on every field")
struct IdentityAuthorityTests {
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
