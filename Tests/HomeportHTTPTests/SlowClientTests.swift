import Foundation
import HomeportTestSupport
import Testing

@testable import HomeportHTTP

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

    @Test("at the server's cap a newcomer takes the place of a connection waiting for its request")
    func shedsWaitingConnectionAtCap() throws {
        let configuration = HTTPServerConfiguration(
            port: 0, workerThreads: 2, idleTimeoutSeconds: 60, maxConnections: 40, maxConnectionsPerAddress: 12,
            headerTimeoutSeconds: 60)
        try withServer(sampleRouter(), configuration: configuration) { server throws in
            // Four addresses hold every slot with requests they never finish; the last holds the most.
            var held: [Int32] = []
            for (address, count) in [("127.0.0.2", 9), ("127.0.0.3", 9), ("127.0.0.4", 10), ("127.0.0.5", 12)] {
                held += holdOpen(count, port: server.port, source: address)
            }
            defer { held.forEach { close($0) } }
            #expect(held.count == 40)
            try waitUntil(server, holds: 40, in: .awaitingHead)
            // Two newcomers one after the other (two arriving at the same instant on two workers
            // may both find a slot), each keeping its connection open after its answer.
            var newcomers: [Int32] = []
            defer { newcomers.forEach { close($0) } }
            for _ in 0..<2 {
                let fd = try RawHTTP.connect(port: server.port, timeout: 5)
                newcomers.append(fd)
                RawHTTP.send(fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try RawHTTP.readResponse(fd).status == 200)
            }
            let shed = held.indices.filter { RawHTTP.isClosedByPeer(held[$0], timeout: 0.05) }
            #expect(shed.count == 2, "one waiting connection for each newcomer")
            #expect(shed.allSatisfy { $0 >= 28 }, "from the address holding the most (12, then 11)")
        }
    }

    /// Waits until `server` holds `bytes` of request bodies.
    private func waitUntil(_ server: HTTPServer, buffers bytes: Int) throws {
        HomeportTestSupport.eventually(timeout: .seconds(5), every: .milliseconds(10)) {
            server.connections.bufferedBodyBytes.load(ordering: .relaxed) >= bytes
        }
        #expect(server.connections.bufferedBodyBytes.load(ordering: .relaxed) == bytes)
    }

    /// Waits until `server` has accepted `count` connections and they are all in `phase`.
    private func waitUntil(_ server: HTTPServer, holds count: Int, in phase: ConnectionRegistry.Phase) throws {
        HomeportTestSupport.eventually(timeout: .seconds(5), every: .milliseconds(10)) {
            server.connections.count(in: phase) >= count
        }
        #expect(server.connections.count(in: phase) == count)
    }

    @Test("at the server's cap a newcomer takes the place of a body trickled by the address holding the most")
    func shedsTrickledBodyAtCap() throws {
        var configuration = HTTPServerConfiguration(
            port: 0, workerThreads: 2, idleTimeoutSeconds: 60, maxConnections: 20, maxConnectionsPerAddress: 0,
            headerTimeoutSeconds: 60, bodyTimeoutSeconds: 60)
        configuration.minBodyBytesPerSecond = 0
        try withServer(sampleRouter(), configuration: configuration) { server throws in
            let busy =
                try (0..<8).map { _ in try unfinishedBody(server, from: "127.0.0.2", length: 100, sent: 10) }
                + (0..<12).map { _ in try unfinishedBody(server, from: "127.0.0.3", length: 100, sent: 10) }
            defer { busy.forEach { close($0) } }
            try waitUntil(server, holds: 20, in: .readingBody)
            let newcomer = try RawHTTP.connect(port: server.port, source: "127.0.0.4", timeout: 5)
            defer { close(newcomer) }
            RawHTTP.send(newcomer, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try RawHTTP.readResponse(newcomer).status == 200)
            let shed = busy.indices.filter { RawHTTP.isClosedByPeer(busy[$0], timeout: 0.05) }
            #expect(shed.count == 1 && shed.allSatisfy { $0 >= 8 }, "one body of the address holding 12: \(shed)")
        }
    }

    @Test(
        "the registry gives up a waiting head first, then a body, then a stream, of the address holding the most; never one being answered"
    )
    func shedOrder() throws {
        let configuration = HTTPServerConfiguration(port: 0, maxConnections: 4, maxConnectionsPerAddress: 0)
        let registry = ConnectionRegistry(configuration: configuration)
        var pairs: [[Int32]] = []
        defer { pairs.flatMap { $0 }.forEach { close($0) } }
        func open(_ address: UInt64, _ phase: ConnectionRegistry.Phase) -> ConnectionRegistry.Connection {
            var fds: [Int32] = [0, 0]
            socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds)
            pairs.append(fds)
            let connection = registry.opened(
                descriptor: fds[0], address: .init(family: AF_INET, bits: address), client: "a\(address)")
            registry.enter(phase, connection)
            return connection
        }
        let key = ConnectionRegistry.AddressKey(family: AF_INET, bits: 9)
        _ = open(1, .answering)
        _ = open(2, .awaitingHead)
        let stream = open(3, .streaming)
        let body = open(3, .readingBody)
        // Address 3 holds the most: its body goes before its stream.
        #expect(registry.admits(key))
        #expect(body.cut && !stream.cut)
        registry.closed(body)
        _ = open(3, .answering)
        // Address 3 again (a stream and an answer): its stream, never its answer.
        #expect(registry.admits(key))
        #expect(stream.cut)
        registry.closed(stream)
        _ = open(1, .answering)
        // Addresses 1 (two answers) and 2 (a head): the head, though its address holds fewer.
        #expect(registry.admits(key))
        #expect(registry.count(in: .awaitingHead) == 0)
        #expect(registry.count(in: .answering) == 3)
        _ = open(4, .answering)
        // Every connection is being answered: nobody is given up.
        #expect(!registry.admits(key))
    }

    @Test(
        "a body slower than the minimum rate is cut after the grace, long before the body deadline; a slow but steady upload is not"
    )
    func minimumBodyRate() throws {
        var configuration = HTTPServerConfiguration(
            port: 0, workerThreads: 2, idleTimeoutSeconds: 60, bodyTimeoutSeconds: 60)
        configuration.minBodyBytesPerSecond = 1024
        configuration.bodyRateGraceSeconds = 1
        try withServer(sampleRouter(), configuration: configuration) { server throws in
            let trickler = try RawHTTP.connect(port: server.port, source: "127.0.0.2", timeout: 5)
            defer { close(trickler) }
            RawHTTP.send(trickler, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
            var cut = false
            for _ in 0..<50 where !cut {
                cut = !RawHTTP.send(trickler, "aaaaaaaaaa") || RawHTTP.isClosedByPeer(trickler, timeout: 0.2)
            }
            #expect(cut, "100 bytes a second is cut within ten seconds, not at the 60-second deadline")

            // 4 KiB a second for three seconds: slow, but a body, not a hold.
            let steady = try RawHTTP.connect(port: server.port, timeout: 5)
            defer { close(steady) }
            RawHTTP.send(steady, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 12288\r\n\r\n")
            for _ in 0..<12 {
                #expect(RawHTTP.send(steady, [UInt8](repeating: 0x61, count: 1024)))
                usleep(250_000)
            }
            let answer = try RawHTTP.readResponse(steady)
            #expect(answer.status == 200)
            #expect(answer.jsonObject?["bytes"] as? Int == 12288)
        }
    }

    @Test(
        "a client that closes its side mid-request frees its slot long before the deadline",
        arguments: [
            "GET /hello HTTP/1.1\r\nHost: x\r\n", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc",
        ])
    func halfClosedIsClosed(partial: String) throws {
        let configuration = HTTPServerConfiguration(
            port: 0, workerThreads: 2, idleTimeoutSeconds: 60, headerTimeoutSeconds: 60, bodyTimeoutSeconds: 60)
        try withServer(sampleRouter(), configuration: configuration) { server throws in
            let fd = try RawHTTP.connect(port: server.port, timeout: 5)
            defer { close(fd) }
            RawHTTP.send(fd, partial)
            shutdown(fd, Int32(SHUT_WR))
            #expect(RawHTTP.isClosedByPeer(fd, timeout: 10), "closed within seconds, not at the 60-second deadline")
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
        var configuration = HTTPServerConfiguration(
            port: 0, workerThreads: 2, idleTimeoutSeconds: 60, bodyTimeoutSeconds: 1)
        // Bodies held on purpose: the minimum rate is another test's.
        configuration.minBodyBytesPerSecond = 0
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

    /// Opens a connection from `source` that sends a head announcing `length` bytes and then
    /// `sent` of them.
    private func unfinishedBody(_ server: HTTPServer, from source: String, length: Int, sent: Int) throws -> Int32 {
        let fd = try RawHTTP.connect(port: server.port, source: source, timeout: 5)
        RawHTTP.send(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \(length)\r\n\r\n")
        RawHTTP.send(fd, [UInt8](repeating: 0x61, count: sent))
        return fd
    }

    /// A POST of `size` bytes from `source`; its status.
    private func post(_ server: HTTPServer, from source: String = "127.0.0.1", size: Int) throws -> Int {
        let fd = try RawHTTP.connect(port: server.port, source: source, timeout: 5)
        defer { close(fd) }
        RawHTTP.send(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \(size)\r\n\r\n")
        RawHTTP.send(fd, [UInt8](repeating: 0x61, count: size))
        return try RawHTTP.readResponse(fd).status
    }

    /// `probe`'s status once it is `status` (the server reads what was sent before it in its own
    /// time), or its last one after two seconds.
    private func eventually(_ status: Int, _ probe: () throws -> Int) throws -> Int {
        var last = 0
        try HomeportTestSupport.eventually(timeout: .seconds(2)) {
            last = try probe()
            return last == status
        }
        return last
    }

    @Test("bodies in memory have one budget: past it a request is 503 at once, and the budget comes back")
    func bodyBudget() throws {
        var configuration = HTTPServerConfiguration(
            port: 0, workerThreads: 2, maxBodyBytes: 2000, maxBufferedBodyBytes: 4000)
        // Bodies held on purpose: the minimum rate is another test's.
        configuration.minBodyBytesPerSecond = 0
        try withServer(sampleRouter(), configuration: configuration) { server throws in
            // Two addresses, each holding one body's worth (its share), spend the budget.
            let unfinished = try ["127.0.0.2", "127.0.0.3"].map {
                try unfinishedBody(server, from: $0, length: 2000, sent: 1999)
            }
            // The server reads what they sent in its own time (slower under a loaded machine).
            try waitUntil(server, buffers: 2 * 1999)
            let refused = try eventually(503) { try post(server, size: 100) }
            #expect(refused == 503)
            let answer = try RawHTTP.request(port: server.port, method: "POST", path: "/echo", body: Data(count: 100))
            #expect(answer.header("Retry-After") != nil)
            #expect((answer.jsonObject?["error"] as? [String: Any])?["code"] as? String == "unavailable")
            // A chunked body reserves as it arrives, and is refused the same way.
            var chunked = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            chunked += "64\r\n" + String(repeating: "a", count: 100) + "\r\n0\r\n\r\n"
            #expect(try RawHTTP.exchange(port: server.port, Array(chunked.utf8)).status == 503)

            unfinished.forEach { close($0) }
            #expect(try eventually(200) { try post(server, size: 2000) } == 200, "closing them gives the memory back")
        }
    }

    @Test("announcing a length reserves nothing: memory is held only by bytes that arrived")
    func announcingReservesNothing() throws {
        var configuration = HTTPServerConfiguration(
            port: 0, workerThreads: 2, maxBodyBytes: 2000, maxBufferedBodyBytes: 4000)
        // Bodies held on purpose: the minimum rate is another test's.
        configuration.minBodyBytesPerSecond = 0
        try withServer(sampleRouter(), configuration: configuration) { server throws in
            let announced = try (2...9).map {
                try unfinishedBody(server, from: "127.0.0.\($0)", length: 2000, sent: 10)
            }
            defer { announced.forEach { close($0) } }
            // Eight announcements of 2,000 bytes would be 16,000: four times the budget.
            #expect(try eventually(200) { try post(server, size: 2000) } == 200)
            // (The previous request's memory comes back a moment after its answer: each waits for it.)
            for _ in 0..<5 { #expect(try eventually(200) { try post(server, size: 1500) } == 200) }
        }
    }

    @Test("one address holds at most its share of the budget; others, and small bodies, still fit")
    func shareOfOneAddress() throws {
        // An address's share: an eighth of 40,000, or one 5,000-byte body, whichever is more.
        var configuration = HTTPServerConfiguration(
            port: 0, workerThreads: 2, maxBodyBytes: 5000, maxBufferedBodyBytes: 40000)
        // Bodies held on purpose: the minimum rate is another test's.
        configuration.minBodyBytesPerSecond = 0
        try withServer(sampleRouter(), configuration: configuration) { server throws in
            let hog = try unfinishedBody(server, from: "127.0.0.2", length: 5000, sent: 4000)
            defer { close(hog) }
            try waitUntil(server, buffers: 4000)
            #expect(
                try eventually(503) { try post(server, from: "127.0.0.2", size: 2000) } == 503,
                "4,000 bytes held and 2,000 more are past the address's share of 5,000")
            #expect(try post(server, from: "127.0.0.2", size: 900) == 200, "within it, the address is served")
            #expect(try post(server, from: "127.0.0.3", size: 5000) == 200, "another address has its own share")
        }
    }

    @Test("the last eighth of the budget is kept for small bodies: a login fits while uploads fill the rest")
    func reserveForSmallBodies() throws {
        // Large bodies stop at 35,000 of 40,000; bodies up to 16 KiB may use the last 5,000.
        var configuration = HTTPServerConfiguration(
            port: 0, workerThreads: 2, maxBodyBytes: 20000, maxBufferedBodyBytes: 40000)
        // Bodies held on purpose: the minimum rate is another test's.
        configuration.minBodyBytesPerSecond = 0
        try withServer(sampleRouter(), configuration: configuration) { server throws in
            let uploads = [
                try unfinishedBody(server, from: "127.0.0.2", length: 20000, sent: 10000),
                try unfinishedBody(server, from: "127.0.0.3", length: 20000, sent: 10000),
            ]
            defer { uploads.forEach { close($0) } }
            try waitUntil(server, buffers: 20000)
            #expect(
                try eventually(503) { try post(server, from: "127.0.0.4", size: 17000) } == 503,
                "20,000 held: a large body would fit under 40,000 but not under 35,000")
            #expect(try post(server, from: "127.0.0.5", size: 3000) == 200, "a small one uses the reserve")
        }
    }
}
