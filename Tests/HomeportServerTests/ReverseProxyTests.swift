import Foundation
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A throwaway CA and a certificate for 127.0.0.1 and localhost, made with the openssl CLI.
private struct TestCertificates {
    let directory: TemporaryDirectory
    var caFile: String { directory.file("ca.crt") }
    var certificateFile: String { directory.file("server.crt") }
    var keyFile: String { directory.file("server.key") }

    init() throws {
        directory = try TemporaryDirectory()
        let d = directory
        try d.file("san.ext").write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        for arguments in [
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                d.file("ca.key"), "-out", d.file("ca.crt"), "-days", "1", "-subj", "/CN=Homeport Test CA",
            ],
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                d.file("server.key"),
                "-out", d.file("server.csr"), "-subj", "/CN=localhost",
            ],
            [
                "x509", "-req", "-in", d.file("server.csr"), "-CA", d.file("ca.crt"), "-CAkey", d.file("ca.key"),
                "-CAcreateserial", "-out", d.file("server.crt"), "-days", "1", "-extfile", d.file("san.ext"),
            ],
        ] {
            let run = try ServerProcess.runProgram("/usr/bin/openssl", arguments)
            guard run.status == 0 else { throw RawHTTPError("openssl \(arguments[0]) failed: \(run.error)") }
        }
    }
}

extension String {
    fileprivate func write(_ text: String) throws {
        try text.write(toFile: self, atomically: true, encoding: .utf8)
    }
}

/// Debian's nginx terminating TLS and balancing round-robin over `upstreams`.
private final class NginxProxy {
    let port: Int
    private let process = Process()
    private let directory: TemporaryDirectory

    init(upstreams: [Int], certificates: TestCertificates) throws {
        directory = try TemporaryDirectory()
        port = try Self.freePort()
        let d = directory.path
        let servers = upstreams.map { "server 127.0.0.1:\($0);" }.joined(separator: " ")
        try directory.file("nginx.conf").write(
            """
            daemon off; master_process off; worker_processes 1;
            pid \(d)/nginx.pid; error_log \(d)/error.log;
            events { worker_connections 256; }
            http {
                access_log off;
                client_body_temp_path \(d); proxy_temp_path \(d); fastcgi_temp_path \(d);
                uwsgi_temp_path \(d); scgi_temp_path \(d);
                upstream homeport { \(servers) }
                server {
                    listen 127.0.0.1:\(port) ssl;
                    ssl_certificate \(certificates.certificateFile);
                    ssl_certificate_key \(certificates.keyFile);
                    location / {
                        proxy_pass http://homeport;
                        proxy_set_header Host $host;
                        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
                        proxy_set_header X-Forwarded-Proto $scheme;
                    }
                }
            }
            """)
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-c", directory.file("nginx.conf"), "-p", d]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<200 {
            if let fd = try? RawHTTP.connect(port: port, timeout: 1) {
                close(fd)
                return
            }
            usleep(20_000)
        }
        throw RawHTTPError(
            "nginx did not start: \((try? String(contentsOfFile: d + "/error.log", encoding: .utf8)) ?? "")")
    }

    deinit {
        // SIGKILL: a child spawned from a test thread inherits its blocked SIGTERM.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        directory.remove()
    }

    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// curl (real libcurl, real TLS) through the proxy, trusting the test CA, from `source`.
private func curl(
    _ proxy: NginxProxy, _ certificates: TestCertificates, _ method: String, _ path: String, from source: String,
    token: String? = nil, json: String? = nil
) throws -> (status: Int, body: [String: Any]) {
    var arguments = [
        "-s", "-o", "-", "-w", "\n%{http_code}", "--cacert", certificates.caFile, "--interface", source, "-X", method,
    ]
    if let token { arguments += ["-H", "X-Session-Token: \(token)"] }
    if let json { arguments += ["-H", "Content-Type: application/json", "--data-binary", json] }
    arguments.append("https://127.0.0.1:\(proxy.port)\(path)")
    let run = try ServerProcess.runProgram("/usr/bin/curl", arguments, timeout: 20)
    guard run.status == 0, let split = run.output.range(of: "\n", options: .backwards),
        let status = Int(run.output[split.upperBound...])
    else { throw RawHTTPError("curl \(path) failed (\(run.status)): \(run.error)") }
    let body =
        (try? JSONSerialization.jsonObject(with: Data(run.output[..<split.lowerBound].utf8))) as? [String: Any] ?? [:]
    return (status, body)
}

@Suite("Three replicas on one PostgreSQL database behind nginx terminating TLS")
struct ReverseProxyTests {
    @Test("a token works on every replica; identity is one; each client address has its own budget")
    func replicasBehindNginx() throws {
        let (url, cleanUp) = try Backend.postgres.makeDatabaseURL()
        defer { cleanUp() }
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let replicas = try (0..<3).map { _ in
            try ServerProcess(serve: [
                "--database", url.rawText, "--signup", "open", "--password-iterations", "1000",
                "--outbox", scratch.file("outbox"), "--trusted-proxies", "127.0.0.1",
                "--rate-limits", "login-per-address=4/600",
            ])
        }
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
        let served = replicas.filter { $0.standardError.contains("GET \(HomeportPath.appInfo) 200") }
        #expect(served.count == 3, "round-robin: every replica served the token")
        #expect(
            replicas.allSatisfy {
                !$0.standardError.contains("GET \(HomeportPath.appInfo)") || $0.standardError.contains("127.0.0.2")
            },
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
}
