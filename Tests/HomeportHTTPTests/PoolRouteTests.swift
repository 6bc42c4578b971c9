import Foundation
import HomeportLogging
import HomeportTestSupport
import Synchronization
import Testing

@testable import HomeportHTTP

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A route whose handler holds at a gate until the test opens it, and counts its runs.
private final class GatedRoute: Sendable {
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let runs = Atomic<Int>(0)
    /// The client of each run, in order.
    let clients = Mutex<[String]>([])

    func handle(from client: String = "") throws -> HTTPResponse {
        let run = runs.add(1, ordering: .relaxed).newValue
        clients.withLock { $0.append(client) }
        entered.signal()
        release.wait()
        return try .json(["run": run])
    }
}

@Suite("Pool routes run off the worker threads, behind a bounded queue")
struct PoolRouteTests {
    private func router(_ gate: GatedRoute) -> TestRouter {
        var router = sampleRouter()
        router.post("/hash", placement: .pool) { request, _ in try gate.handle(from: request.remoteAddress) }
        router.get("/slow") { _, _ in try gate.handle() }
        return router
    }

    /// A server with one worker thread and one pool thread over `gate`'s routes, started; the
    /// test stops it.
    private func startedServer(_ gate: GatedRoute, drainTimeout: Duration = .seconds(10)) throws -> HTTPServer {
        var configuration = HTTPServerConfiguration(port: 0, workerThreads: 1, poolThreads: 1)
        configuration.drainTimeout = drainTimeout
        let server = HTTPServer(
            configuration: configuration, responder: router(gate), logger: Logger(label: "test", sink: MemoryLogSink()))
        try server.start()
        return server
    }

    private func post(_ fd: Int32, _ path: String = "/hash") {
        RawHTTP.send(fd, "POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    }

    @Test("with one worker thread, requests are answered while a pool route's work runs")
    func workerStaysFree() throws {
        let gate = GatedRoute()
        let configuration = HTTPServerConfiguration(port: 0, workerThreads: 1, poolThreads: 1)
        try withServer(router(gate), configuration: configuration) { server in
            let held = try RawHTTP.connect(port: server.port)
            defer { close(held) }
            post(held)
            #expect(gate.entered.wait(timeout: .now() + 10) == .success)
            // The one worker thread is free: a worker-placed route would have taken it.
            for _ in 0..<20 {
                #expect(try RawHTTP.request(port: server.port, path: "/hello", timeout: 3).status == 200)
            }
            gate.release.signal()
            let answer = try RawHTTP.readResponse(held)
            #expect(answer.status == 200)
            #expect(answer.jsonObject?["run"] as? Int == 1)
            // The connection goes on serving requests after its suspension.
            RawHTTP.send(held, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try RawHTTP.readResponse(held).status == 200)
        }
    }

    @Test("past the queue, 503 with Retry-After at once; what was queued is served")
    func queueLimit() throws {
        let gate = GatedRoute()
        let configuration = HTTPServerConfiguration(port: 0, workerThreads: 1, poolThreads: 1, poolQueueLimit: 2)
        try withServer(router(gate), configuration: configuration) { server in
            let running = try RawHTTP.connect(port: server.port)
            defer { close(running) }
            post(running)
            #expect(gate.entered.wait(timeout: .now() + 10) == .success)
            let queued = try (0..<2).map { _ in try RawHTTP.connect(port: server.port) }
            defer { queued.forEach { close($0) } }
            queued.forEach { post($0) }
            // Each queued request has been read once this worker answers the next.
            #expect(try RawHTTP.request(port: server.port, path: "/hello").status == 200)
            let refused = try RawHTTP.request(port: server.port, method: "POST", path: "/hash", timeout: 3)
            #expect(refused.status == 503)
            #expect((refused.jsonObject?["error"] as? [String: Any])?["code"] as? String == "unavailable")
            #expect(Int(refused.header("Retry-After") ?? "") ?? 0 >= 1)
            #expect(gate.runs.load(ordering: .relaxed) == 1)
            for _ in 0..<3 { gate.release.signal() }
            #expect(try RawHTTP.readResponse(running).status == 200)
            for fd in queued { #expect(try RawHTTP.readResponse(fd).status == 200) }
            #expect(gate.runs.load(ordering: .relaxed) == 3)
        }
    }

    @Test(
        "the queue is fair between clients: one holding every place gives its newest to another, which is served next in turn"
    )
    func fairQueue() throws {
        let gate = GatedRoute()
        let configuration = HTTPServerConfiguration(port: 0, workerThreads: 1, poolThreads: 1, poolQueueLimit: 4)
        try withServer(router(gate), configuration: configuration) { server in
            let flood = try (0..<5).map { _ in try RawHTTP.connect(port: server.port, source: "127.0.0.2") }
            defer { flood.forEach { close($0) } }
            post(flood[0])
            #expect(gate.entered.wait(timeout: .now() + 10) == .success)
            for fd in flood.dropFirst() {
                post(fd)
                // Read and queued once this one worker answers the next request.
                #expect(try RawHTTP.request(port: server.port, path: "/hello").status == 200)
            }
            // The queue is full of 127.0.0.2's sign-ins; 127.0.0.2 itself gets no more.
            let more = try RawHTTP.connect(port: server.port, source: "127.0.0.2")
            defer { close(more) }
            post(more)
            #expect(try RawHTTP.readResponse(more).status == 503)
            let other = try RawHTTP.connect(port: server.port, source: "127.0.0.3")
            defer { close(other) }
            post(other)
            // The newest of 127.0.0.2's gives its place, answered at once.
            let displaced = try RawHTTP.readResponse(flood[4])
            #expect(displaced.status == 503)
            #expect(Int(displaced.header("Retry-After") ?? "") ?? 0 >= 1)
            for _ in 0..<5 { gate.release.signal() }
            #expect(try RawHTTP.readResponse(other).status == 200)
            for fd in flood.prefix(4) { #expect(try RawHTTP.readResponse(fd).status == 200) }
            // Turns: the running one, then one of each client in turn.
            #expect(gate.clients.withLock { $0 } == ["127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.2", "127.0.0.2"])
        }
    }

    @Test("a client that leaves while its request waits in the queue costs no work")
    func abandonedWhileQueued() throws {
        let gate = GatedRoute()
        let configuration = HTTPServerConfiguration(port: 0, workerThreads: 1, poolThreads: 1)
        try withServer(router(gate), configuration: configuration) { server in
            let running = try RawHTTP.connect(port: server.port)
            defer { close(running) }
            post(running)
            #expect(gate.entered.wait(timeout: .now() + 10) == .success)
            let leaving = try RawHTTP.connect(port: server.port)
            post(leaving)
            #expect(try RawHTTP.request(port: server.port, path: "/hello").status == 200)
            close(leaving)
            gate.release.signal()
            #expect(try RawHTTP.readResponse(running).status == 200)
            // The next request runs; the one whose client left never did.
            let next = try RawHTTP.connect(port: server.port)
            defer { close(next) }
            post(next)
            #expect(gate.entered.wait(timeout: .now() + 10) == .success)
            gate.release.signal()
            #expect(try RawHTTP.readResponse(next).jsonObject?["run"] as? Int == 2)
        }
    }

    @Test("a stop while pool work runs ends cleanly, and the work's late answer touches nothing")
    func stopDuringWork() throws {
        let gate = GatedRoute()
        let server = try startedServer(gate, drainTimeout: .milliseconds(300))
        let held = try RawHTTP.connect(port: server.port)
        defer { close(held) }
        post(held)
        #expect(gate.entered.wait(timeout: .now() + 10) == .success)
        #expect(server.shutdown() == 1, "the request was still in flight when the drain ended")
        // The client got an answer or a closed connection, never a hang.
        if let answer = try? RawHTTP.readResponse(held) { #expect(answer.status == 503) }
        gate.release.signal()
        usleep(100_000)
        #expect(gate.runs.load(ordering: .relaxed) == 1)
    }

    @Test("once a stop has resumed the suspended requests, a pool request is refused, never suspended")
    func noSuspensionAfterStopBegan() throws {
        let gate = GatedRoute()
        let server = try startedServer(gate)
        // The step of a stop just before libmicrohttpd stops, which must then find no connection
        // suspended: a request that arrives now (on a kept-alive connection, say) is answered at once.
        server.abandonOffloads()
        let fd = try RawHTTP.connect(port: server.port)
        defer { close(fd) }
        post(fd)
        let answer = try RawHTTP.readResponse(fd)
        #expect(answer.status == 503)
        #expect(answer.header("Connection")?.lowercased() == "close")
        #expect(gate.runs.load(ordering: .relaxed) == 0, "no work was queued")
        server.shutdown()
    }

    @Test("a stop serves the requests the kernel had queued and those waiting unread in a socket")
    func stopServesBacklog() throws {
        let gate = GatedRoute()
        let server = try startedServer(gate)
        let port = server.port
        // Open before the worker is held: accepted by libmicrohttpd, idle.
        let idleThenAsks = try RawHTTP.connect(port: port)
        defer { close(idleThenAsks) }
        #expect(try RawHTTP.request(port: port, path: "/hello").status == 200)
        let holder = try RawHTTP.connect(port: port)
        defer { close(holder) }
        RawHTTP.send(holder, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(gate.entered.wait(timeout: .now() + 10) == .success)
        // The one worker is held: these wait in the kernel's listen backlog, unread.
        let backlog = try (0..<6).map { _ in try RawHTTP.connect(port: port) }
        defer { backlog.forEach { close($0) } }
        for fd in backlog { RawHTTP.send(fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n") }
        RawHTTP.send(idleThenAsks, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")

        let stopped = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            server.shutdown()
            stopped.signal()
        }
        let closed = eventually(timeout: .seconds(2), every: .milliseconds(10)) {
            (try? RawHTTP.connect(port: port, timeout: 1)).map({ close($0) }) == nil
        }
        #expect(closed, "the server stops listening at once")
        gate.release.signal()
        #expect(try RawHTTP.readResponse(holder).status == 200)
        for fd in backlog + [idleThenAsks] {
            let answer = try RawHTTP.readResponse(fd)
            #expect(answer.status == 200)
            #expect(answer.header("Connection")?.lowercased() == "close")
        }
        #expect(stopped.wait(timeout: .now() + 10) == .success)
    }
}
