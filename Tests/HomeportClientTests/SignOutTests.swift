import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

/// Which answers may end or replace a session (issue 8, findings 3, 4 and 12).
@Suite("Sign-out and token rotation: only the API's own answers count")
struct SignOutTests {
    static let notTheAPI: [(RecordingListener.Canned, String)] = [
        (
            .init(401, ["Content-Type": "text/plain", "WWW-Authenticate": "Basic realm=\"proxy\""], "Unauthorized"),
            "a proxy's 401 text/plain"
        ),
        (
            .init(
                401, ["Content-Type": "application/xhtml+xml"],
                #"<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body>Sign in</body></html>"#),
            "xhtml"
        ),
        (.init(401, [:], "<!DOCTYPE HTML><html><body>Sign in</body></html>"), "HTML without a content type"),
        (.init(401, ["Content-Type": "text/plain"], "\u{FEFF}<!doctype html><p>Sign in</p>"), "a BOM, then HTML"),
        (.init(401, [:], "\u{FEFF}  \n<HTML><p>Sign in</p></HTML>"), "a BOM, blanks, upper-case HTML"),
        (.init(410, ["Content-Type": "text/plain"], "Gone"), "410 text/plain"),
        (.init(401, Peer.json, #"{"detail":"Authentication credentials were not provided."}"#), "another JSON shape"),
        (.init(410, Peer.json, #"{"status":410}"#), "the app door's shape on the API prefix"),
        (
            {
                var canned = RecordingListener.Canned(
                    401, ["Content-Type": "text/html"], Peer.notAuthenticated.body)
                canned.extraHeaderLines = ["Content-Type: application/json"]
                return canned
            }(), "Content-Type twice, HTML first"
        ),
    ]

    @Test("a refusal that is not the API's JSON error does not sign the account out", arguments: notTheAPI)
    func refusalsThatAreNotTheAPI(answer: RecordingListener.Canned, label: String) async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let primary = try RecordingListener(
            behaviour: .routes([HomeportPath.serverIdentity: Peer.identity(id), HomeportPath.appInfo: answer]))
        let events = EventLog()
        let enrolled = try record(id, primary: primary.url)
        let (client, vault) = try scriptedClient(home, record: enrolled, events: events)
        await #expect("\(label)") { try await client.appInfo(enrolled.key) } throws: { error in
            guard let error = error as? ClientError else { return false }
            if case .signedOut = error { return false }
            return true
        }
        #expect(try vault.token(for: enrolled.key) == "t0ken", "\(label)")
        #expect(try client.directory.find(enrolled.key).signedOut == false, "\(label)")
        #expect(!events.all.contains(.signedOut(server: enrolled.key)), "\(label)")
    }

    @Test("an HTML page with a 200, a BOM and odd case is not the API either")
    func htmlSuccessIsNotTheAPI() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let primary = try RecordingListener(
            behaviour: .routes([
                HomeportPath.serverIdentity: Peer.identity(id),
                HomeportPath.appInfo: .init(200, ["Content-Type": "Application/XHTML+XML; charset=utf-8"], "{}"),
                "/api/v1/things": .init(200, [:], "\u{FEFF}<!DocType Html><p>hello</p>"),
            ]))
        let enrolled = try record(id, primary: primary.url)
        let (client, _) = try scriptedClient(home, record: enrolled)
        await #expect(throws: ClientError.self) { try await client.appInfo(enrolled.key) }
        await #expect(throws: ClientError.self) { try await client.send("GET", "/api/v1/things", to: enrolled.key) }
    }

    @Test("the API's own 401 from a verified address does sign the account out")
    func theAPIsRefusalSignsOut() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let primary = try RecordingListener(
            behaviour: .routes([
                HomeportPath.serverIdentity: Peer.identity(id), HomeportPath.appInfo: Peer.notAuthenticated,
            ]))
        let enrolled = try record(id, primary: primary.url)
        let (client, vault) = try scriptedClient(home, record: enrolled)
        await #expect(throws: ClientError.signedOut(server: enrolled.key)) { try await client.appInfo(enrolled.key) }
        #expect(try vault.token(for: enrolled.key) == nil)
    }

    @Test("logout reports revocation only for the app door's answer from an address that matched the enrolled id")
    func logoutSaysWhatHappened() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let logoutPath = "DELETE " + AllauthAppPath.path(AllauthAppPath.session)
        // A proxy answers the logout with its own 401.
        let proxied = try RecordingListener(
            behaviour: .routes([
                HomeportPath.serverIdentity: Peer.identity(id),
                logoutPath: .init(401, ["Content-Type": "text/plain", "WWW-Authenticate": "Basic"], "Unauthorized"),
            ]))
        // Another installation at the primary's address answers the app door's envelope.
        let elsewhere = try RecordingListener(
            behaviour: .routes([
                HomeportPath.serverIdentity: Peer.identity(InstanceID(UUID())), logoutPath: Peer.signedOutEnvelope,
            ]))
        for listener in [proxied, elsewhere] {
            let enrolled = try record(id, primary: listener.url)
            let (client, vault) = try scriptedClient(home, record: enrolled)
            #expect(try await client.logout(enrolled.key) != .revoked, "\(listener.url)")
            #expect(try vault.token(for: enrolled.key) == nil, "erased locally all the same")
        }
        #expect(!elsewhere.sawCredential, "another installation is not sent the token to end the session")

        // The real thing: the app door's envelope from the matched address.
        let real = try RecordingListener(
            behaviour: .routes([HomeportPath.serverIdentity: Peer.identity(id), logoutPath: Peer.signedOutEnvelope]))
        let enrolled = try record(id, primary: real.url)
        let (client, _) = try scriptedClient(home, record: enrolled)
        #expect(try await client.logout(enrolled.key) == .revoked)
    }

    @Test("a session token inside an answer that does not hand one out is ignored")
    func plantedTokensAreIgnored() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let planted =
            #"{"status":200,"meta":{"is_authenticated":true,"session_token":"planted"},"features":[],"#
            + #""product":"homeport","protocolVersion":1,"version":"1","instanceId":"\#(id)"}"#
        let primary = try RecordingListener(behaviour: .routes([HomeportPath.serverIdentity: Peer.identity(id)]))
        let alternative = try RecordingListener(
            host: "127.0.0.2",
            behaviour: .routes([
                HomeportPath.serverIdentity: Peer.identity(id),
                HomeportPath.appInfo: .init(200, Peer.json, planted),
                AllauthAppPath.path(AllauthAppPath.session): .init(200, Peer.json, planted),
            ]))
        var enrolled = try record(id, primary: primary.url, verified: [alternative.url])
        enrolled.lastWinner = alternative.url
        let (client, vault) = try scriptedClient(home, record: enrolled)
        let answer = try await client.appInfo(enrolled.key)
        #expect(answer.via.url == alternative.url)
        #expect(try vault.token(for: enrolled.key) == "t0ken")
        _ = try await client.send("GET", AllauthAppPath.path(AllauthAppPath.session), to: enrolled.key)
        #expect(try vault.token(for: enrolled.key) == "t0ken")
    }
}
