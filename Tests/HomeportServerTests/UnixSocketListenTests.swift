import Foundation
import HomeportLogging
import HomeportServer
import HomeportTestSupport
import HomeportWire
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `homeport-server serve --listen /PATH`: the app's listener on a Unix socket, for a reverse
/// proxy on the same host.
@Suite("serve on a Unix socket", .tags(.process))
struct UnixSocketListenTests {
    /// A request through the socket as curl sends it: the status and the body.
    private static func call(
        _ socket: String, _ path: String, method: String = "GET", headers: [String] = [], json: String? = nil
    ) throws -> (status: Int, body: String) {
        try Curl.call(
            "http://books.example.net" + path, method: method, unixSocket: socket, headers: headers, json: json)
    }

    @Test(
        "the proxy's X-Forwarded-For names the client for budgets and the log; the socket is 0660 and gone at the stop; the workers run SCHED_BATCH"
    )
    func servesTheProxy() throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let socket = data.file("homeport.sock")
        let server = try ServerProcess(serve: [
            "--listen", socket, "--public-url", "https://books.example.net", "--database",
            "sqlite:" + data.file("h.sqlite"), "--signup", "open", "--password-iterations", "1000", "--workers", "2",
            "--rate-limits", "login-per-address=3/600", "--max-connections-per-address", "1",
        ])
        #expect(server.banner.contains("listening on unix:\(socket)"), "\(server.banner)")
        var status = stat()
        #expect(lstat(socket, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK)
        #expect(status.st_mode & 0o777 == 0o660)

        let signup = try Self.call(
            socket, AllauthAppPath.base + "/" + AllauthAppPath.signup, method: "POST",
            headers: ["X-Forwarded-For: 198.51.100.9"],
            json: #"{"email":"ada@example.com","password":"correct horse battery"}"#)
        #expect(signup.status == 200, "\(signup.body)")

        // Sign-ins the proxy says come from 198.51.100.7, each naming another client in front of
        // it: they all count against that one address, and another client keeps its own budget.
        let login = AllauthAppPath.base + "/" + AllauthAppPath.login
        let password = #"{"email":"ada@example.com","password":"correct horse battery"}"#
        let statuses = try (1...5).map { attempt in
            try Self.call(
                socket, login, method: "POST", headers: ["X-Forwarded-For: 203.0.113.\(attempt), 198.51.100.7"],
                json: password
            ).status
        }
        #expect(statuses == [200, 200, 200, 429, 429], "\(statuses)")
        let bystander = try Self.call(
            socket, login, method: "POST", headers: ["X-Forwarded-For: 198.51.100.8"], json: password)
        #expect(bystander.status == 200, "another client keeps its own budget: \(bystander.body)")

        let log = server.standardError { $0.contains("198.51.100.8") }
        #expect(log.contains("198.51.100.7") && log.contains("198.51.100.8"), "the log names the clients")
        #expect(!log.contains("203.0.113."), "what a client put in front of the proxy's word is no address")

        let workers = ThreadTable.policies(of: server.pid, named: "MHD-worker")
        #expect(workers == [3, 3], "the two workers are SCHED_BATCH: \(workers)")
        let main = ThreadTable.policies(of: server.pid, named: "homeport-server")
        #expect(!main.isEmpty && main.allSatisfy { $0 == 0 }, "the process's own threads are not: \(main)")

        // The per-address connection cap (1 here) counts TCP peers: the proxy's kept-alive
        // connections on the socket are all served.
        let held = try ServerProcess.runProgram(
            "/usr/bin/python3",
            [
                "-c",
                """
                import socket, sys
                held = []
                for _ in range(4):
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(10); s.connect(sys.argv[1])
                    held.append(s)
                for s in held:
                    s.sendall(b'GET /healthz HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')
                print(' '.join(s.recv(64).split(b' ')[1].decode() for s in held))
                """,
                socket,
            ])
        #expect(held.output.trimmingCharacters(in: .whitespacesAndNewlines) == "200 200 200 200", "\(held)")

        #expect(server.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: socket), "the socket is removed at the stop")
    }

    @Test("--scheduling normal keeps every thread under the default policy; a live socket is not taken over")
    func normalSchedulingAndLiveSocket() throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let socket = data.file("homeport.sock")
        let arguments = [
            "--listen", socket, "--public-url", "https://books.example.net", "--database",
            "sqlite:" + data.file("h.sqlite"), "--scheduling", "normal",
        ]
        let server = try ServerProcess(serve: arguments)
        defer { server.stop() }
        #expect(try Self.call(socket, "/healthz").status == 200)
        let workers = ThreadTable.policies(of: server.pid, named: "MHD-worker")
        #expect(!workers.isEmpty && workers.allSatisfy { $0 == 0 }, "the workers keep the default policy: \(workers)")

        let second = try ServerProcess.run(["serve"] + arguments, timeout: 20)
        #expect(second.status != 0)
        #expect(second.error.contains("another server listens on this socket"), "\(second.error)")
        #expect(try Self.call(socket, "/healthz").status == 200, "the first server still serves")
    }

    @Test("an application on a socket without a public URL refuses to start; with one, it serves on the socket")
    func libraryNeedsPublicURL() throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        var configuration = ServerConfiguration(database: try DatabaseURL(parsing: "sqlite:" + data.file("h.sqlite")))
        configuration.listenSocket = data.file("homeport.sock")
        configuration.http.workerThreads = 1
        #expect(throws: ConfigurationError.self) {
            try HomeportApplication(configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()))
        }
        #expect(!FileManager.default.fileExists(atPath: data.file("homeport.sock")))
        #expect(!FileManager.default.fileExists(atPath: data.file("h.sqlite")), "refused before the database is made")
        configuration.accounts.publicURL = "https://books.example.net"
        let application = try HomeportApplication(
            configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()))
        try application.start()
        defer { application.shutdown() }
        #expect(application.port == 0)
        #expect(try Self.call(data.file("homeport.sock"), "/healthz").status == 200)
    }
}
