import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

@Suite("The client library over HTTPS, through nginx in front of replicas", .tags(.process, .postgres))
struct HTTPSClientTests {
    @Test("signs in and calls app-info with the test CA trusted for this client only; without it, sends nothing")
    func clientThroughNginx() async throws {
        let (url, cleanUp) = try Backend.postgres.makeDatabaseURL()
        defer { cleanUp() }
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let replicas = try ServerProcess.replicas(
            3, database: url.rawText, outbox: scratch.file("outbox"), ["--trusted-proxies", "127.0.0.1"])
        defer { for replica in replicas { #expect(replica.stop() == 0) } }
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let proxy = try NginxProxy(upstreams: replicas.map { $0.port }, certificates: certificates)
        let address = try ServerAddress(parsing: "https://127.0.0.1:\(proxy.port)")
        _ = try ServerProcess.runProgram(
            "/usr/bin/curl",
            [
                "-s", "--cacert", certificates.caFile, "-H", "Content-Type: application/json", "--data-binary",
                #"{"email":"ada@example.com","password":"correct horse battery"}"#,
                "https://127.0.0.1:\(proxy.port)\(AllauthAppPath.base)/\(AllauthAppPath.signup)",
            ])

        // The system's CAs do not know the test CA: the probe fails, and no credential is sent.
        let strangerHome = try TemporaryDirectory()
        defer { strangerHome.remove() }
        let stranger = HomeportClient(
            directory: try ServerDirectory(directory: strangerHome.path),
            vault: try FileVault(directory: strangerHome.file("vault")), transport: CurlTransport())
        await #expect(throws: (any Error).self) {
            _ = try await stranger.login(at: address, email: "ada@example.com", password: "correct horse battery")
        }
        #expect(stranger.directory.all.isEmpty)

        let home = try TemporaryDirectory()
        defer { home.remove() }
        let client = HomeportClient(
            directory: try ServerDirectory(directory: home.path), vault: try FileVault(directory: home.file("vault")),
            transport: CurlTransport(certificateAuthorities: certificates.caFile))
        _ = try await client.login(at: address, email: "ada@example.com", password: "correct horse battery")
        let server = try #require(client.directory.all.first)
        for _ in 0..<3 {
            let (info, via) = try await client.appInfo(server.key)
            #expect(via.url.hasPrefix("https://127.0.0.1:\(proxy.port)"))
            #expect(info.instanceId == server.instanceID)
        }
    }

    @Test(
        "the CLI trusts a private CA with --ca-file, for that command only; without it, or for another name, nothing is sent"
    )
    func commandLineCAFile() throws {
        let certificates = try TestCertificates(names: "IP:127.0.0.1")
        defer { certificates.directory.remove() }
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let server = try ServerProcess(serve: [
            "--database", "sqlite:" + data.file("h.sqlite"), "--signup", "open", "--password-iterations", "1000",
            "--tls-cert", certificates.certificateFile, "--tls-key", certificates.keyFile,
        ])
        defer { server.stop() }
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        let login = ["login", "https://127.0.0.1:\(server.port)", "--email", "ada@example.com", "--password-stdin"]

        let untrusted = try ServerProcess.runClient(
            login + ["--signup"], environment: environment, input: password + "\n")
        #expect(untrusted.status != 0)
        #expect(try ServerDirectory(directory: home.path).all.isEmpty)
        let missing = try ServerProcess.runClient(
            login + ["--ca-file", home.file("no-such.pem")], environment: environment, input: password + "\n")
        #expect(missing.status == 2)
        #expect(missing.error.contains("no readable file there"))

        let trusted = try ServerProcess.runClient(
            login + ["--signup", "--ca-file", certificates.caFile], environment: environment, input: password + "\n")
        #expect(trusted.status == 0, "\(trusted.error)")
        let whoami = try ServerProcess.runClient(
            ["whoami", "https://127.0.0.1:\(server.port)", "--ca-file", certificates.caFile], environment: environment)
        #expect(whoami.status == 0, "\(whoami.error)")
        // The same CA, the same server, reached by a name its certificate does not carry.
        let otherName = try ServerProcess.runClient(
            [
                "address", "add", "https://127.0.0.1:\(server.port)", "https://localhost:\(server.port)", "--ca-file",
                certificates.caFile,
            ], environment: environment)
        #expect(otherName.status != 0)
        #expect(otherName.error.contains("localhost"), "\(otherName.error)")
        #expect(try ServerDirectory(directory: home.path).all.first?.alternatives.isEmpty == true)
        // Without the CA, the next command trusts only the system's.
        let withoutCA = try ServerProcess.runClient(
            ["whoami", "https://127.0.0.1:\(server.port)"], environment: environment)
        #expect(withoutCA.status != 0)
    }
}
