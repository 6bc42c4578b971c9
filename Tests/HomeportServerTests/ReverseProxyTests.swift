import Foundation
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// curl (real libcurl, real TLS) through the proxy, trusting the test CA, from `source`.
private func curl(
    _ proxy: NginxProxy, _ certificates: TestCertificates, _ method: String, _ path: String, from source: String,
    token: String? = nil, json: String? = nil
) throws -> (status: Int, body: [String: Any]) {
    try curl(port: proxy.port, certificates, method, path, from: source, token: token, json: json)
}

/// curl over HTTPS to `port` on 127.0.0.1, trusting the test CA, from `source`.
private func curl(
    port: Int, _ certificates: TestCertificates, _ method: String, _ path: String, from source: String,
    token: String? = nil, json: String? = nil
) throws -> (status: Int, body: [String: Any]) {
    var arguments = [
        "-s", "-o", "-", "-w", "\n%{http_code}", "--cacert", certificates.caFile, "--interface", source, "-X", method,
    ]
    if let token { arguments += ["-H", "X-Session-Token: \(token)"] }
    if let json { arguments += ["-H", "Content-Type: application/json", "--data-binary", json] }
    arguments.append("https://127.0.0.1:\(port)\(path)")
    let run = try ServerProcess.runProgram("/usr/bin/curl", arguments, timeout: 20)
    guard run.status == 0, let split = run.output.range(of: "\n", options: .backwards),
        let status = Int(run.output[split.upperBound...])
    else { throw RawHTTPError("curl \(path) failed (\(run.status)): \(run.error)") }
    let body =
        (try? JSONSerialization.jsonObject(with: Data(run.output[..<split.lowerBound].utf8))) as? [String: Any] ?? [:]
    return (status, body)
}

@Suite("Three replicas on one PostgreSQL database over TLS: behind nginx, and on their own", .tags(.process, .postgres))
struct ReverseProxyTests {
    @Test("a token works on every replica; identity is one; each client address has its own budget")
    func replicasBehindNginx() throws {
        let (url, cleanUp) = try Backend.postgres.makeDatabaseURL()
        defer { cleanUp() }
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let replicas = try ServerProcess.replicas(
            3, database: url.rawText, outbox: scratch.file("outbox"),
            ["--trusted-proxies", "127.0.0.1", "--rate-limits", "login-per-address=4/600"])
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let proxy = try NginxProxy(upstreams: replicas.map(\.port), certificates: certificates)
        let app = AllauthAppPath.base + "/"
        let credentials = #"{"email":"ada@example.com","password":"correct horse battery"}"#

        // One installation, whichever replica answers.
        let ids = try (0..<6).map { _ in
            try curl(proxy, certificates, "GET", HomeportPath.serverIdentity, from: "127.0.0.2").body["instanceId"]
                as? String
        }
        #expect(Set(ids).count == 1 && ids[0] != nil)

        // Sign in through one replica, use the token on the others, sign out on yet another.
        let signup = try curl(
            proxy, certificates, "POST", app + AllauthAppPath.signup, from: "127.0.0.2", json: credentials)
        #expect(signup.status == 200)
        let token = try #require((signup.body["meta"] as? [String: Any])?["session_token"] as? String)
        for _ in 0..<6 {
            #expect(
                try curl(proxy, certificates, "GET", HomeportPath.appInfo, from: "127.0.0.2", token: token).status
                    == 200)
        }
        let logs = replicas.map { $0.standardError { $0.contains("GET \(HomeportPath.appInfo) 200") } }
        #expect(
            logs.filter { $0.contains("GET \(HomeportPath.appInfo) 200") }.count == 3,
            "round-robin: every replica served the token")
        #expect(
            logs.allSatisfy { !$0.contains("GET \(HomeportPath.appInfo)") || $0.contains("127.0.0.2") },
            "the access log names the client, not nginx")
        #expect(
            try curl(proxy, certificates, "DELETE", app + AllauthAppPath.session, from: "127.0.0.2", token: token)
                .status == 401)
        for _ in 0..<3 {
            #expect(
                try curl(proxy, certificates, "GET", HomeportPath.appInfo, from: "127.0.0.2", token: token).status
                    == 401)
        }

        // login-per-address is 4 per 10 minutes: spent by 127.0.0.2 across the replicas, not 127.0.0.3's.
        var statuses: [Int] = []
        for _ in 0..<5 {
            statuses.append(
                try curl(proxy, certificates, "POST", app + AllauthAppPath.login, from: "127.0.0.2", json: credentials)
                    .status)
        }
        #expect(statuses == [200, 200, 200, 200, 429], "\(statuses)")
        #expect(
            try curl(proxy, certificates, "POST", app + AllauthAppPath.login, from: "127.0.0.3", json: credentials)
                .status == 200)
        for replica in replicas { #expect(replica.stop() == 0) }
    }

    @Test("the same with the servers' own TLS and no proxy: sign in on one, use on another, sign out on a third")
    func replicasWithOwnTLS() throws {
        let (url, cleanUp) = try Backend.postgres.makeDatabaseURL()
        defer { cleanUp() }
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let replicas = try ServerProcess.replicas(
            3, database: url.rawText, outbox: scratch.file("outbox"),
            [
                "--tls-cert", certificates.certificateFile, "--tls-key", certificates.keyFile, "--rate-limits",
                "login-per-address=4/600",
            ])
        let ports = replicas.map(\.port)
        let app = AllauthAppPath.base + "/"
        let credentials = #"{"email":"ada@example.com","password":"correct horse battery"}"#
        let ids = try ports.map {
            try curl(port: $0, certificates, "GET", HomeportPath.serverIdentity, from: "127.0.0.2").body["instanceId"]
                as? String
        }
        #expect(Set(ids).count == 1 && ids[0] != nil)

        let signup = try curl(
            port: ports[0], certificates, "POST", app + AllauthAppPath.signup, from: "127.0.0.2", json: credentials)
        let token = try #require((signup.body["meta"] as? [String: Any])?["session_token"] as? String)
        #expect(
            try curl(port: ports[1], certificates, "GET", HomeportPath.appInfo, from: "127.0.0.2", token: token).status
                == 200)
        #expect(
            try curl(
                port: ports[2], certificates, "DELETE", app + AllauthAppPath.session, from: "127.0.0.2", token: token
            ).status == 401)
        for port in ports {
            #expect(
                try curl(port: port, certificates, "GET", HomeportPath.appInfo, from: "127.0.0.2", token: token).status
                    == 401)
        }

        // One address's login budget is spent across the replicas; another address keeps its own.
        let statuses = try (0..<5).map { index in
            try curl(
                port: ports[index % 3], certificates, "POST", app + AllauthAppPath.login, from: "127.0.0.2",
                json: credentials
            ).status
        }
        #expect(statuses == [200, 200, 200, 200, 429], "\(statuses)")
        #expect(
            try curl(
                port: ports[0], certificates, "POST", app + AllauthAppPath.login, from: "127.0.0.3", json: credentials
            ).status == 200)
        for replica in replicas { #expect(replica.stop() == 0) }
    }
}
