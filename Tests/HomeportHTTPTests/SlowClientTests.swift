import Foundation
import HomeportHTTP
import HomeportTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Clients that are slow on purpose: they must not take every connection, hold one for ever, or
/// fill the memory with bodies they never finish.
@Suite("Slow clients")
struct SlowClientTests {
    /// Opens `count` connections from `source` that send a request line and then nothing.
    private func holdOpen(_ count: Int, port: Int, source: String) -> [Int32] {
        (0..<count).compactMap { _ in
            guard let fd = try? RawHTTP.connect(port: port, source: source, timeout: 5) else { return nil }
            RawHTTP.send(fd, "GET /hello HTTP/1.1\r\nHost: x\r\n")
            return fd
        }
    }

    @Test("one address cannot take every connection: others are served while it holds its share")
    func perAddressCap() throws {
        let configuration = HTTPServerConfiguration(
            port: 0, workerThreads: 2, idleTimeoutSeconds: 60, maxConnections: 200, maxConnectionsPerAddress: 20,
            headerTimeoutSeconds: 60)
        try withServer(sampleRouter(), configuration: configuration) { server throws in
            let held = holdOpen(300, port: server.port, source: "127.0.0.2")
            defer { held.forEach { close($0) } }
            // Everything over the cap was closed at once, before a byte of it was read (the last one
            // opened is such a one: give it a second to be seen closed, the others a moment).
            _ = held.last.map { RawHTTP.isClosedByPeer($0, timeout: 1) }
            let refused = held.filter { RawHTTP.isClosedByPeer($0, timeout: 0.05) }.count
            #expect(refused >= 280 - 2 * configuration.workerThreads, "\(refused) of 300 refused")
            for _ in 0..<20 {
                #expect(try RawHTTP.request(port: server.port, path: "/hello", timeout: 5).status == 200)
            }
        }
    }

    @Test("a request head trickled a line at a time is cut at the header deadline; answered clients go on")
    func headerDeadline() throws {
        let configuration = HTTPServerConfiguration(
            port: 0, workerThreads: 2, idleTimeoutSeconds: 60, headerTimeoutSeconds: 1)
        try withServer(sampleRouter(), configuration: configuration) { server throws in
            let trickler = try RawHTTP.connect(port: server.port, source: "127.0.0.2", timeout: 5)
            defer { close(trickler) }
            RawHTTP.send(trickler, "GET /hello HTTP/1.1\r\nHost: x\r\n")
            // A header line every 200 ms keeps the idle timeout (60 s) from ever firing.
            var cut = false
            for line in 0..<50 where !cut {
                cut =
                    !RawHTTP.send(trickler, "X-Line-\(line): still here\r\n")
                    || RawHTTP.isClosedByPeer(trickler, timeout: 0.2)
            }
            #expect(cut, "the trickling connection is closed within ten seconds")

            // A keep-alive client that answers promptly is not affected by the deadline.
            let prompt = try RawHTTP.connect(port: server.port, timeout: 5)
            defer { close(prompt) }
            for _ in 0..<3 {
                RawHTTP.send(prompt, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try RawHTTP.readResponse(prompt).status == 200)
            }
        }
    }

    @Test("a body trickled a byte at a time is cut at the body deadline")
    func bodyDeadline() throws {
        let configuration = HTTPServerConfiguration(
            port: 0, workerThreads: 2, idleTimeoutSeconds: 60, bodyTimeoutSeconds: 1)
        try withServer(sampleRouter(), configuration: configuration) { server throws in
            let fd = try RawHTTP.connect(port: server.port, timeout: 5)
            defer { close(fd) }
            RawHTTP.send(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
            var cut = false
            for _ in 0..<50 where !cut {
                cut = !RawHTTP.send(fd, "a") || RawHTTP.isClosedByPeer(fd, timeout: 0.2)
            }
            #expect(cut, "the trickling body is closed within ten seconds")
            #expect(try RawHTTP.request(port: server.port, path: "/hello").status == 200)
        }
    }

    @Test("bodies in memory have one budget: past it a request is 503 at once, and the budget comes back")
    func bodyBudget() throws {
        let configuration = HTTPServerConfiguration(
            port: 0, workerThreads: 2, maxBodyBytes: 2000, maxBufferedBodyBytes: 4000)
        try withServer(sampleRouter(), configuration: configuration) { server throws in
            var unfinished: [Int32] = []
            for _ in 0..<2 {
                let fd = try RawHTTP.connect(port: server.port, timeout: 5)
                RawHTTP.send(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\nabc")
                unfinished.append(fd)
            }
            // Once the workers have read both heads, the budget is spent.
            var refused = try RawHTTP.request(port: server.port, method: "POST", path: "/echo", body: Data(count: 2000))
            for _ in 0..<100 where refused.status != 503 {
                usleep(20_000)
                refused = try RawHTTP.request(port: server.port, method: "POST", path: "/echo", body: Data(count: 2000))
            }
            #expect(refused.status == 503)
            #expect(refused.header("Retry-After") != nil)
            #expect((refused.jsonObject?["error"] as? [String: Any])?["code"] as? String == "unavailable")
            // A chunked body reserves as it arrives, and is refused the same way.
            var chunked = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            chunked += "64\r\n" + String(repeating: "a", count: 100) + "\r\n0\r\n\r\n"
            #expect(try RawHTTP.exchange(port: server.port, Array(chunked.utf8)).status == 503)

            unfinished.forEach { close($0) }
            var served = false
            for _ in 0..<100 where !served {
                served =
                    try RawHTTP.request(port: server.port, method: "POST", path: "/echo", body: Data(count: 2000))
                    .status == 200
                if !served { usleep(50_000) }
            }
            #expect(served, "closing the unfinished bodies gives their memory back")
        }
    }
}
