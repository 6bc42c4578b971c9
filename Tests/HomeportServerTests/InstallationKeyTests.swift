import Foundation
import HomeportCrypto
import HomeportHTTP
import HomeportLogging
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// The installation key: made with the identity, the same on every replica, sealed at rest, and
/// proved for each challenge over the host the request named.
@Suite("The installation key and signed identity challenges", .tags(.postgres))
struct InstallationKeyTests {
    /// A fresh challenge: 32 random bytes in base64url.
    static func challenge() throws -> String { IdentityProof.base64URL(try SystemRandom().bytes(32)) }

    /// `GET path` with `host` as the Host header (or none), over a fresh connection.
    static func get(_ port: Int, _ path: String, host: String? = "127.0.0.1") throws -> RawResponse {
        var text = "GET \(path) HTTP/1.1\r\n"
        if let host { text += "Host: \(host)\r\n" }
        text += "Connection: close\r\n\r\n"
        return try RawHTTP.exchange(port: port, Array(text.utf8))
    }

    static func identity(_ response: RawResponse) throws -> ServerIdentity {
        try JSONDecoder().decode(ServerIdentity.self, from: Data(response.text.utf8))
    }

    @Test("a challenge is signed by the published key over the id, the challenge and the host the request named")
    func signedChallenge() throws {
        try withApplication(.sqlite) { application, _ in
            let port = application.port
            let plain = try Self.identity(try Self.get(port, HomeportPath.serverIdentity))
            #expect(plain.publicKey == nil && plain.signature == nil, "without a challenge: the three members only")
            let first = try Self.identity(
                try Self.get(port, HomeportPath.serverIdentity + "?challenge=" + Self.challenge()))
            let publicKey = try #require(first.publicKey.flatMap(IdentityProof.readKey))
            for host in ["127.0.0.1:\(port)", "Books.Example.COM", "books.example.com:8443", "[::1]:\(port)"] {
                let challenge = try Self.challenge()
                let response = try Self.get(port, HomeportPath.serverIdentity + "?challenge=" + challenge, host: host)
                #expect(response.status == 200)
                #expect(response.header("Cache-Control") == "no-store")
                let answer = try Self.identity(response)
                #expect(answer.instanceId == plain.instanceId)
                #expect(answer.publicKey == first.publicKey)
                let signature = try #require(answer.signature.flatMap(IdentityProof.readBase64URL))
                let named = try #require(IdentityProof.host(of: host))
                let message = IdentityProof.message(instanceId: plain.instanceId, challenge: challenge, host: named)
                #expect(InstallationKeys.isValidSignature(signature, of: message, publicKey: publicKey), "\(host)")
                // Over another host, another challenge or another id, it proves nothing.
                for other in [
                    IdentityProof.message(instanceId: plain.instanceId, challenge: challenge, host: "192.168.1.20"),
                    IdentityProof.message(instanceId: plain.instanceId, challenge: try Self.challenge(), host: named),
                    IdentityProof.message(instanceId: InstanceID(UUID()), challenge: challenge, host: named),
                ] {
                    #expect(!InstallationKeys.isValidSignature(signature, of: other, publicKey: publicKey))
                }
            }
        }
    }

    @Test("a malformed challenge, or one without a Host, is 400 and signs nothing")
    func malformedChallenges() throws {
        try withApplication(.sqlite) { application, _ in
            let short = IdentityProof.base64URL(Array(repeating: 7, count: 15))
            let long = IdentityProof.base64URL(Array(repeating: 7, count: 65))
            let padded = Data(Array(repeating: UInt8(7), count: 17)).base64EncodedString()
            let standard = Data(Array(repeating: UInt8(0xfb), count: 18)).base64EncodedString()
            for challenge in [short, long, padded, standard, "", "%00" + (try Self.challenge())] {
                let response = try Self.get(application.port, HomeportPath.serverIdentity + "?challenge=" + challenge)
                #expect(response.status == 400, "\(challenge)")
                #expect(response.text.contains("invalid_field"), "\(challenge): \(response.text)")
                #expect(!response.text.contains("signature"))
            }
            let hostless = try RawHTTP.exchange(
                port: application.port,
                Array(
                    "GET \(HomeportPath.serverIdentity)?challenge=\(try Self.challenge()) HTTP/1.0\r\n\r\n".utf8))
            #expect(hostless.status == 400)
            #expect(!hostless.text.contains("signature"))
        }
    }

    @Test("every replica proves the one key, and the key's private half is stored only sealed")
    func sharedAndSealed() throws {
        let (url, cleanUp) = try Backend.postgres.makeDatabaseURL()
        defer { cleanUp() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let keyFile = directory.file("secrets")
        try Data((String(repeating: "ab", count: 32) + "\n").utf8).write(to: URL(fileURLWithPath: keyFile))
        chmod(keyFile, 0o600)
        var keys: [String] = []
        for _ in 0..<2 {
            var configuration = ServerConfiguration(listen: .init(host: "127.0.0.1", port: 0), database: url)
            configuration.http.workerThreads = 2
            configuration.secretsKeyFile = keyFile
            let application = try HomeportApplication(
                configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()))
            try application.start()
            defer { application.shutdown() }
            let challenge = try Self.challenge()
            let answer = try Self.identity(
                try Self.get(application.port, HomeportPath.serverIdentity + "?challenge=" + challenge))
            let key = try #require(answer.publicKey)
            let message = IdentityProof.message(instanceId: answer.instanceId, challenge: challenge, host: "127.0.0.1")
            #expect(
                InstallationKeys.isValidSignature(
                    try #require(answer.signature.flatMap(IdentityProof.readBase64URL)), of: message,
                    publicKey: try #require(IdentityProof.readKey(key))))
            keys.append(key)
        }
        #expect(keys[0] == keys[1])
        let database = try url.open()
        defer { database.close() }
        let row = try #require(try database.execute("SELECT public_key, sealed_key FROM server_identity").first)
        #expect(row.string("public_key") == keys[0])
        let sealed = try #require(row.string("sealed_key"))
        #expect(IdentityProof.readBase64URL(sealed) == nil, "sealed, not the raw private key")
        #expect(sealed.count > 60)

        // A replica without the secrets key cannot prove that key: it says nothing, rather than
        // answer as a server without one.
        var keyless = ServerConfiguration(listen: .init(host: "127.0.0.1", port: 0), database: url)
        keyless.http.workerThreads = 2
        let log = MemoryLogSink()
        let application = try HomeportApplication(configuration: keyless, logger: Logger(label: "test", sink: log))
        try application.start()
        defer { application.shutdown() }
        let withheld = try Self.get(application.port, HomeportPath.serverIdentity)
        #expect(withheld.status == 503)
        #expect(withheld.text.contains("identity_unavailable"))
        #expect(!withheld.text.contains(keys[0]))
    }

    @Test("a database sealed with one secrets key refuses to start with another")
    func anotherSecretsKey() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = DatabaseURL.sqlite(path: directory.file("h.sqlite"))
        var configuration = ServerConfiguration(listen: .init(host: "127.0.0.1", port: 0), database: database)
        configuration.http.workerThreads = 2
        let first = try HomeportApplication(
            configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()))
        try first.start()
        let key = try first.identity.current().publicKey
        #expect(key != nil)
        first.shutdown()
        let other = directory.file("other-key")
        try Data((String(repeating: "cd", count: 32) + "\n").utf8).write(to: URL(fileURLWithPath: other))
        chmod(other, 0o600)
        configuration.secretsKeyFile = other
        #expect {
            _ = try HomeportApplication(
                configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()))
        } throws: { String(describing: $0).contains("installation key") }
    }

    @Test("a flood of challenges from one address gets 429 before it gets a signing oracle; other addresses are served")
    func budget() throws {
        let budget = ChallengeBudget(burst: 3, perSecond: 2)
        let start = ContinuousClock.now
        #expect((0..<5).map { _ in budget.take(client: "192.0.2.1", now: start) } == [true, true, true, false, false])
        #expect(budget.take(client: "192.0.2.2", now: start), "another address has its own bucket")
        #expect(!budget.take(client: "192.0.2.1", now: start + .milliseconds(400)))
        #expect(budget.take(client: "192.0.2.1", now: start + .milliseconds(500)), "it refills")
        // One IPv6 subscriber's /64 is one bucket.
        #expect((0..<3).allSatisfy { budget.take(client: "2001:db8::\($0 + 1)", now: start) })
        #expect(!budget.take(client: "2001:db8::ffff", now: start))

        // The server's own, from --rate-limits: 30 at once, 3 more each second.
        let log = MemoryLogSink()
        let (url, cleanUp) = try Backend.sqlite.makeDatabaseURL()
        defer { cleanUp() }
        var configuration = ServerConfiguration(listen: .init(host: "127.0.0.1", port: 0), database: url)
        configuration.http.workerThreads = 2
        configuration.accounts.rateLimits.identityChallengePerAddress = RateLimit(30, per: 10)
        let application = try HomeportApplication(configuration: configuration, logger: Logger(label: "t", sink: log))
        try application.start()
        defer { application.shutdown() }
        do {
            var statuses: [Int] = []
            for _ in 0..<200 {
                statuses.append(
                    try Self.get(application.port, HomeportPath.serverIdentity + "?challenge=" + Self.challenge())
                        .status)
            }
            #expect(statuses.contains(429))
            #expect(statuses.prefix(30).allSatisfy { $0 == 200 })
            // Without a challenge the identity is still answered.
            #expect(try Self.get(application.port, HomeportPath.serverIdentity).status == 200)
        }
    }
    @Test("a row made before P-256 keeps its Ed25519 key: it proves it, and serves its certificate from it")
    func ed25519RowsKeepTheirKey() throws {
        let (url, cleanUp) = try Backend.sqlite.makeDatabaseURL()
        defer { cleanUp() }
        guard case .sqlite(let path) = url else { return }
        let secrets = try SecretsKey.load(path: path + ".secrets-key", create: true)
        let id = InstanceID(UUID())
        let key = try Ed25519Key.generate()
        do {
            let database = try url.open()
            defer { database.close() }
            for migrator in Product.homeport.migrators { _ = try migrator.migrate(database) }
            try database.execute(
                "INSERT INTO server_identity (id, instance_id, created_at, public_key, sealed_key) VALUES (1, $1, 0, $2, $3)",
                [
                    .text(id.description), .text(IdentityProof.writeKey(key.publicKey)),
                    .text(
                        try secrets.seal(
                            IdentityProof.base64URL(key.privateKey), context: IdentityStore.sealContext(id))),
                ])
        }
        var configuration = ServerConfiguration(listen: .init(host: "127.0.0.1", port: 0), database: url)
        configuration.http.workerThreads = 2
        configuration.installationTLS = InstallationTLSSettings(onListen: true)
        let application = try HomeportApplication(
            configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()))
        try application.start()
        defer { application.shutdown() }
        let installation = try application.identity.current()
        #expect(installation.instanceID == id)
        #expect(installation.publicKey == IdentityProof.writeKey(key.publicKey))
        let challenge = try Self.challenge()
        let signature = try #require(
            try installation.key?.sign(IdentityProof.message(instanceId: id, challenge: challenge, host: "127.0.0.1")))
        #expect(
            Ed25519Key.isValidSignature(
                signature, of: IdentityProof.message(instanceId: id, challenge: challenge, host: "127.0.0.1"),
                publicKey: key.publicKey))
        let certificate = try PeerCertificate.read(host: "127.0.0.1", port: application.port)
        #expect(certificate.keyType == "ed25519" && certificate.selfSigned)
        #expect(certificate.publicKey == key.publicKey.map { String(format: "%02x", $0) }.joined())
    }
}

extension InstallationKeyTests {
    /// `GET` of a challenge naming `host`, with `fields` (raw header lines) added.
    static func challenged(_ port: Int, host: String, _ fields: [String] = []) throws -> RawResponse {
        var text = "GET \(HomeportPath.serverIdentity)?challenge=\(try challenge()) HTTP/1.1\r\nHost: \(host)\r\n"
        for field in fields { text += field + "\r\n" }
        text += "Connection: close\r\n\r\n"
        return try RawHTTP.exchange(port: port, Array(text.utf8))
    }

    @Test(
        "a local network's address is signed for only a request from a local network: a relay from elsewhere through the public name gets 403 and no signature, however the hops are spelled"
    )
    func localAuthorities() throws {
        try withApplication(.sqlite) { application, _ in
            let port = application.port
            func signed(_ answer: RawResponse) -> Bool {
                answer.status == 200 && (try? Self.identity(answer).signature) != nil
            }
            func refused(_ answer: RawResponse, _ why: String) {
                #expect(answer.status == 403, "\(why): \(answer.status) \(answer.text)")
                #expect(answer.text.contains("challenge_refused") && !answer.text.contains("signature"), "\(why)")
            }
            let local = [
                "192.168.1.20", "192.168.1.20:8080", "10.0.0.5", "172.16.3.4", "100.64.1.2", "[fd00::1]:443",
                "[fe80::1]", "127.1", "0x7f.0.0.1", "localhost", "localhost.", "nas", "nas.local", "books.lan",
                "Books.Home.Arpa", "server.internal", "nas.fritz.box", "[fe80::1%25eth0]", "nas.lan..",
            ]
            for host in local {
                #expect(signed(try Self.challenged(port, host: host)), "\(host), asked from loopback directly")
                #expect(
                    signed(try Self.challenged(port, host: host, ["X-Forwarded-For: 192.168.1.7, 10.1.2.3"])),
                    "\(host), through a LAN proxy")
                refused(try Self.challenged(port, host: host, ["X-Forwarded-For: 203.0.113.9"]), host)
            }
            // Every spelling of a hop from elsewhere, anywhere in the chain, in any field, or one
            // that is no address.
            for fields in [
                ["X-Forwarded-For: 192.168.1.7, 203.0.113.9"], ["X-Forwarded-For: 203.0.113.9, 192.168.1.7"],
                ["X-Forwarded-For: 10.0.0.2", "X-Forwarded-For: 2001:db8::1"], ["x-forwarded-for: [2001:db8::1]:443"],
                ["Forwarded: for=\"[2001:db8::7]\";proto=https"], ["Forwarded: for=unknown"],
                ["X-Real-IP: 198.51.100.1"],
                ["X-Forwarded-For: nonsense"], ["X-Forwarded-For: ::ffff:203.0.113.9"],
            ] {
                refused(try Self.challenged(port, host: "192.168.1.20", fields), "\(fields)")
            }
            // A public name is signed for whoever asks, as before.
            #expect(signed(try Self.challenged(port, host: "books.example.net", ["X-Forwarded-For: 203.0.113.9"])))
            #expect(signed(try Self.challenged(port, host: "203.0.113.50", ["X-Forwarded-For: 203.0.113.9"])))
        }

        // Behind a trusted proxy the client it names is the requester: from elsewhere, refused.
        let (url, cleanUp) = try Backend.sqlite.makeDatabaseURL()
        defer { cleanUp() }
        var configuration = ServerConfiguration(listen: .init(host: "127.0.0.1", port: 0), database: url)
        configuration.http.workerThreads = 2
        configuration.http.trustedProxies = try TrustedProxies(parsing: "127.0.0.0/8")
        let application = try HomeportApplication(
            configuration: configuration, logger: Logger(label: "t", sink: MemoryLogSink()))
        try application.start()
        defer { application.shutdown() }
        let relayed = try Self.challenged(application.port, host: "192.168.1.20", ["X-Forwarded-For: 203.0.113.9"])
        #expect(relayed.status == 403 && relayed.text.contains("challenge_refused"), "\(relayed.text)")
        let home = try Self.challenged(application.port, host: "192.168.1.20", ["X-Forwarded-For: 192.168.1.7"])
        let signature = try? Self.identity(home).signature
        #expect(home.status == 200 && signature != nil, "\(home.text)")
    }
}

extension InstallationKeyTests {
    @Test(
        "a home's IPv6 client, in the /64 of one of the machine's own addresses, asks from a local network; another /64, or a hop from one, does not"
    )
    func localIPv6Prefixes() throws {
        let prefixes: Set<UInt64> = [try #require(LocalAuthority.prefix(of: "2001:db8:1:2::20"))]
        func request(_ remote: String, _ headers: HTTPHeaders = [:]) -> HTTPRequest {
            HTTPRequest(method: .get, path: HomeportPath.serverIdentity, headers: headers, remoteAddress: remote)
        }
        #expect(LocalAuthority.mayProve(host: "nas.local", for: request("2001:db8:1:2::99"), prefixes: prefixes))
        #expect(!LocalAuthority.mayProve(host: "nas.local", for: request("2001:db8:1:3::99"), prefixes: prefixes))
        #expect(
            !LocalAuthority.mayProve(
                host: "nas.local", for: request("2001:db8:1:2::99", ["X-Forwarded-For": "2001:db8:9::1"]),
                prefixes: prefixes))
        #expect(
            LocalAuthority.mayProve(
                host: "nas.local", for: request("127.0.0.1", ["X-Forwarded-For": "2001:db8:1:2::7"]),
                prefixes: prefixes))
        #expect(
            LocalAuthority.mayProve(host: "books.example.net", for: request("2001:db8:1:3::99"), prefixes: prefixes))
        #expect(LocalAuthority.prefix(of: "192.168.1.20") == nil && LocalAuthority.prefix(of: "nas") == nil)
        // An IPv4 client of a dual-stack socket is named ::ffff:a.b.c.d: no /64 of a home's.
        #expect(LocalAuthority.prefix(of: "::ffff:203.0.113.9") == nil && LocalAuthority.prefix(of: "::1") == nil)
        #expect(!LocalAuthority.mayProve(host: "nas.local", for: request("::ffff:203.0.113.9"), prefixes: prefixes))
        #expect(!LocalAuthority.localPrefixes().contains { $0 == 0 || $0 >> 56 == 0xFE })
    }
}
