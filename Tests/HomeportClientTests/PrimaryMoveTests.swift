import Foundation
import HomeportClient
import HomeportTestSupport
import Testing

/// A server that moves: its plain-HTTP primary starts redirecting to `https://` on the same host,
/// or the person gives a new address. The new one becomes the primary, without signing in again,
/// only when it answers as the enrolled installation.
@Suite("A server that moves to HTTPS", .serialized, .tags(.process))
struct PrimaryMoveTests {
    func primary(_ run: (status: Int32, output: String, error: String)) -> String? {
        ((try? JSONSerialization.jsonObject(with: Data(run.output.utf8))) as? [[String: Any]])?.first?["primary"]
            as? String
    }

    @Test(
        "a primary that redirects to https on its host moves there when that answers as the installation; another installation there changes nothing"
    )
    func redirectToHTTPS() throws {
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let mine = try Installation(hosts: ["127.0.0.1"])
        let front = try RecordingListener(behaviour: .relay(port: try #require(mine.ports["127.0.0.1"]), fault: .none))
        defer { front.stop() }
        let secure = try ServerProcess(serve: [
            "--database", mine.database, "--tls-cert", certificates.certificateFile, "--tls-key", certificates.keyFile,
        ])
        defer { secure.stop() }
        let stranger = try Installation(hosts: ["127.0.0.1"])
        let strangerSecure = try ServerProcess(serve: [
            "--database", stranger.database, "--tls-cert", certificates.certificateFile, "--tls-key",
            certificates.keyFile,
        ])
        defer { strangerSecure.stop() }

        let home = try TemporaryDirectory()
        defer { home.remove() }
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        func run(_ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
            try ServerProcess.runClient(arguments, environment: environment)
        }
        #expect(try signUpWithCommandLine(front.url, environment: environment).status == 0)
        let listed = try run(["servers", "--json"])
        let server = try #require(
            ((try JSONSerialization.jsonObject(with: Data(listed.output.utf8))) as? [[String: Any]])?.first?["server"]
                as? String)
        #expect(primary(listed) == front.url)

        // The front now sends everyone to another installation's HTTPS: nothing moves, nothing is sent there.
        let redirect = { (port: Int) in
            RecordingListener.Behaviour.respond(
                status: 301, headers: ["Location": "https://127.0.0.1:\(port)/api/v1/server-identity"], body: "")
        }
        front.behaviour = redirect(strangerSecure.port)
        let refused = try run(["whoami", server, "--ca-file", certificates.caFile])
        #expect(refused.status != 0, "\(refused.output)")
        #expect(primary(try run(["servers", "--json"])) == front.url, "another installation changes nothing")

        // To this installation's HTTPS: the primary moves, and the session goes on there.
        front.behaviour = redirect(secure.port)
        let moved = try run(["whoami", server, "--ca-file", certificates.caFile, "--json"])
        #expect(moved.status == 0, "\(moved.error)")
        #expect(moved.error.contains("moved from \(front.url) to https://127.0.0.1:\(secure.port)"), "\(moved.error)")
        #expect(primary(try run(["servers", "--json"])) == "https://127.0.0.1:\(secure.port)")
        front.stop()
        #expect(try run(["whoami", server, "--ca-file", certificates.caFile]).status == 0, "no sign-in again")

        // Given by hand: the same check. Another installation is refused and changes nothing.
        let other = try run([
            "address", "primary", server, "https://127.0.0.1:\(strangerSecure.port)", "--ca-file", certificates.caFile,
        ])
        #expect(other.status == 3, "\(other.error)")
        #expect(primary(try run(["servers", "--json"])) == "https://127.0.0.1:\(secure.port)")
        let back = try run(["address", "primary", server, try mine.address("127.0.0.1").url, "--allow-http", "--json"])
        #expect(back.status == 0, "\(back.error)")
        #expect(primary(try run(["servers", "--json"])) == (try mine.address("127.0.0.1").url))
        #expect(try run(["whoami", server]).status == 0)
    }

    @Test(
        "an HTTPS primary that redirects to its canonical name moves there once that name answers as the installation; to another installation's name it moves nowhere, and a plain-HTTP primary's redirect to another host is never followed"
    )
    func redirectToCanonicalName() throws {
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let mine = try Installation(hosts: ["127.0.0.1"])
        let secure = try ServerProcess(serve: [
            "--database", mine.database, "--tls-cert", certificates.certificateFile, "--tls-key", certificates.keyFile,
        ])
        defer { secure.stop() }
        let stranger = try Installation(hosts: ["127.0.0.1"])
        let strangerSecure = try ServerProcess(serve: [
            "--database", stranger.database, "--tls-cert", certificates.certificateFile, "--tls-key",
            certificates.keyFile,
        ])
        defer { strangerSecure.stop() }
        // Two HTTPS fronts that send everyone to a canonical name: `localhost`, another host than
        // 127.0.0.1, so another origin.
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let (toMine, toStranger) = (try RawHTTP.freePort(), try RawHTTP.freePort())
        let site = [(toMine, secure.port), (toStranger, strangerSecure.port)].map { front, target in
            """
            server { listen 127.0.0.1:\(front) ssl; ssl_certificate \(certificates.certificateFile);
                ssl_certificate_key \(certificates.keyFile); return 301 https://localhost:\(target)$request_uri; }
            """
        }.joined(separator: "\n")
        let nginx = try ReverseProxy.nginx(site, port: toMine, in: scratch)
        defer { nginx.stop() }
        // A plain-HTTP front that does the same: anyone on the path could have written its redirect.
        let plain = try RecordingListener(
            behaviour: .respond(
                status: 301, headers: ["Location": "https://localhost:\(secure.port)/api/v1/server-identity"], body: "")
        )
        defer { plain.stop() }

        let home = try TemporaryDirectory()
        defer { home.remove() }
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        func run(_ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
            try ServerProcess.runClient(arguments + ["--ca-file", certificates.caFile], environment: environment)
        }
        // Signed up at the installation's plain address (the same database as its HTTPS process).
        #expect(try signUpWithCommandLine(try mine.address("127.0.0.1").url, environment: environment).status == 0)
        let directory = try ServerDirectory(directory: home.path)
        let server = try #require(directory.all.first?.key)
        let token = try #require(try FileVault(directory: home.file("vault")).token(for: server))
        func pointPrimary(at url: String) throws {
            try directory.update(server) {
                $0.primary = try! ServerAddress(parsing: url, allowHTTP: true)
                $0.lastWinner = nil
            }
        }

        try pointPrimary(at: "https://127.0.0.1:\(toStranger)")
        let refused = try run(["whoami", server])
        #expect(refused.status != 0, "\(refused.output)")
        #expect(directory.server(server)?.primary.url == "https://127.0.0.1:\(toStranger)", "nothing moved")

        try pointPrimary(at: plain.url)
        #expect(try run(["whoami", server]).status != 0)
        #expect(directory.server(server)?.primary.url == plain.url, "a plain-HTTP redirect elsewhere is not followed")
        #expect(!plain.sawCredential && plain.credentialBytes([token]) == 0)

        try pointPrimary(at: "https://127.0.0.1:\(toMine)")
        let moved = try run(["whoami", server, "--json"])
        #expect(moved.status == 0, "\(moved.error)")
        #expect(
            moved.error.contains("moved from https://127.0.0.1:\(toMine) to https://localhost:\(secure.port)"),
            "\(moved.error)")
        #expect(directory.server(server)?.primary.url == "https://localhost:\(secure.port)")
        nginx.stop()
        #expect(try run(["whoami", server]).status == 0, "no sign-in again")
    }
}
