import Foundation
import HomeportHTTP
import HomeportLogging
import HomeportTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Response bodies written over time, each connection suspended while it waits.
@Suite("Streamed responses")
struct StreamingTests {
    /// A router whose `/stream` hands each new stream to `opened`.
    private func router(_ opened: @escaping @Sendable (HTTPBodyStream) -> Void) -> TestRouter {
        var router = TestRouter()
        router.get("/stream") { _, _ in
            let stream = HTTPBodyStream()
            opened(stream)
            return .streaming(stream, headers: ["Content-Type": "text/event-stream"])
        }
        router.get("/hello") { _, _ in try .json(["greeting": "hello"]) }
        return router
    }

    /// Reads from `fd` until `text` has arrived; false after `timeout` seconds.
    private func read(_ fd: Int32, until text: String, timeout: Double = 10) -> (Bool, String) {
        var received = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if String(decoding: received, as: UTF8.self).contains(text) {
                return (true, String(decoding: received, as: UTF8.self))
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) >= 0 else { break }
            if poller.revents & Int16(POLLIN) != 0 {
                let count = recv(fd, &chunk, chunk.count, 0)
                if count <= 0 { break }
                received += chunk[0..<count]
            }
        }
        let text2 = String(decoding: received, as: UTF8.self)
        return (text2.contains(text), text2)
    }

    @Test("writes from another thread reach the client as they come; finish ends the body")
    func writesArrive() throws {
        let streams = Mutex<[HTTPBodyStream]>([])
        try withServer(router { stream in streams.withLock { $0.append(stream) } }) { server throws in
            let fd = try RawHTTP.connect(port: server.port, timeout: 10)
            defer { close(fd) }
            RawHTTP.send(fd, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(read(fd, until: "text/event-stream").0, "the headers come at once")
            let stream = try #require(streams.withLock { $0.first })
            for index in 0..<3 {
                usleep(100_000)  // the connection is suspended in between, with nothing to send
                #expect(stream.write(Array("data: \(index)\n\n".utf8)))
                #expect(read(fd, until: "data: \(index)").0, "event \(index) arrives")
            }
            // Other requests are served meanwhile: the stream holds no worker.
            #expect(try RawHTTP.request(port: server.port, path: "/hello").status == 200)
            stream.finish()
            let (ended, text) = read(fd, until: "0\r\n\r\n")
            #expect(ended, "the chunked body ends: \(text)")
            #expect(!stream.write([1]), "nothing is written after the end")
        }
    }

    @Test("a client that goes away closes its stream; a shutdown ends the streams still open")
    func closing() throws {
        let streams = Mutex<[HTTPBodyStream]>([])
        let closed = Atomic<Int>(0)
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(port: 0, workerThreads: 2),
            responder: router { stream in
                stream.onClose = { closed.add(1, ordering: .relaxed) }
                streams.withLock { $0.append(stream) }
            }, logger: Logger(label: "test", sink: MemoryLogSink()))
        try server.start()
        let leaving = try RawHTTP.connect(port: server.port, timeout: 10)
        RawHTTP.send(leaving, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(read(leaving, until: "event-stream").0)
        close(leaving)
        // The server learns of it without a write (its connection is suspended meanwhile).
        let first = try #require(streams.withLock { $0.first })
        #expect(
            eventually(timeout: .seconds(5)) { first.isClosed }, "noticed within seconds, though nothing was written")
        #expect(closed.load(ordering: .relaxed) == 1)

        let staying = try RawHTTP.connect(port: server.port, timeout: 10)
        defer { close(staying) }
        RawHTTP.send(staying, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(read(staying, until: "event-stream").0)
        #expect(server.shutdown() == 0, "the open stream ended and drained")
        #expect(read(staying, until: "0\r\n\r\n").0)
        #expect(closed.load(ordering: .relaxed) == 2)
    }

    @Test("a client that does not read is cut off once its backlog passes the limit")
    func slowReader() throws {
        let streams = Mutex<[HTTPBodyStream]>([])
        try withServer(router { stream in streams.withLock { $0.append(stream) } }) { server throws in
            let fd = try RawHTTP.connect(port: server.port, timeout: 10)
            defer { close(fd) }
            RawHTTP.send(fd, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(read(fd, until: "event-stream").0)
            let stream = try #require(streams.withLock { $0.first })
            let event = [UInt8](repeating: UInt8(ascii: "a"), count: 64 << 10)
            var accepted = 0
            while stream.write(event) && accepted < 10_000 { accepted += 1 }
            #expect(accepted < 10_000, "writes stop being accepted")
            #expect(!stream.write(event))
        }
    }
}
