import Foundation
import HomeportClient
import HomeportCrypto
import HomeportTestSupport
import HomeportWire
import Testing

/// An address is the installation only if it proves the installation key this device pinned:
/// repeating the id, the public key, or an old signature proves nothing.
@Suite("The installation key on the client: pinned at sign-in, proved by every address", .tags(.process))
struct InstallationKeyClientTests {
    /// The installation's identity answer to a challenge of our own, asked with `host` as the
    /// Host header: what an impostor can collect from the real server.
    static func collected(_ installation: Installation, challenge: String, host: String = "127.0.0.1") throws
        -> ServerIdentity
    {
        try collected(port: try #require(installation.ports["127.0.0.1"]), challenge: challenge, host: host)
    }

    static func collected(port: Int, challenge: String, host: String, forwardedFor: String? = nil) throws
        -> ServerIdentity
    {
        let forwarded = forwardedFor.map { "X-Forwarded-For: \($0)\r\n" } ?? ""
        let request =
            "GET \(HomeportPath.serverIdentity)?challenge=\(challenge) HTTP/1.1\r\nHost: \(host)\r\n\(forwarded)Connection: close\r\n\r\n"
        let response = try RawHTTP.exchange(port: port, Array(request.utf8))
        return try JSONDecoder().decode(ServerIdentity.self, from: response.body)
    }

    static func json(_ identity: ServerIdentity) throws -> RecordingListener.Canned {
        RecordingListener.Canned(200, Peer.json, String(decoding: try JSONEncoder().encode(identity), as: UTF8.self))
    }

    /// The challenge in a probe's request line.
    static func challenge(in head: String) -> String {
        let target = head.split(separator: " ").dropFirst().first ?? ""
        guard let range = target.range(of: "challenge=") else { return "" }
        return String(target[range.upperBound...].prefix { $0 != "&" })
    }

    /// The ways an address can repeat what is public without holding the key.
    enum Impostor: String, CaseIterable, Sendable {
        /// The id and the public key, with a signature it saw for another challenge.
        case replaysAnOldSignature
        /// The id and the public key, with no signature.
        case copiesTheKeyWithoutSignature
        /// The id, without any key (a downgrade).
        case answersWithoutAKey
        /// The id and a key of its own, which it signs with properly.
        case signsWithItsOwnKey
        /// The real installation's signature for this very challenge, asked for another host
        /// (a listener that fetches fresh proofs from the installation under its own name).
        case fetchesAProofForAnotherHost
        /// The real installation's signature for this very challenge and the very host the
        /// client dialled, relayed from another network through the server's public name (whose
        /// proxy names the impostor's public address in `X-Forwarded-For`).
        case relaysFromAnotherNetwork
    }

    /// A listener on 127.0.0.2 that answers the identity route as `impostor` does.
    static func listener(_ impostor: Impostor, for installation: Installation) throws -> RecordingListener {
        let real = try collected(installation, challenge: InstallationKeyCheck.challenge())
        let port = try #require(installation.ports["127.0.0.1"])
        let id = real.instanceId
        let ownKey = try Ed25519Key.generate()
        let make: @Sendable (String) -> RecordingListener.Canned = { head in
            let challenge = challenge(in: head)
            var answer = ServerIdentity(product: real.product, instanceId: id, publicKey: real.publicKey)
            switch impostor {
            case .replaysAnOldSignature: answer.signature = real.signature
            case .copiesTheKeyWithoutSignature: break
            case .answersWithoutAKey: answer.publicKey = nil
            case .signsWithItsOwnKey:
                answer.publicKey = IdentityProof.writeKey(ownKey.publicKey)
                answer.signature =
                    (try? ownKey.sign(
                        IdentityProof.message(instanceId: id, challenge: challenge, host: "127.0.0.2")))
                    .map(IdentityProof.base64URL)
            case .fetchesAProofForAnotherHost:
                answer = (try? collected(port: port, challenge: challenge, host: "127.0.0.1")) ?? answer
            case .relaysFromAnotherNetwork:
                answer =
                    (try? collected(port: port, challenge: challenge, host: "127.0.0.2", forwardedFor: "203.0.113.9"))
                    ?? answer
            }
            return (try? json(answer)) ?? RecordingListener.Canned(500)
        }
        return try RecordingListener(
            host: "127.0.0.2",
            behaviour: .answer { head in
                head.hasPrefix("GET \(HomeportPath.serverIdentity)")
                    ? make(head) : RecordingListener.Canned(200, Peer.json, #"{"instanceId":"\#(id)"}"#)
            })
    }

    @Test(
        "sign-in pins the installation's key; an address that repeats what is public is neither added, verified nor sent anything",
        arguments: Impostor.allCases)
    func impostorsAreRefused(impostor: Impostor) async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let installation = try Installation(hosts: ["127.0.0.1"])
        let client = try makeClient(home, SpyTransport())
        let enrolled = try await signUp(client, at: installation)
        let real = try Self.collected(installation, challenge: InstallationKeyCheck.challenge())
        #expect(enrolled.publicKey != nil)
        #expect(enrolled.publicKey == real.publicKey, "the key proved at sign-in is pinned")
        #expect(enrolled.keyFingerprint?.hasPrefix("SHA256:") == true)

        let listener = try Self.listener(impostor, for: installation)
        defer { listener.stop() }
        let address = try ServerAddress(parsing: listener.url, allowHTTP: true)
        await #expect {
            try await client.addAddress(address, to: enrolled.key)
        } throws: { error in
            String(describing: error).contains("without the proof of its key")
        }
        #expect(try client.directory.find(enrolled.key).alternatives.isEmpty)

        // Verified earlier (before the key was pinned, say), it loses the verification at the next
        // check, and while the installation is down it gets nothing.
        _ = try client.directory.update(enrolled.key) { record in
            record.alternatives = [.init(address: address, verifiedPaths: ["home": Date()])]
        }
        let verified = try await client.verifyAddresses(of: enrolled.key)
        let outcome = try #require(verified.first { $0.address == address }?.outcome)
        guard case .unproven = outcome else {
            Issue.record("\(impostor): \(outcome)")
            return
        }
        #expect(try client.directory.find(enrolled.key).alternatives.allSatisfy { !$0.isVerified })
        _ = try client.directory.update(enrolled.key) { record in
            record.alternatives = [.init(address: address, verifiedPaths: ["home": Date()])]
        }
        installation.stop()
        await #expect(throws: ClientError.self) { _ = try await client.appInfo(enrolled.key) }
        #expect(!listener.sawCredential, "\(impostor) got a credential")
    }

    @Test(
        "signing in again where the enrolled id answers without the pinned key keeps the pin and the record: no downgrade, no other key",
        arguments: [(Impostor.answersWithoutAKey, true), (.signsWithItsOwnKey, true), (.answersWithoutAKey, false)])
    func signInAgainKeepsThePin(impostor: Impostor, appInfo: Bool) async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let installation = try Installation(hosts: ["127.0.0.1"])
        let real = try Self.collected(installation, challenge: InstallationKeyCheck.challenge())
        let pinned = try #require(real.publicKey)
        let id = real.instanceId
        let ownKey = try Ed25519Key.generate()
        // The record's primary, taken over: it answers the enrolled id without the pinned key
        // (none, or one of its own that it signs with properly), and signs Ada in.
        let listener = try RecordingListener(
            host: "127.0.0.3",
            behaviour: .answer { head in
                if head.hasPrefix("GET \(HomeportPath.serverIdentity)") {
                    var answer = ServerIdentity(product: real.product, instanceId: id, publicKey: nil)
                    if impostor == .signsWithItsOwnKey {
                        answer.publicKey = IdentityProof.writeKey(ownKey.publicKey)
                        answer.signature =
                            (try? ownKey.sign(
                                IdentityProof.message(
                                    instanceId: id, challenge: Self.challenge(in: head), host: "127.0.0.3")))
                            .map(IdentityProof.base64URL)
                    }
                    return (try? Self.json(answer)) ?? RecordingListener.Canned(500)
                }
                if head.contains(AllauthAppPath.login) {
                    return RecordingListener.Canned(
                        200, Peer.json,
                        #"{"status":200,"data":{"user":{"id":1,"email":"ada@example.com","display":"ada","#
                            + #""has_usable_password":true},"methods":[]},"#
                            + #""meta":{"is_authenticated":true,"session_token":"impostor-token"}}"#)
                }
                // Without app-info (404), the address says no id at all: no reset either.
                guard appInfo else { return RecordingListener.Canned(404, Peer.json, "{}") }
                return RecordingListener.Canned(
                    200, Peer.json,
                    #"{"instanceId":"\#(id)","product":"\#(real.product)","version":"1","protocolVersion":1,"features":[]}"#
                )
            })
        defer { listener.stop() }
        let address = try ServerAddress(parsing: listener.url, allowHTTP: true)
        let client = try makeClient(home, SpyTransport())
        var record = ServerRecord(
            instanceID: id, product: real.product, email: "ada@example.com", primary: address, alternatives: [],
            lastWinner: address.url, signedOut: false, signedInPath: "home", protocolVersion: 1)
        record.publicKey = pinned
        try client.directory.save(record)
        await #expect(throws: ClientError.self) {
            _ = try await client.login(at: address, email: "ada@example.com", password: "a password")
        }
        #expect(
            !listener.requests.contains { $0.contains(AllauthAppPath.login) }, "the password never went there")
        let kept = try client.directory.find(id.description)
        #expect(kept.publicKey == pinned, "\(impostor): the pin stays")
        #expect(try FileVault(directory: home.file("vault")).token(for: kept.key) == nil, "no token from it is kept")
    }

    @Test("a record signed in before the server had a key pins the key its trusted primary proves, then needs it")
    func pinsFromThePrimary() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let installation = try Installation(hosts: ["127.0.0.1"])
        let client = try makeClient(home, SpyTransport())
        let enrolled = try await signUp(client, at: installation)
        _ = try client.directory.update(enrolled.key) { $0.publicKey = nil }

        // On another network a plain-HTTP primary is not trusted to teach a key.
        let elsewhere = try makeClient(home, SpyTransport(), path: "cafe")
        _ = try await elsewhere.appInfo(enrolled.key)
        #expect(try client.directory.find(enrolled.key).publicKey == nil)

        _ = try await client.appInfo(enrolled.key)
        let real = try Self.collected(installation, challenge: InstallationKeyCheck.challenge())
        #expect(try client.directory.find(enrolled.key).publicKey == real.publicKey)

        let listener = try Self.listener(.answersWithoutAKey, for: installation)
        defer { listener.stop() }
        await #expect(throws: ClientError.self) {
            try await client.addAddress(try ServerAddress(parsing: listener.url, allowHTTP: true), to: enrolled.key)
        }
    }

    @Test("the installation itself at another address of its own proves the key and is verified")
    func ownAddressProves() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let installation = try Installation(hosts: ["127.0.0.1", "127.0.0.2"])
        let client = try makeClient(home, SpyTransport())
        let enrolled = try await signUp(client, at: installation)
        let saved = try await client.addAddress(try installation.address("127.0.0.2"), to: enrolled.key)
        #expect(saved.alternatives.first?.isVerified == true)
        installation.stop("127.0.0.1")
        let (_, via) = try await client.appInfo(enrolled.key)
        #expect(via == (try installation.address("127.0.0.2")))
    }

    @Test("an address another process removed is not used again by this one, though it won a moment ago")
    func removedElsewhere() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let installation = try Installation(hosts: ["127.0.0.1", "127.0.0.2"])
        let transport = SpyTransport()
        let client = try makeClient(home, transport)
        let enrolled = try await signUp(client, at: installation)
        let alternative = try installation.address("127.0.0.2")
        _ = try await client.addAddress(alternative, to: enrolled.key)
        installation.stop("127.0.0.1")
        #expect(try await client.appInfo(enrolled.key).1 == alternative, "the alternative won")
        // Another process (its own client on the same directory) removes it.
        let other = try makeClient(home, SpyTransport())
        try other.removeAddress(alternative, from: enrolled.key)
        let before = transport.requests.count
        await #expect(throws: ClientError.self) { _ = try await client.appInfo(enrolled.key) }
        let sent = transport.requests.dropFirst(before).map(\.url.absoluteString)
        #expect(!sent.contains { $0.hasPrefix(alternative.url) }, "\(sent)")
        // Added again and won; then its verification on this path is withdrawn elsewhere (it stays
        // verified on another): the next request asks it who it is before anything else.
        _ = try await client.addAddress(alternative, to: enrolled.key)
        #expect(try await client.appInfo(enrolled.key).1 == alternative)
        _ = try other.directory.update(enrolled.key) { record in
            record.alternatives = record.alternatives.map {
                .init(address: $0.address, verifiedPaths: ["work": Date()])
            }
        }
        let again = transport.requests.count
        _ = try? await client.appInfo(enrolled.key)
        let first = transport.requests.dropFirst(again).first { $0.url.absoluteString.hasPrefix(alternative.url) }
        #expect(
            first?.url.path == HomeportPath.serverIdentity, "probed first: \(String(describing: first?.url))")
    }

    @Test(
        "identity reset makes a new key: the pinned record gets nothing from it, says how to take it on, and a new sign-in pins the new key"
    )
    func resetChangesTheKey() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let installation = try Installation(hosts: ["127.0.0.1"])
        let events = EventLog()
        let client = try makeClient(home, SpyTransport(), events: events)
        let enrolled = try await signUp(client, at: installation)
        let oldKey = try #require(enrolled.publicKey)
        installation.stop()
        let reset = try ServerProcess.run(
            ["identity", "reset", "--replicas-stopped", "--force", "--database", installation.database])
        #expect(reset.status == 0, "\(reset.error)")
        try installation.start()

        await #expect {
            _ = try await client.appInfo(enrolled.key)
        } throws: { error in
            String(describing: error).contains("homeport remove \(enrolled.key)")
        }
        #expect(try client.directory.find(enrolled.key).publicKey == oldKey, "the pin stays")
        #expect(events.all.allSatisfy { if case .identityChanged = $0 { false } else { true } })
        try await client.remove(enrolled.key)
        guard
            case .signedIn(let record) = try await client.login(
                at: try installation.address("127.0.0.1"), email: "ada@example.com", password: password)
        else { throw RawHTTPError("the new sign-in did not sign in") }
        #expect(record.publicKey != nil)
        #expect(record.publicKey != oldKey)
        #expect(record.key != enrolled.key)
    }
}

extension InstallationKeyClientTests {
    /// What answers at a pinned server's primary without its key.
    enum PrimaryWithoutTheKey: String, CaseIterable, Sendable {
        case noIdentityRoute, aWebPage, anotherInstallation, anUnreadableIdentity
    }

    @Test(
        "a pinned server's primary that answers without the key (404, a page, another id, 503) gets no token, even on the network it was signed in on",
        arguments: PrimaryWithoutTheKey.allCases)
    func pinnedPrimaryHasNoStandingTrust(answer: PrimaryWithoutTheKey) async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let installation = try Installation(hosts: ["127.0.0.1"])
        let client = try makeClient(home, SpyTransport())
        let enrolled = try await signUp(client, at: installation)
        #expect(enrolled.publicKey != nil)
        let behaviour: RecordingListener.Behaviour =
            switch answer {
            case .noIdentityRoute: .respond(status: 404, headers: Peer.json, body: #"{"status":404}"#)
            case .aWebPage: .respond(status: 200, headers: ["Content-Type": "text/html"], body: "<html>Router</html>")
            case .anotherInstallation:
                .routes([
                    HomeportPath.serverIdentity: Peer.identity(InstanceID(UUID())),
                    HomeportPath.appInfo: Peer.appInfo(InstanceID(UUID())),
                ])
            case .anUnreadableIdentity:
                .respond(
                    status: 503, headers: Peer.json,
                    body: #"{"error":{"code":"identity_unavailable","message":"later"}}"#)
            }
        let impostor = try RecordingListener(host: "127.0.0.2", behaviour: behaviour)
        defer { impostor.stop() }
        // The primary, on the network it was signed in on, is now whatever answers there.
        _ = try client.directory.update(enrolled.key) { record in
            record.primary = try! ServerAddress(parsing: impostor.url, allowHTTP: true)
            record.lastWinner = nil
        }
        await #expect(throws: ClientError.self) { _ = try await client.appInfo(enrolled.key) }
        #expect(!impostor.sawCredential, "\(answer): \(impostor.requests)")
        #expect(try client.directory.find(enrolled.key).publicKey == enrolled.publicKey, "the pin stays")
    }
}

extension InstallationKeyClientTests {
    @Test(
        "a password, a reset key, an ID token or a handoff goes to a pinned server's address, however it is spelled, only once it proves the key"
    )
    func everySecretWaitsForTheProof() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let installation = try Installation(hosts: ["127.0.0.1"])
        let client = try makeClient(home, SpyTransport())
        let enrolled = try await signUp(client, at: installation)
        // Another installation now answers at an address of the pinned server.
        let impostor = try RecordingListener(
            host: "127.0.0.2",
            behaviour: .routes([
                HomeportPath.serverIdentity: Peer.identity(InstanceID(UUID())),
                HomeportPath.appInfo: Peer.appInfo(InstanceID(UUID())),
            ]))
        defer { impostor.stop() }
        _ = try client.directory.update(enrolled.key) { record in
            record.primary = try! ServerAddress(parsing: impostor.url, allowHTTP: true)
        }
        let port = try #require(impostor.url.split(separator: ":").last.map(String.init))
        for spelling in [
            impostor.url, "http://127.2:\(port)", "http://127.0.0.2:\(port)/", "http://[::ffff:127.0.0.2]:\(port)",
        ] {
            let address = try ServerAddress(parsing: spelling, allowHTTP: true)
            await #expect(throws: ClientError.self, "\(spelling)") {
                _ = try await client.login(at: address, email: "ada@example.com", password: password)
            }
            await #expect(throws: ClientError.self, "\(spelling)") {
                try await client.completePasswordReset(at: address, key: "a-mailed-reset-key", password: password)
            }
            await #expect(throws: ClientError.self, "\(spelling)") {
                try await client.requestPasswordReset(at: address, email: "ada@example.com")
            }
            await #expect(throws: ClientError.self, "\(spelling)") {
                _ = try await client.login(
                    at: address, provider: AuthProvider(id: "household", name: "Household", flows: [], clientID: "app"),
                    idToken: "an.id.token")
            }
            await #expect(throws: ClientError.self, "\(spelling)") {
                _ = try await client.beginBrowserSignIn(
                    at: address, redirect: "com.example.books://signed-in", deviceName: "Ada's iPhone")
            }
        }
        let posted = impostor.requests.filter { !$0.hasPrefix("GET ") }
        #expect(posted.isEmpty, "\(posted)")
    }
}

extension InstallationKeyClientTests {
    @Test(
        "a pinned server that proves its key under a new product name or protocol version is the same installation: it keeps working, and what it calls itself is enrolled"
    )
    func renamedPinnedServer() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let installation = try Installation(hosts: ["127.0.0.1"])
        let client = try makeClient(home, SpyTransport())
        let enrolled = try await signUp(client, at: installation)
        #expect(enrolled.publicKey != nil)
        // As if the operator renamed the product and a release moved the protocol on since.
        _ = try client.directory.update(enrolled.key) { record in
            record.product = "an-older-name"
            record.protocolVersion = 7
        }
        let answer = try await client.appInfo(enrolled.key)
        #expect(answer.info.instanceId == enrolled.instanceID)
        let record = try client.directory.find(enrolled.key)
        #expect(record.product == "homeport" && record.protocolVersion == 1, "\(record)")
        #expect(record.publicKey == enrolled.publicKey)
    }
}
