import Foundation
import HomeportStorage
import HomeportTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Slow clients against a real `homeport-server` with its default limits.
@Suite("homeport-server under slow clients", .tags(.process))
struct SlowClientProcessTests {
    @Test("a thousand slow connections from one address leave identity probes from another answering")
    func thousandSlowConnections() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ServerProcess(serve: ["--database", "sqlite:" + directory.file("db.sqlite")])
        defer { server.stop() }
        var slow: [Int32] = []
        defer { slow.forEach { close($0) } }
        for _ in 0..<1000 {
            guard let fd = try? RawHTTP.connect(port: server.port, source: "127.0.0.2", timeout: 5) else { continue }
            RawHTTP.send(fd, "GET /api/v1/server-identity HTTP/1.1\r\nHost: x\r\n")
            slow.append(fd)
        }
        // While the probes run, every slow connection that is still open adds a header line now and then.
        let stop = LockedValue(false)
        let trickling = slow
        let trickler = Thread {
            var line = 0
            while !stop.get() {
                for fd in trickling { RawHTTP.send(fd, "X-\(line): 1\r\n") }
                line += 1
                usleep(200_000)
            }
        }
        trickler.start()
        defer { stop.set(true) }
        for _ in 0..<20 {
            let probe = try RawHTTP.request(port: server.port, path: "/api/v1/server-identity", timeout: 5)
            #expect(probe.status == 200)
            #expect(probe.jsonObject?["instanceId"] is String)
        }
    }

    @Test("four hundred unfinished bodies cannot grow the server's memory past the body budget")
    func unfinishedBodies() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ServerProcess(serve: [
            "--database", "sqlite:" + directory.file("db.sqlite"), "--max-connections-per-address", "0",
            "--max-buffered-body-bytes", String(16 << 20), "--body-timeout", "120",
        ])
        defer { server.stop() }
        #expect(try RawHTTP.request(port: server.port, path: "/healthz").status == 200)
        let before = try #require(server.residentBytes)
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 64 << 10)
        var open: [Int32] = []
        defer { open.forEach { close($0) } }
        for _ in 0..<400 {
            let fd = try RawHTTP.connect(port: server.port, timeout: 10)
            open.append(fd)
            RawHTTP.send(
                fd,
                "POST /_allauth/app/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(1 << 20)\r\n\r\n")
            // Everything but the last byte.
            for index in 0..<16 { RawHTTP.send(fd, index == 15 ? Array(chunk.dropLast()) : chunk) }
        }
        #expect(try RawHTTP.request(port: server.port, path: "/healthz", timeout: 10).status == 200)
        let after = try #require(server.residentBytes)
        let grown = after - before
        #expect(grown < 64 << 20, "RSS grew by \(grown >> 20) MiB holding 400 MiB of unfinished bodies")
    }
}
