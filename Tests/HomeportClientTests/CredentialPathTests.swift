import Foundation
import HomeportClient
import HomeportTestSupport
import Testing

/// The promise without exceptions: a verified address beats the primary's standing trust in a
/// whole command — retries, slow alternatives and re-logins included — and one function attaches
/// every session token.
@Suite("One credential path: no token to a primary that answered as another installation", .tags(.process))
struct CredentialPathTests {
    /// A primary that now answers as another installation (and would accept anything).
    static func impostorPrimary() throws -> RecordingListener {
        let other = InstanceID(UUID())
        return try RecordingListener(
            behaviour: .routes([
                HomeportPath.serverIdentity: Peer.identity(other), HomeportPath.appInfo: Peer.appInfo(other),
            ]))
    }

    /// What the verified alternative does with the API request after answering the probe as the installation.
    enum AlternativeFailure: String, CaseIterable, Sendable {
        case dropsTheConnection, neverAnswers
    }

    @Test(
        "a GET retried after the verified alternative failed in transport never falls back to a mismatched primary",
        arguments: AlternativeFailure.allCases)
    func retryKeepsTheMatch(failure: AlternativeFailure) async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let primary = try Self.impostorPrimary()
        let identity = [HomeportPath.serverIdentity: Peer.identity(id)]
        let alternative: RecordingListener
        switch failure {
        case .dropsTheConnection:
            alternative = try RecordingListener(
                host: "127.0.0.2", behaviour: .routesAndStreams(identity, streamPath: HomeportPath.appInfo, [[.close]]))
        case .neverAnswers:
            alternative = try RecordingListener(
                host: "127.0.0.2", behaviour: .routes(identity.merging([HomeportPath.appInfo: .never]) { $1 }))
        }
        let enrolled = try record(id, primary: primary.url, verified: [alternative.url])
        let (client, vault) = try scriptedClient(home, record: enrolled)

        await #expect(throws: ClientError.self) { _ = try await client.appInfo(enrolled.key) }
        #expect(alternative.sawCredential, "the alternative matched and got the request")
        #expect(
            !primary.sawCredential, "the retry handed the token to the primary that answered as another installation")
        #expect(try vault.token(for: enrolled.key) == "t0ken")
    }

    /// How the verified alternative says nothing of who it is.
    enum Silence: String, CaseIterable, Sendable {
        case pastTheProbeDeadline, silent, refused, serverError, identityUnavailable, untrustedCertificate
    }

    @Test(
        "a verified alternative that says nothing of who it is (late, silent, refused, a 5xx, 503 identity_unavailable, a TLS failure) keeps the mismatched primary out",
        arguments: Silence.allCases)
    func silenceIsNoAnswer(silence: Silence) async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let primary = try Self.impostorPrimary()
        var listener: RecordingListener?
        var tls: TLSListener?
        var dead: DeadPort?
        let appInfo = [HomeportPath.appInfo: Peer.appInfo(id)]
        func answering(_ probe: RecordingListener.Canned) throws -> RecordingListener {
            try RecordingListener(
                host: "127.0.0.2", behaviour: .routes(appInfo.merging([HomeportPath.serverIdentity: probe]) { $1 }))
        }
        switch silence {
        case .pastTheProbeDeadline:
            // The scripted client's probe deadline is 2 s.
            listener = try answering(Peer.identity(id).delayed(3))
        case .silent:
            listener = try RecordingListener(host: "127.0.0.2", behaviour: .blackhole)
        case .refused:
            dead = try DeadPort()
        case .serverError:
            listener = try answering(RecordingListener.Canned(502, Peer.json, #"{"detail":"bad gateway"}"#))
        case .identityUnavailable:
            listener = try answering(
                RecordingListener.Canned(
                    503, Peer.json,
                    #"{"error":{"code":"identity_unavailable","message":"Try again later."}}"#))
        case .untrustedCertificate:
            // The installation's own answer, behind a certificate no trusted CA signed.
            tls = try TLSListener(body: #"{"instanceId":"\#(id)","product":"homeport","protocolVersion":1}"#)
        }
        let alternativeURL = try #require(listener?.url ?? tls?.url ?? dead.map { "http://127.0.0.1:\($0.port)" })
        let enrolled = try record(id, primary: primary.url, verified: [alternativeURL])
        let (client, _) = try scriptedClient(home, record: enrolled)

        await #expect {
            _ = try await client.send("POST", "/api/v1/push/test", to: enrolled.key)
        } throws: { error in
            guard case ClientError.noVerifiedAddress(_, let detail) = error else { return false }
            return detail.contains(alternativeURL)
        }
        #expect(!primary.sawCredential, "\(silence) let the mismatched primary win on standing trust")
        #expect(!(listener?.sawCredential ?? false))
        #expect(tls?.requests ?? [] == [])
        withExtendedLifetime(dead) {}
    }

    @Test(
        "signing in again at a primary that now serves another installation sends it neither the password nor the old token, until the server is removed here"
    )
    func reloginAtAnotherInstallation() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1"])
        let spy = SpyTransport()
        let events = EventLog()
        let client = try makeClient(home, spy, events: events)
        let enrolled = try await signUp(client, at: mine)
        let oldToken = try #require(try FileVault(directory: home.file("vault")).token(for: enrolled.key))

        // Somebody else's installation now answers at the address the account signed in with.
        let port = try #require(mine.ports["127.0.0.1"])
        mine.stop()
        let theirs = try TemporaryDirectory()
        defer { theirs.remove() }
        let other = try ServerProcess(serve: [
            "--listen", "127.0.0.1:\(port)", "--database", "sqlite:" + theirs.file("t.sqlite"), "--signup", "open",
            "--password-iterations", "1000",
        ])
        defer { other.stop() }
        spy.reset()

        let address = try ServerAddress(parsing: "http://127.0.0.1:\(port)", allowHTTP: true)
        // Anyone can answer another id: the password does not go until the person says the
        // server changed, by removing it here.
        await #expect {
            _ = try await client.signup(at: address, email: "ada@example.com", password: password)
        } throws: { error in
            guard case ClientError.probeFailed(_, let outcome) = error else { return false }
            return outcome.contains("homeport remove \(enrolled.key)")
        }
        #expect(!spy.requests.isEmpty)
        #expect(
            spy.requests.allSatisfy {
                $0.method == "GET" && $0.body == nil && $0.url.path.hasSuffix("server-identity")
            },
            "only the identity probe went: \(spy.requests.map(\.url.path))")
        try await client.remove(enrolled.key)
        _ = try await client.signup(at: address, email: "ada@example.com", password: password)
        let leaked = spy.requests.filter { $0.headers["X-Session-Token"] == oldToken }
        #expect(leaked.isEmpty, "the old installation's token went to \(leaked.map(\.url.absoluteString))")
        let told = events.all.contains { event in
            if case .sessionReplaced(_, _, .revoked) = event { return true }
            return false
        }
        #expect(!told, "the app was told the old session ended, which nobody who holds it confirmed")
    }

    @Test("every session token is attached by one function: no other file of the client sets the header")
    func oneCredentialPath() throws {
        let directory = repositoryFile("Sources/HomeportClient")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".swift") }
        #expect(files.contains("HomeportClient+Credential.swift"))
        for file in files where file != "HomeportClient+Credential.swift" {
            let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
            for needle in ["HomeportHeader.sessionToken", "X-Session-Token", "x-session-token"] {
                #expect(!text.contains(needle), "\(file) names the session-token header (\(needle))")
            }
        }
    }
}
