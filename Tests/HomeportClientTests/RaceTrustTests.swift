import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

/// The primary's standing trust against a verified alternative, at any delay (issue 8, findings 1 and 9).
@Suite("Choosing an address: a verified address always beats the primary's standing trust", .tags(.process))
struct RaceTrustTests {
    /// What a primary that is not (or no longer shows itself as) the enrolled installation answers.
    enum PrimaryAnswer: String, CaseIterable, Sendable {
        case anotherInstallation, htmlPage, notFound, notHomeport, unavailable

        var canned: RecordingListener.Canned {
            switch self {
            case .anotherInstallation: Peer.identity(InstanceID(UUID()))
            case .htmlPage: .init(200, ["Content-Type": "text/html"], "<!doctype html><form>Sign in</form>")
            case .notFound: .init(404, ["Content-Type": "text/plain"], "Not Found")
            case .notHomeport: .init(200, Peer.json, #"{"hello":"world"}"#)
            case .unavailable:
                .init(
                    503, Peer.json,
                    #"{"error":{"code":"identity_unavailable","message":"The server cannot read its identity."}}"#)
            }
        }
    }

    static let delays = [0.06, 0.1, 0.25, 0.5]

    /// A primary whose identity cannot be read: 503 `identity_unavailable`, and app-info without an id.
    static func unavailablePrimary() throws -> RecordingListener {
        try RecordingListener(
            behaviour: .routes([
                HomeportPath.serverIdentity: PrimaryAnswer.unavailable.canned, HomeportPath.appInfo: Peer.appInfo(nil),
            ]))
    }

    @Test(
        "a primary that does not answer as the installation gets nothing while a verified alternative is probing",
        arguments: PrimaryAnswer.allCases, delays)
    func verifiedAlternativeWins(primaryAnswer: PrimaryAnswer, delay: Double) async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let primary = try RecordingListener(
            behaviour: .routes([
                HomeportPath.serverIdentity: primaryAnswer.canned, HomeportPath.appInfo: Peer.notAuthenticated,
            ]))
        let alternative = try RecordingListener(
            host: "127.0.0.2",
            behaviour: .routes([
                HomeportPath.serverIdentity: Peer.identity(id).delayed(delay), HomeportPath.appInfo: Peer.appInfo(id),
            ]))
        let enrolled = try record(id, primary: primary.url, verified: [alternative.url])
        let (client, vault) = try scriptedClient(home, record: enrolled)

        let answer = try await client.appInfo(enrolled.key)
        #expect(answer.via.url == alternative.url)
        #expect(!primary.sawCredential, "the primary answered \(primaryAnswer) and still got the token")
        #expect(alternative.sawCredential)
        #expect(try vault.token(for: enrolled.key) == "t0ken")
        #expect(try client.directory.find(enrolled.key).signedOut == false)
    }

    @Test("another installation at the primary's address gets no token while a delayed verified alternative probes")
    func anotherInstallationAtThePrimary() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1"])
        let spy = SpyTransport()
        let client = try makeClient(home, spy)
        let enrolled = try await signUp(client, at: mine)
        let id = try #require(enrolled.instanceID)
        // The scripted alternative repeats the id and proves no key: a server without one.
        _ = try client.directory.update(enrolled.key) { $0.publicKey = nil }
        let alternative = try RecordingListener(
            host: "127.0.0.2",
            behaviour: .routes([
                HomeportPath.serverIdentity: Peer.identity(id).delayed(0.1), HomeportPath.appInfo: Peer.appInfo(id),
            ]))
        try await client.addAddress(try ServerAddress(parsing: alternative.url, allowHTTP: true), to: enrolled.key)

        // Somebody else's installation now answers at the address the account signed in with.
        let port = mine.ports["127.0.0.1"]!
        mine.stop()
        let theirs = try TemporaryDirectory()
        defer { theirs.remove() }
        let other = try ServerProcess(serve: [
            "--listen", "127.0.0.1:\(port)", "--database", "sqlite:" + theirs.file("t.sqlite"), "--signup", "open",
        ])
        defer { other.stop() }
        spy.reset()

        let answer = try await client.appInfo(enrolled.key)
        #expect(answer.via.url == alternative.url)
        #expect(!spy.originsGivenToken.contains("127.0.0.1:\(port)"), "\(spy.originsGivenToken)")
        #expect(try client.directory.find(enrolled.key).signedOut == false)
    }

    @Test("the primary's identity route answering 503 identity_unavailable keeps the primary's standing trust")
    func unavailableIdentityKeepsThePrimary() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let primary = try Self.unavailablePrimary()
        let enrolled = try record(id, primary: primary.url)
        let (client, vault) = try scriptedClient(home, record: enrolled)
        let answer = try await client.appInfo(enrolled.key)
        #expect(answer.via.url == primary.url)
        #expect(answer.info.instanceId == nil)
        #expect(try vault.token(for: enrolled.key) == "t0ken")
        #expect(try client.directory.find(enrolled.key).instanceID == id, "an app-info without an id changes nothing")
    }

    @Test("a 503 that is not the API's identity_unavailable, or a 503 on another network, is refused")
    func otherUnavailableAnswersAreRefused() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        for (answer, path) in [
            (RecordingListener.Canned(503, ["Content-Type": "text/plain"], "Service Unavailable"), "home"),
            (PrimaryAnswer.unavailable.canned, "cafe"),
        ] {
            let primary = try RecordingListener(
                behaviour: .routes([HomeportPath.serverIdentity: answer, HomeportPath.appInfo: Peer.appInfo(nil)]))
            let enrolled = try record(id, primary: primary.url)
            let (client, _) = try scriptedClient(home, record: enrolled, path: path)
            await #expect(throws: ClientError.self) { try await client.appInfo(enrolled.key) }
            #expect(!primary.sawCredential, "\(answer.body) on \(path)")
        }
    }

    @Test("whoami through a primary whose identity is unavailable succeeds (exit 0), and says no id was read")
    func whoamiWithUnavailableIdentity() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let primary = try Self.unavailablePrimary()
        let directory = try ServerDirectory(directory: home.path)
        try directory.save(try record(id, primary: primary.url))
        try FileVault(directory: home.file("vault")).store(token: "t0ken", for: id.description)
        let whoami = try ServerProcess.runClient(
            ["whoami", String(id.description.prefix(8))],
            environment: ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"])
        #expect(whoami.status == 0, "\(whoami.error)")
        #expect(whoami.output.contains("via \(primary.url)"), "\(whoami.output)")
    }
}
