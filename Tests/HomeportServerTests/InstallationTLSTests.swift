import Foundation
import HomeportCrypto
import HomeportHTTP
import HomeportLogging
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// HTTPS on the LAN without a certificate authority: a certificate the server makes from the
/// installation key, on its main listener or another, renewed by itself.
@Suite("HTTPS with the installation's own certificate", .tags(.process, .postgres))
struct InstallationTLSTests {
    /// The raw installation key `identity show --json` prints for the database at `database`, in hex.
    static func installationKey(_ database: String) throws -> String {
        let run = try ServerProcess.run(["identity", "show", "--json", "--database", database])
        #expect(run.status == 0, "\(run.error)")
        let object = try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any]
        let text = try #require(object?["publicKey"] as? String)
        let key = try #require(IdentityProof.readKey(text))
        return key.map { String(format: "%02x", $0) }.joined()
    }

    @Test(
        "serve --tls-installation: HTTPS on 127.0.0.2 with a self-signed certificate whose key is the installation key; no CA trusts it"
    )
    func servesTheInstallationCertificate() throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let database = "sqlite:" + data.file("h.sqlite")
        let server = try ServerProcess(serve: [
            "--listen", "127.0.0.2:0", "--tls-installation", "--database", database, "--outbox", data.file("outbox"),
        ])
        #expect(server.banner.contains("https://127.0.0.2:"))
        let key = try Self.installationKey(database)
        for version in ["TLSv1_3", "TLSv1_2"] {
            let certificate = try PeerCertificate.read(host: "127.0.0.2", port: server.port, maximumVersion: version)
            #expect(certificate.publicKey == key, "the certificate's key is the installation key (\(version))")
            #expect(certificate.keyType == "p256", "a key every TLS stack takes, browsers included")
            #expect(certificate.selfSigned)
            #expect(certificate.ips.contains("127.0.0.2") && certificate.dns.contains("localhost"))
            let now = Int64(Date().timeIntervalSince1970)
            #expect(certificate.notBefore <= now && certificate.notBefore >= now - 3_700)
            #expect(certificate.notAfter - certificate.notBefore == InstallationCertificate.lifetime + 3_600)
        }
        // curl: refused on the system's trust; accepted with the key pinned (its own check, not ours).
        let url = "https://127.0.0.2:\(server.port)\(HomeportPath.serverIdentity)"
        #expect(try ServerProcess.runProgram("/usr/bin/curl", ["-sf", url]).status != 0)
        let digest = try ServerProcess.runProgram(
            "/bin/sh",
            [
                "-c",
                "openssl s_client -connect 127.0.0.2:\(server.port) </dev/null 2>/dev/null | openssl x509 -pubkey -noout"
                    + " | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
            ]
        ).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let pinned = try ServerProcess.runProgram(
            "/usr/bin/curl", ["-sfk", "--pinnedpubkey", "sha256//" + digest, url])
        #expect(pinned.status == 0 && pinned.output.contains("instanceId"), "\(pinned.error)")
        let other = try ServerProcess.runProgram(
            "/usr/bin/curl", ["-sfk", "--pinnedpubkey", "sha256//" + String(repeating: "A", count: 43) + "=", url])
        #expect(other.status != 0)
    }

    @Test(
        "HOMEPORT_TLS_INSTALLATION=1 switches it on as the flag does (a packaged service's settings file); a word that is not 1 or 0 is refused"
    )
    func switchedOnByItsVariable() throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let database = "sqlite:" + data.file("h.sqlite")
        let server = try ServerProcess(
            serve: ["--listen", "127.0.0.2:0", "--database", database, "--outbox", data.file("outbox")],
            environment: ["HOMEPORT_TLS_INSTALLATION": "1"])
        #expect(server.banner.contains("https://127.0.0.2:"), "\(server.banner)")
        let certificate = try PeerCertificate.read(host: "127.0.0.2", port: server.port, maximumVersion: "TLSv1_3")
        #expect(certificate.publicKey == (try Self.installationKey(database)) && certificate.selfSigned)
        for (value, expected) in [("maybe", "HOMEPORT_TLS_INSTALLATION"), ("yes", "--installation-listen")] {
            // With a CA's certificate on the same listener: the switch's own refusal shows it was read.
            let certificates = try TestCertificates(names: "IP:127.0.0.1")
            defer { certificates.directory.remove() }
            let run = try ServerProcess.run(
                [
                    "serve", "--database", "sqlite:" + data.file("u.sqlite"), "--listen", "127.0.0.1:0", "--tls-cert",
                    certificates.certificateFile, "--tls-key", certificates.keyFile,
                ], environment: ["HOMEPORT_TLS_INSTALLATION": value], timeout: 20)
            #expect(run.status == 2 && run.error.contains(expected), "\(value): \(run.error)")
        }
    }

    @Test("--installation-listen serves it beside a CA's certificate on --listen: each listener its own")
    func besideACertificateAuthority() throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let certificates = try TestCertificates(names: "IP:127.0.0.1")
        defer { certificates.directory.remove() }
        let database = "sqlite:" + data.file("h.sqlite")
        let lanPort = try RawHTTP.freePort()
        let server = try ServerProcess(serve: [
            "--database", database, "--outbox", data.file("outbox"), "--tls-cert", certificates.certificateFile,
            "--tls-key", certificates.keyFile, "--installation-listen", "127.0.0.2:\(lanPort)",
        ])
        #expect(server.banner.contains("https://127.0.0.1:"))
        let key = try Self.installationKey(database)
        let public_ = try PeerCertificate.read(host: "127.0.0.1", port: server.port)
        #expect(public_.publicKey != key && !public_.selfSigned, "the CA's certificate on --listen")
        let lan = try PeerCertificate.read(host: "127.0.0.2", port: lanPort)
        #expect(lan.publicKey == key && lan.selfSigned)
        let viaCA = try ServerProcess.runProgram(
            "/usr/bin/curl",
            ["-sf", "--cacert", certificates.caFile, "https://127.0.0.1:\(server.port)\(HomeportPath.serverIdentity)"])
        let viaLAN = try ServerProcess.runProgram(
            "/usr/bin/curl", ["-sfk", "https://127.0.0.2:\(lanPort)\(HomeportPath.serverIdentity)"])
        #expect(viaCA.status == 0 && viaCA.output == viaLAN.output, "one installation behind both")
        #expect(
            server.standardError(within: 5) { $0.contains("serving HTTPS with the installation's certificate") }
                .contains("127.0.0.2:\(lanPort)"))
    }

    @Test("the certificate is made anew a third of its life before its end, and served to new connections")
    func renewal() throws {
        let (url, cleanUp) = try Backend.sqlite.makeDatabaseURL()
        defer { cleanUp() }
        var configuration = ServerConfiguration(listen: .init(host: "127.0.0.1", port: 0), database: url)
        configuration.http.workerThreads = 2
        configuration.installationTLS = InstallationTLSSettings(onListen: true)
        let clock = ManualWallClock()
        let log = MemoryLogSink()
        let application = try HomeportApplication(
            configuration: configuration, logger: Logger(label: "test", sink: log), clock: clock)
        try application.start()
        defer { application.shutdown() }
        let first = try PeerCertificate.read(host: "127.0.0.1", port: application.port)
        #expect(first.notBefore == Int64(clock.now().timeIntervalSince1970) - InstallationCertificate.backdating)
        #expect(try application.renewInstallationCertificate() == false)
        clock.advance(by: 59 * 86_400)
        #expect(try application.renewInstallationCertificate() == false, "31 days left: kept")
        clock.advance(by: 86_400 + 1)
        #expect(try application.renewInstallationCertificate() == true, "30 days left: renewed")
        #expect(log.lines.joined(separator: "\n").contains("renewed the installation certificate"))
        let second = try PeerCertificate.read(host: "127.0.0.1", port: application.port)
        #expect(second.serial != first.serial)
        #expect(second.notAfter == first.notAfter + 60 * 86_400 + 1)
        #expect(second.publicKey == first.publicKey, "the same key")
        #expect(try application.renewInstallationCertificate() == false)
    }

    @Test("a certificate is due when a third of its life is left, the key changed, or the names did")
    func due() throws {
        let identity = InstallationIdentity(instanceID: InstanceID(UUID()), key: try P256Key.generate())
        let names = CertificateNames(dns: ["localhost"], ips: ["127.0.0.1"])
        let certificate = try InstallationCertificate.make(identity: identity, names: names, now: 1_000_000)
        let end = 1_000_000 + InstallationCertificate.lifetime
        #expect(
            !certificate.isDue(
                now: end - InstallationCertificate.renewalMargin - 1, publicKey: identity.publicKey, names: names))
        #expect(
            certificate.isDue(
                now: end - InstallationCertificate.renewalMargin, publicKey: identity.publicKey, names: names))
        let other = InstallationIdentity(instanceID: identity.instanceID, key: try P256Key.generate())
        #expect(certificate.isDue(now: 1_000_000, publicKey: other.publicKey, names: names))
        #expect(
            certificate.isDue(
                now: 1_000_000, publicKey: identity.publicKey, names: .init(dns: ["localhost"], ips: ["10.0.0.7"])))
        #expect(throws: InstallationCertificateError.self) {
            try InstallationCertificate.make(
                identity: InstallationIdentity(instanceID: identity.instanceID, key: nil), names: names, now: 0)
        }
    }

    @Test("names: the listen address, the public URL's host, loopback, and every interface's address for a wildcard")
    func names() {
        let specific = CertificateNames.gather(hosts: ["192.168.1.20", "books.example.net", "[::1]", "bad name"]) {
            ["10.9.9.9"]
        }
        #expect(
            specific.ips.contains("192.168.1.20") && specific.ips.contains("::1") && specific.ips.contains("127.0.0.1"))
        #expect(specific.dns.contains("books.example.net") && specific.dns.contains("localhost"))
        #expect(!specific.ips.contains("10.9.9.9"), "interfaces only for a wildcard")
        #expect(!specific.dns.contains("bad name"))
        let wildcard = CertificateNames.gather(hosts: ["0.0.0.0"]) { ["10.9.9.9", "fe80::1%eth0", "junk"] }
        #expect(wildcard.ips.contains("10.9.9.9") && !wildcard.ips.contains("junk"))
        #expect(!wildcard.ips.contains("0.0.0.0"))
        #expect(!CertificateNames.interfaceAddresses().isEmpty, "this machine has a loopback interface at least")
    }

    @Test("refused with a clear message: beside --tls-cert on one listener, on a socket, a bad address, no key")
    func usage() throws {
        let certificates = try TestCertificates(names: "IP:127.0.0.1")
        defer { certificates.directory.remove() }
        let data = try TemporaryDirectory()
        defer { data.remove() }
        for (arguments, expected) in [
            (
                [
                    "--listen", "127.0.0.1:0", "--tls-installation", "--tls-cert", certificates.certificateFile,
                    "--tls-key", certificates.keyFile,
                ],
                "--installation-listen"
            ),
            (
                ["--listen", data.file("s.sock"), "--public-url", "https://x.example", "--tls-installation"],
                "plain HTTP to the proxy"
            ),
            (["--listen", "127.0.0.1:0", "--installation-listen", "nowhere"], "--installation-listen"),
        ] {
            let run = try ServerProcess.run(
                ["serve", "--database", "sqlite:" + data.file("u.sqlite")] + arguments, timeout: 20)
            #expect(run.status == 2, "\(arguments): \(run.error)")
            #expect(run.error.contains(expected), "\(run.error)")
        }
        // PostgreSQL without a secrets key holds no installation key: nothing to make a certificate from.
        let (url, cleanUp) = try Backend.postgres.makeDatabaseURL()
        defer { cleanUp() }
        let run = try ServerProcess.run(
            ["serve", "--listen", "127.0.0.1:0", "--tls-installation", "--database", url.rawText], timeout: 20)
        #expect(run.status != 0)
        #expect(
            run.error.contains("needs the installation key") && run.error.contains("--secrets-key-file"), "\(run.error)"
        )
    }
}
