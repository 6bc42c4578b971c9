import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

@Suite("identify(at:) and enroll(at:): a server shown and kept before anyone signs in", .tags(.process))
struct EnrolmentPreviewTests {
    @Test(
        "identify reads the installation as identity show prints it and stores nothing; enroll keeps it signed out, and login signs in on that record"
    )
    func previewThenEnrolThenSignIn() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let installation = try Installation(hosts: ["127.0.0.1"])
        let client = try makeClient(home, SpyTransport())
        let address = try installation.address("127.0.0.1")

        let preview = try await client.identify(at: address)
        // Read after the first request, which makes the installation's identity.
        let shown = try InstallationTLSClientTests.identity(installation.database)
        #expect(preview.identity.instanceId == shown.id)
        #expect(preview.identity.product == "homeport")
        #expect(preview.keyFingerprint == shown.fingerprint, "the key it proved is the one identity show prints")
        #expect(preview.enrolledAs == nil)
        #expect(client.directory.all.isEmpty, "a preview stores nothing")

        let enrolled = try await client.enroll(at: address)
        #expect(enrolled.key == shown.id.description && enrolled.signedOut && enrolled.email.isEmpty)
        #expect(enrolled.publicKey == shown.publicKey, "the key it proved is pinned")
        #expect(try await client.identify(at: address).enrolledAs == enrolled.key)
        #expect(try await client.enroll(at: address) == enrolled, "enrolled twice, kept once")
        await #expect {
            _ = try await client.send("GET", HomeportPath.appInfo, to: enrolled.key)
        } throws: { error in
            guard case ClientError.signedOut = error else { return false }
            return true
        }

        _ = try await client.signup(at: address, email: "ada@example.com", password: password)
        #expect(client.directory.all.count == 1, "the sign-in signed in on the enrolled record")
        let signedIn = try #require(client.directory.server(enrolled.key))
        #expect(!signedIn.signedOut && signedIn.email == "ada@example.com")
        // An enrolment now changes nothing of the signed-in record.
        #expect(try await client.enroll(at: address) == signedIn)
        #expect(try await client.send("GET", HomeportPath.appInfo, to: enrolled.key).response.status == 200)
    }

    @Test("an address that is not the installation is neither shown nor kept, and gets no credential")
    func hostile() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let client = try makeClient(home, SpyTransport())
        let stranger = InstanceID(UUID())
        let listeners: [(String, RecordingListener, (ClientError) -> Bool)] = [
            (
                "an HTML page",
                try RecordingListener(
                    behaviour: .respond(status: 200, headers: ["Content-Type": "text/html"], body: "<html>Wi-Fi</html>")
                ),
                { if case .notAnAPI = $0 { true } else { false } }
            ),
            (
                "garbage",
                try RecordingListener(behaviour: .respond(status: 200, headers: Peer.json, body: "{not json")),
                { if case .notHomeport = $0 { true } else { false } }
            ),
            (
                "another product's answer",
                try RecordingListener(behaviour: .routes([HomeportPath.serverIdentity: .init(404, Peer.json, "{}")])),
                { if case .notHomeport = $0 { true } else { false } }
            ),
            (
                "an id with a key it cannot prove",
                try RecordingListener(
                    behaviour: .routes([
                        HomeportPath.serverIdentity: .init(
                            200, Peer.json,
                            #"{"instanceId":"\#(stranger)","product":"homeport","protocolVersion":1,"publicKey":"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE","signature":"AAAA"}"#
                        )
                    ])),
                { if case .probeFailed = $0 { true } else if case .notHomeport = $0 { true } else { false } }
            ),
            (
                "silence", try RecordingListener(behaviour: .blackhole),
                { if case .unreachable = $0 { true } else { false } }
            ),
        ]
        for (what, listener, expected) in listeners {
            let address = try ServerAddress(parsing: listener.url, allowHTTP: true)
            for enrol in [false, true] {
                await #expect(Comment(rawValue: what)) {
                    if enrol {
                        _ = try await client.enroll(at: address)
                    } else {
                        _ = try await client.identify(at: address)
                    }
                } throws: { error in
                    (error as? ClientError).map(expected) ?? false
                }
            }
            #expect(!listener.sawCredential, "\(what): no credential")
        }
        #expect(client.directory.all.isEmpty, "nothing was enrolled")

        // A server kept here whose primary now answers as another installation is not enrolled again.
        let other = try RecordingListener(behaviour: .routes([HomeportPath.serverIdentity: Peer.identity(stranger)]))
        let kept = try record(InstanceID(UUID()), primary: other.url)
        try client.directory.save(kept)
        await #expect {
            _ = try await client.enroll(at: try ServerAddress(parsing: other.url, allowHTTP: true))
        } throws: { error in
            guard case ClientError.identityMismatch(_, stranger) = error else { return false }
            return true
        }
        #expect(client.directory.all == [kept])
    }
}
