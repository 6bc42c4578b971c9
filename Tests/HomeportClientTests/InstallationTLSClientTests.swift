import Foundation
import HomeportCrypto
import HomeportCurl
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportClient

/// A server serving HTTPS with its installation's own certificate, and the clients that pinned
/// its key: accepted on any address that holds the key, with no certificate authority; anyone
/// else's certificate is the system's trust as before.
@Suite("HTTPS pinned to the installation key, and pairing links", .tags(.process))
struct InstallationTLSClientTests {
    /// The id and key fingerprint `identity show` prints for `database`.
    static func identity(_ database: String) throws -> (id: InstanceID, fingerprint: String, publicKey: String) {
        let run = try ServerProcess.run(["identity", "show", "--json", "--database", database])
        let object = try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any]
        let text = try #require(object?["instanceId"] as? String)
        let id = try #require(InstanceID(text))
        let fingerprint = try #require(object?["keyFingerprint"] as? String)
        let publicKey = try #require(object?["publicKey"] as? String)
        return (id, fingerprint, publicKey)
    }

    /// A server on 127.0.0.2 serving only HTTPS with the installation's certificate.
    static func lanServer(_ data: TemporaryDirectory) throws -> ServerProcess {
        try ServerProcess(serve: [
            "--listen", "127.0.0.2:0", "--tls-installation", "--database", "sqlite:" + data.file("h.sqlite"),
            "--signup", "open", "--password-iterations", "1000", "--outbox", data.file("outbox"),
        ])
    }

    @Test(
        "a pairing link signs in to a self-signed installation listener on 127.0.0.2 with no CA; a plain sign-in there sends nothing"
    )
    func pairingOverPinnedHTTPS() async throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let server = try Self.lanServer(data)
        let installation = try Self.identity("sqlite:" + data.file("h.sqlite"))
        let url = "https://127.0.0.2:\(server.port)"
        let address = try ServerAddress(parsing: url)

        // Without the key, the certificate is nobody's: the sign-up never reaches the server.
        let strangerHome = try TemporaryDirectory()
        defer { strangerHome.remove() }
        let stranger = try makeClient(strangerHome, SpyTransport())
        await #expect(throws: ClientError.self) {
            _ = try await stranger.signup(at: address, email: "ada@example.com", password: password)
        }
        #expect(stranger.directory.all.isEmpty)

        let home = try TemporaryDirectory()
        defer { home.remove() }
        let spy = SpyTransport()
        let client = try makeClient(home, spy)
        let link = try PairingLink(instanceID: installation.id, keyFingerprint: installation.fingerprint, url: url)
        #expect(try await client.pair(try PairingLink(parsing: link.description)) == address)
        // The sign-up goes through: the stranger's never reached the server (the account is new).
        guard
            case .signedIn(let record) = try await client.signup(
                at: address, email: "ada@example.com", password: password)
        else { Issue.record("not signed in"); return }
        #expect(record.instanceID == installation.id)
        #expect(record.publicKey == installation.publicKey)
        for _ in 0..<3 {
            let (info, via) = try await client.appInfo(record.key)
            #expect(info.instanceId == installation.id && via == address)
        }
        let digest = try #require(InstallationKeyCheck.digest(installation.publicKey))
        #expect(!spy.requests.isEmpty)
        #expect(spy.requests.allSatisfy { $0.pinnedKeySHA256 == digest }, "every request there carried the pin")

        // A link cannot re-key an address this device knows: refused, and the pin stays.
        let otherKey = IdentityProof.fingerprint(sha256: Digest.sha256(try Ed25519Key.generate().publicKey))
        let rekey = try PairingLink(instanceID: installation.id, keyFingerprint: otherKey, url: url)
        spy.reset()
        await #expect(throws: ClientError.self) { try await client.pair(rekey) }
        #expect(spy.requests.isEmpty, "refused before any probe")
        let (again, _) = try await client.appInfo(record.key)
        #expect(again.instanceId == installation.id)
        #expect(spy.requests.allSatisfy { $0.pinnedKeySHA256 == digest })

        // Another device, through the command line, with the link the web page shows.
        let cliHome = try TemporaryDirectory()
        defer { cliHome.remove() }
        let environment = ["HOMEPORT_HOME": cliHome.path]
        let plain = try ServerProcess.runClient(
            ["login", url, "--email", "ada@example.com", "--password-stdin"], environment: environment,
            input: password + "\n")
        #expect(plain.status != 0 && plain.error.contains("certificate not trusted"), "\(plain.error)")
        let login = try ServerProcess.runClient(
            ["login", link.description, "--email", "ada@example.com", "--password-stdin"], environment: environment,
            input: password + "\n")
        #expect(login.status == 0, "\(login.error)")
        #expect(login.output.contains("signed in") && login.output.contains(installation.id.description))
        let whoami = try ServerProcess.runClient(["whoami", installation.id.description], environment: environment)
        #expect(whoami.status == 0 && whoami.output.contains("via \(url)"), "\(whoami.error)")
        let bad = try ServerProcess.runClient(
            ["login", "homeport://pair?s=\(installation.id)&u=\(url)", "--email", "a@b.c", "--password-stdin"],
            environment: environment, input: password + "\n")
        #expect(bad.status == 2 && bad.error.contains("is not a pairing link"), "\(bad.error)")
    }

    @Test("a pairing link naming another key or another id, or an address that only echoes them, gets no password")
    func pairingRefusals() async throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let server = try Self.lanServer(data)
        let installation = try Self.identity("sqlite:" + data.file("h.sqlite"))
        let url = "https://127.0.0.2:\(server.port)"
        let otherKey = IdentityProof.fingerprint(sha256: Digest.sha256(try Ed25519Key.generate().publicKey))
        for link in [
            try PairingLink(instanceID: installation.id, keyFingerprint: otherKey, url: url),
            try PairingLink(instanceID: InstanceID(UUID()), keyFingerprint: installation.fingerprint, url: url),
        ] {
            let home = try TemporaryDirectory()
            defer { home.remove() }
            let spy = SpyTransport()
            let client = try makeClient(home, spy)
            await #expect(throws: ClientError.self) {
                _ = try await client.login(pairing: link, email: "ada@example.com", password: password)
            }
            #expect(client.directory.all.isEmpty)
            #expect(spy.requests.allSatisfy { $0.method == "GET" && $0.body == nil }, "only the probe went out")
            // Nothing of the refused pairing stays: a plain sign-in there still finds no trust.
            await #expect(throws: ClientError.self) {
                _ = try await client.login(
                    at: try ServerAddress(parsing: url), email: "ada@example.com", password: password)
            }
        }

        // Plain-HTTP addresses that claim the id: one repeats the key without a signature, one
        // signs properly with a key of its own.
        let ownKey = try Ed25519Key.generate()
        for signsWithItsOwnKey in [false, true] {
            let id = installation.id
            let publicKey = installation.publicKey
            let echo = try RecordingListener(
                host: "127.0.0.2",
                behaviour: .answer { head in
                    guard head.hasPrefix("GET \(HomeportPath.serverIdentity)") else {
                        return Peer.signedIn(token: "stolen", email: "ada@example.com")
                    }
                    var answer = ServerIdentity(
                        product: "homeport", protocolVersion: 1, instanceId: id, publicKey: publicKey)
                    if signsWithItsOwnKey {
                        let target = head.split(separator: " ").dropFirst().first ?? ""
                        let challenge = target.components(separatedBy: "challenge=").last ?? ""
                        answer.publicKey = IdentityProof.writeKey(ownKey.publicKey)
                        answer.signature =
                            (try? ownKey.sign(
                                IdentityProof.message(instanceId: id, challenge: challenge, host: "127.0.0.2")))
                            .map(IdentityProof.base64URL)
                    }
                    let body = (try? JSONEncoder().encode(answer)).map { String(decoding: $0, as: UTF8.self) } ?? ""
                    return RecordingListener.Canned(200, Peer.json, body)
                })
            defer { echo.stop() }
            let home = try TemporaryDirectory()
            defer { home.remove() }
            let client = try makeClient(home, SpyTransport())
            let link = try PairingLink(instanceID: id, keyFingerprint: installation.fingerprint, url: echo.url)
            await #expect(throws: ClientError.self, "\(signsWithItsOwnKey)") {
                _ = try await client.login(pairing: link, email: "ada@example.com", password: password, allowHTTP: true)
            }
            #expect(
                !echo.requests.isEmpty && echo.requests.allSatisfy { $0.hasPrefix("GET ") }, "\(signsWithItsOwnKey)")
            #expect(!echo.requests.joined().contains(password))
            #expect(client.directory.all.isEmpty)
        }
    }

    @Test(
        "the installation's own listener is a verified alternative over pinned HTTPS; another server's self-signed listener with the copied id gets nothing"
    )
    func pinnedAlternative() async throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let lanPort = try RawHTTP.freePort()
        let server = try ServerProcess(serve: [
            "--listen", "127.0.0.1:0", "--installation-listen", "127.0.0.2:\(lanPort)", "--database",
            "sqlite:" + data.file("h.sqlite"), "--signup", "open", "--password-iterations", "1000", "--outbox",
            data.file("outbox"),
        ])
        let installation = try Self.identity("sqlite:" + data.file("h.sqlite"))
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let spy = SpyTransport()
        let client = try makeClient(home, spy)
        let primary = try ServerAddress(parsing: "http://127.0.0.1:\(server.port)", allowHTTP: true)
        guard
            case .signedIn(let record) = try await client.signup(
                at: primary, email: "ada@example.com", password: password)
        else { Issue.record("not signed in"); return }
        #expect(record.publicKey == installation.publicKey, "pinned at sign-in")

        let lan = try ServerAddress(parsing: "https://127.0.0.2:\(lanPort)")
        let added = try await client.addAddress(lan, to: record.key)
        #expect(added.alternatives.contains { $0.address == lan && $0.isVerified })

        // Another server's listener: its own self-signed Ed25519 certificate, the id and key copied.
        let answer = try JSONEncoder().encode(
            ServerIdentity(
                product: "homeport", protocolVersion: 1, instanceId: installation.id, publicKey: installation.publicKey)
        )
        let impostor = try TLSListener(body: String(decoding: answer, as: UTF8.self), key: "ed25519")
        await #expect(throws: ClientError.self) {
            _ = try await client.addAddress(try ServerAddress(parsing: impostor.url), to: record.key)
        }
        #expect(impostor.requests.isEmpty, "refused in the handshake: not even the probe got through")

        // With the primary gone, the session goes over the pinned LAN listener.
        #expect(server.stop() == 0)
        let lanOnly = try ServerProcess(serve: [
            "--listen", "127.0.0.2:\(lanPort)", "--tls-installation", "--database", "sqlite:" + data.file("h.sqlite"),
            "--outbox", data.file("outbox"),
        ])
        defer { _ = lanOnly.stop() }
        let (info, via) = try await client.appInfo(record.key)
        #expect(via == lan && info.instanceId == installation.id)
    }

    @Test(
        "a pinned request to a CA-trusted certificate is still checked for its name; the CA path works beside the pin")
    func pinKeepsTheNameCheck() async throws {
        let pin = Digest.sha256(try Ed25519Key.generate().publicKey)
        // The certificates' subject is CN=localhost: it counts for nothing beside a subjectAltName.
        for (names, host, accepted) in [
            ("DNS:elsewhere.example", "127.0.0.1", false), ("IP:127.0.0.1", "localhost", false),
            ("IP:127.0.0.1", "127.0.0.1", true), ("DNS:localhost", "localhost", true),
        ] {
            let certificates = try TestCertificates(names: names)
            defer { certificates.directory.remove() }
            let listener = try TLSListener(body: "{}", certificates: certificates)
            var request = ClientRequest(
                url: URL(string: "https://\(host):\(listener.port)/x")!, byteLimit: 1024, deadline: .seconds(5))
            request.pinnedKeySHA256 = pin
            let transport = CurlTransport(certificateAuthorities: certificates.caFile)
            let answered = (try? await transport.send(request))?.status == 200
            #expect(answered == accepted, "\(names) at \(host)")
            #expect(listener.requests.isEmpty == !accepted)
        }
    }

    @Test("the system's CAs are loaded once and shared; a store is never made of a file that cannot be read")
    func sharedCAStore() throws {
        #expect(!CurlLibrary.defaultCAFile.isEmpty, "libcurl names its CA file")
        let store = try #require(CAStores.store(for: CurlLibrary.defaultCAFile))
        #expect(CAStores.store(for: CurlLibrary.defaultCAFile) === store, "loaded once")
        #expect(CAStores.store(for: "/nonexistent/ca.pem") == nil)
        #expect(CAStores.store(for: "") == nil)
    }

    @Test("a certificate's installation key (P-256 or Ed25519) is read from its DER; another key, or damage, is none")
    func certificateKey() throws {
        let keys: [any InstallationSigningKey] = [try P256Key.generate(), try Ed25519Key.generate()]
        for key in keys {
            let pem = try key.selfSignedCertificatePEM(
                commonName: "t", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1", "::1"], notBefore: 0,
                notAfter: 86_400, serial: [1, 2, 3])
            let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
            let der = try #require(Data(base64Encoded: body).map(Array.init))
            #expect(CertificateKey.installationKey(certificateDER: der) == key.publicKey)
            for cut in [0, 1, 10, der.count / 2, der.count - 1] {
                #expect(CertificateKey.installationKey(certificateDER: Array(der.prefix(cut))) == nil)
            }
            var lengthLie = der
            lengthLie[1] = 0x84  // a four-byte length running past the end
            #expect(CertificateKey.installationKey(certificateDER: lengthLie) == nil)
            #expect(throws: CryptoError.self) {
                _ = try key.selfSignedCertificatePEM(
                    commonName: "t", dnsNames: ["a,DNS:evil.example"], ipAddresses: [], notBefore: 0, notAfter: 1,
                    serial: [1])
            }
            #expect(throws: CryptoError.self) {
                _ = try key.selfSignedCertificatePEM(
                    commonName: "t", dnsNames: [], ipAddresses: ["fe80::1%eth0"], notBefore: 0, notAfter: 1,
                    serial: [1])
            }
        }
        // An RSA certificate carries no installation key.
        let run = try ServerProcess.runProgram(
            "/bin/sh",
            [
                "-c",
                "openssl req -x509 -newkey rsa:2048 -nodes -keyout /dev/null -subj /CN=x -days 1 -outform der | base64 -w0",
            ])
        let rsa = try #require(Data(base64Encoded: run.output.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(CertificateKey.installationKey(certificateDER: Array(rsa)) == nil)
    }

    @Test("a pairing link reads back as written, and anything else in one is refused")
    func pairingLinks() throws {
        let id = InstanceID(UUID())
        let fingerprint = IdentityProof.fingerprint(sha256: Array(repeating: 0xFB, count: 32))
        let link = try PairingLink(instanceID: id, keyFingerprint: fingerprint, url: "https://[::1]:8443/books")
        #expect(fingerprint.contains("+") || fingerprint.contains("/"))
        #expect(try PairingLink(parsing: link.description) == link)
        #expect(link.keyDigest == Array(repeating: 0xFB, count: 32))
        let k = link.description.components(separatedBy: "k=")[1].prefix { $0 != "&" }
        for text in [
            "homeport://pair?s=\(id)&k=\(k)",
            "homeport://pair?s=\(id)&k=\(k)&u=https%3A%2F%2Fa.example&u=https%3A%2F%2Fb.example",
            "homeport://pair?s=\(id)&k=\(k)&u=https%3A%2F%2Fa.example&x=1",
            "homeport://pair?s=nope&k=\(k)&u=https%3A%2F%2Fa.example",
            "homeport://pair?s=\(id)&k=SHA256%3Ashort&u=https%3A%2F%2Fa.example",
            "homeport://pair?s=\(id)&k=\(k)&u=ftp%3A%2F%2Fa.example",
            "homeport://pair?s=\(id)&k=\(k)&u=https%3A%2F%2Fa.example%3Fq%3D1",
            "https://pair?s=\(id)&k=\(k)&u=https%3A%2F%2Fa.example",
            "homeport://other?s=\(id)&k=\(k)&u=https%3A%2F%2Fa.example",
        ] {
            #expect(throws: PairingLinkError.self, "\(text)") { try PairingLink(parsing: text) }
        }
    }
}
