import Foundation
import HomeportStorage
import HomeportTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Tests that run the real `homeport-server` executable.
@Suite("homeport-server processes", .tags(.process, .postgres, .interop))
struct ServerProcessTests {
    static func identity(_ port: Int) throws -> String {
        let response = try RawHTTP.request(port: port, path: "/api/v1/server-identity")
        guard response.status == 200, let id = response.jsonObject?["instanceId"] as? String else {
            throw RawHTTPError("identity answered \(response.status): \(response.text)")
        }
        return id
    }

    @Test("the instanceId survives a restart; SIGTERM stops the server cleanly", arguments: Backend.allCases)
    func survivesRestart(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let first = try ServerProcess(serve: ["--database", url.rawText])
        let before = try Self.identity(first.port)
        #expect(first.stop(signal: SIGTERM) == 0)
        #expect(first.standardError.contains("stopped"))

        let second = try ServerProcess(serve: ["--database", url.rawText])
        #expect(try Self.identity(second.port) == before)
        #expect(second.stop(signal: SIGINT) == 0)
    }

    @Test("eight servers on one fresh PostgreSQL database, hit at the same moment, agree on one id")
    func replicasAgree() throws {
        let (url, cleanUp) = try Backend.postgres.makeDatabaseURL()
        defer { cleanUp() }
        // Start all eight first (they migrate concurrently), then fire the first requests together.
        let started = LockedList<ServerProcess>()
        let startFailures = Seen()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            do {
                started.append(try ServerProcess(serve: ["--database", url.rawText, "--workers", "1"]))
            } catch {
                startFailures.add(String(describing: error))
            }
        }
        let servers = started.all
        #expect(startFailures.all.isEmpty, "\(startFailures.all)")
        #expect(servers.count == 8)

        let database = try url.open()
        defer { database.close() }
        #expect(try database.execute("SELECT COUNT(*) AS n FROM server_identity").first?.int("n") == 0)

        // Connect to every server first, then send every request at once.
        let sockets = try servers.map { try RawHTTP.connect(port: $0.port) }
        defer { sockets.forEach { close($0) } }
        let request = "GET /api/v1/server-identity HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        let seen = Seen()
        let gate = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for fd in sockets {
            group.enter()
            Thread.detachNewThread {
                gate.wait()
                RawHTTP.send(fd, request)
                if let response = try? RawHTTP.readResponse(fd), response.status == 200 {
                    seen.add(response.jsonObject?["instanceId"] as? String ?? "missing")
                } else {
                    seen.add("failed")
                }
                group.leave()
            }
        }
        for _ in sockets { gate.signal() }
        #expect(group.wait(timeout: .now() + 30) == .success)
        #expect(seen.all.count == 8)
        #expect(Set(seen.all).count == 1, "\(seen.all)")
        #expect(!seen.all.contains("failed"))
        let rows = try database.execute("SELECT instance_id FROM server_identity")
        #expect(rows.count == 1)
        #expect(rows.first?.string("instance_id") == seen.all.first)
        for server in servers { #expect(server.stop() == 0) }
    }

    @Test(
        "a server (and a gateway) whose log's reader goes away keeps answering, and stops cleanly",
        arguments: ["serve", "gateway serve"])
    func logReaderGone(command: String) throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let standIn = try APNsStandIn()
        let arguments =
            command == "serve"
            ? ["--database", "sqlite:" + data.file("server.sqlite")]
            : ["--database", "sqlite:" + data.file("gateway.sqlite")] + standIn.serverArguments
        // Every request is logged at debug: the first write after the reader left would end the
        // process, were SIGPIPE's default left (`serve 2>&1 | tee log`, and tee is stopped).
        let server = try ServerProcess(
            command: command.split(separator: " ").map(String.init), serve: arguments + ["--log-level", "debug"],
            errorPipe: true)
        server.closeStandardError()
        // Access lines are written a tenth of a second after their requests: the second round
        // comes after the first round's lines failed.
        for round in 0..<2 {
            for _ in 0..<20 {
                #expect(try RawHTTP.request(port: server.port, path: "/healthz").status == 200)
                #expect(try RawHTTP.request(port: server.port, path: "/no-such-route").status == 404)
            }
            if round == 0 { Thread.sleep(forTimeInterval: 0.3) }
        }
        #expect(server.isRunning)
        #expect(server.stop(signal: SIGTERM) == 0, "stopped as asked, not by a signal")
    }

    @Test("a database that disappears answers 503 on identity; the server keeps answering other routes")
    func databaseGone() throws {
        let created = try TestPostgres.createDatabase()
        let server = try ServerProcess(serve: ["--database", created.url])
        try TestPostgres.dropDatabase(created.name)
        let response = try RawHTTP.request(port: server.port, path: "/api/v1/server-identity")
        #expect(response.status == 503)
        #expect((response.jsonObject?["error"] as? [String: Any])?["code"] as? String == "identity_unavailable")
        #expect(try RawHTTP.request(port: server.port, path: "/healthz").status == 200)
        #expect(try RawHTTP.request(port: server.port, path: "/nowhere").status == 404)
        #expect(server.isRunning)
        #expect(server.stop() == 0)
    }

    @Test("homeport-server writes its access lines a moment after their requests, and every one when it stops")
    func accessLinesInBatches() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ServerProcess(serve: ["--database", "sqlite:" + directory.file("h.sqlite")])
        _ = try RawHTTP.request(port: server.port, path: "/api/v1/server-identity?first")
        let written = server.standardError(within: 10) { $0.contains("GET /api/v1/server-identity 200") }
        #expect(written.contains("GET /api/v1/server-identity 200"), "written while the server runs")
        for _ in 0..<100 { _ = try RawHTTP.request(port: server.port, path: "/healthz") }
        #expect(server.stop(signal: SIGTERM) == 0)
        #expect(server.standardError.components(separatedBy: "GET /healthz 200").count - 1 == 100)
    }

    @Test("the process's access log never holds the credentials a client sent")
    func processLogHasNoCredentials() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ServerProcess(serve: ["--database", "sqlite:" + directory.file("h.sqlite")])
        _ = try RawHTTP.request(
            port: server.port, path: "/api/v1/server-identity?session=QUERY-SECRET",
            headers: [("X-Session-Token", "TOKEN-SECRET"), ("Cookie", "sessionid=COOKIE-SECRET")])
        #expect(server.stop() == 0)
        let log = server.standardError
        #expect(log.contains("GET /api/v1/server-identity 200"))
        #expect(!log.contains("SECRET"))
    }
}

final class LockedList<Element>: @unchecked Sendable {
    private let lock = NSLock()
    private var elements: [Element] = []
    func append(_ element: Element) { lock.withLock { elements.append(element) } }
    var all: [Element] { lock.withLock { elements } }
}

@Suite("A server on port 0 names the port it got", .tags(.process, .postgres, .interop))
struct PortZeroTests {
    @Test("--listen HOST:0: mail links, the replicas table and the banner carry the bound port")
    func boundPortEverywhere() throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let outbox = data.file("outbox")
        let server = try ServerProcess(serve: [
            "--database", "sqlite:" + data.file("h.sqlite"), "--signup", "open", "--password-iterations", "1000",
            "--outbox", outbox, "--listen", "127.0.0.1:0",
        ])
        defer { server.stop() }
        #expect(server.port > 0 && server.banner.contains("127.0.0.1:\(server.port)"))
        let replicas = try ServerProcess.runProgram(
            "/usr/bin/sqlite3", [data.file("h.sqlite"), "SELECT listen FROM replicas"])
        #expect(replicas.output.trimmingCharacters(in: .whitespacesAndNewlines) == "127.0.0.1:\(server.port)")
        for path in ["auth/signup", "auth/password/request"] {
            _ = try RawHTTP.request(
                port: server.port, method: "POST", path: "/_allauth/app/v1/" + path,
                headers: [("Content-Type", "application/json")],
                body: Data(#"{"email":"ada@example.com","password":"correct horse battery"}"#.utf8))
        }
        var mail = ""
        eventually(timeout: .seconds(5), every: .milliseconds(50)) {
            mail = mailText(in: outbox)
            return mail.contains("/account/password/reset/key/")
        }
        #expect(mail.contains("http://127.0.0.1:\(server.port)/account/password/reset/key/"), "\(mail)")
        #expect(!mail.contains("127.0.0.1:0/"))
    }
}
