import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

@Suite("The client library over HTTPS, through nginx in front of replicas")
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
}
