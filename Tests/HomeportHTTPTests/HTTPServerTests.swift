import Foundation
import HomeportHTTP
import HomeportLogging
import HomeportTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("HTTP server over a live socket")
struct HTTPServerTests {
    @Test("unknown paths are 404 and wrong methods 405, both in the JSON error shape")
    func errorShapes() throws {
        try withServer(sampleRouter()) { server in
            let missing = try RawHTTP.request(port: server.port, path: "/nowhere")
            #expect(missing.status == 404)
            #expect(missing.header("Content-Type") == "application/json")
            let missingError = try #require(missing.jsonObject?["error"] as? [String: Any])
            #expect(missingError["code"] as? String == "not_found")
            #expect(missingError["message"] is String)

            let wrong = try RawHTTP.request(port: server.port, method: "PUT", path: "/hello")
            #expect(wrong.status == 405)
            #expect(wrong.header("Allow") == "GET, HEAD")
            #expect((wrong.jsonObject?["error"] as? [String: Any])?["code"] as? String == "method_not_allowed")
        }
    }

    @Test("HEAD answers the GET headers without a body")
    func headHasNoBody() throws {
        try withServer(sampleRouter()) { server in
            let fd = try RawHTTP.connect(port: server.port)
            defer { close(fd) }
            RawHTTP.send(fd, "HEAD /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            var bytes = [UInt8]()
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(fd, &chunk, chunk.count, 0)
                if count <= 0 { break }
                bytes += chunk[0..<count]
            }
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 200"))
            #expect(text.hasSuffix("\r\n\r\n"), "no body after the headers")
        }
    }

    @Test("a body over the limit is 413, announced or streamed; one at the limit is served")
    func bodyLimit() throws {
        let configuration = HTTPServerConfiguration(port: 0, workerThreads: 2, maxBodyBytes: 1000)
        try withServer(sampleRouter(), configuration: configuration) { server in
            let atLimit = try RawHTTP.request(port: server.port, method: "POST", path: "/echo", body: Data(count: 1000))
            #expect(atLimit.status == 200)
            #expect(atLimit.jsonObject?["bytes"] as? Int == 1000)

            let announced = try RawHTTP.request(
                port: server.port, method: "POST", path: "/echo", body: Data(count: 1001))
            #expect(announced.status == 413)
            #expect((announced.jsonObject?["error"] as? [String: Any])?["code"] as? String == "payload_too_large")

            // Chunked: no Content-Length, so the limit trips while reading.
            var chunked = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            for _ in 0..<3 { chunked += "258\r\n" + String(repeating: "a", count: 600) + "\r\n" }
            chunked += "0\r\n\r\n"
            let streamed = try RawHTTP.exchange(port: server.port, Array(chunked.utf8))
            #expect(streamed.status == 413)

            // The server still answers afterwards.
            #expect(try RawHTTP.request(port: server.port, path: "/hello").status == 200)
        }
    }

    @Test("a huge announced body is refused before a byte of it is read")
    func hugeAnnouncedBody() throws {
        let configuration = HTTPServerConfiguration(port: 0, workerThreads: 2, maxBodyBytes: 1000)
        try withServer(sampleRouter(), configuration: configuration) { server in
            let head = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n"
            let response = try RawHTTP.exchange(port: server.port, Array(head.utf8))
            #expect(response.status == 413)
            #expect(response.header("Connection")?.lowercased() == "close")
        }
    }

    @Test("a hundred ordinary cookies (5 KB) get their answer, a long one included; past the header limit, 431")
    func manyCookies() throws {
        var router = sampleRouter()
        router.get("/page") { _, _ in
            var response = try HTTPResponse.json(["page": true])
            for index in 0..<20 {
                response.headers.add("X-Policy-\(index)", String(repeating: "p", count: 100))
            }
            return response
        }
        let configuration = HTTPServerConfiguration(port: 0, workerThreads: 2, maxHeaderBytes: 16 << 10)
        try withServer(router, configuration: configuration) { server in
            let cookies = (0..<100).map { "cookie_name_\($0)=value_\($0)_abcdefghijklmnopqrstu" }.joined(
                separator: "; ")
            let answer = try RawHTTP.request(port: server.port, path: "/page", headers: [("Cookie", cookies)])
            #expect(answer.status == 200)
            #expect(answer.header("X-Policy-19") != nil)
            // 17 KB of header fields: within libmicrohttpd's memory, past the server's limit.
            let over = try RawHTTP.request(
                port: server.port, path: "/page", headers: [("X-Big", String(repeating: "a", count: 17 << 10))])
            #expect(over.status == 431)
            #expect(
                (over.jsonObject?["error"] as? [String: Any])?["code"] as? String == "request_header_fields_too_large")
        }
    }

    @Test("garbage, oversized headers and a thousand malformed requests leave the server answering")
    func hostileInput() throws {
        // A thousand connections in a row from one address: the per-address cap is not what this tests.
        let configuration = HTTPServerConfiguration(
            port: 0, workerThreads: 2, maxHeaderBytes: 16 << 10, maxConnectionsPerAddress: 0)
        try withServer(sampleRouter(), configuration: configuration) { server in
            let huge = "GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 64 << 10))\r\n\r\n"
            let hugeResponse = try RawHTTP.exchange(port: server.port, Array(huge.utf8))
            #expect(hugeResponse.status == 431 || hugeResponse.status == 413)

            let samples: [[UInt8]] = [
                Array("GARBAGE\r\n\r\n".utf8),
                Array("GET\r\n\r\n".utf8),
                Array("GET /hello HTTP/9.9\r\n\r\n".utf8),
                Array("GET /hello HTTP/1.1\r\nNoColonHere\r\n\r\n".utf8),
                Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n".utf8),
                Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc".utf8),
                Array("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n".utf8),
                [0, 1, 2, 255, 254, 13, 10, 13, 10],
                Array(repeating: 0x41, count: 70_000),
            ]
            for round in 0..<1000 {
                let fd = try RawHTTP.connect(port: server.port, timeout: 2)
                RawHTTP.send(fd, samples[round % samples.count])
                shutdown(fd, Int32(SHUT_WR))
                close(fd)
            }
            let after = try RawHTTP.request(port: server.port, path: "/users/7")
            #expect(after.status == 200)
            #expect(after.jsonObject?["id"] as? String == "7")
        }
    }

    @Test("silent connections are closed after the idle timeout and do not hold up other clients")
    func idleConnections() throws {
        let configuration = HTTPServerConfiguration(port: 0, workerThreads: 2, idleTimeoutSeconds: 1)
        try withServer(sampleRouter(), configuration: configuration) { server in
            var slow: [Int32] = []
            defer { slow.forEach { close($0) } }
            for _ in 0..<100 {
                let fd = try RawHTTP.connect(port: server.port, source: "127.0.0.2", timeout: 5)
                RawHTTP.send(fd, "GET /hello HTTP/1.1\r\nHost: x\r\nX-Slow: ")  // headers never finish
                slow.append(fd)
            }
            // Meanwhile a normal client is served.
            #expect(try RawHTTP.request(port: server.port, path: "/hello").status == 200)
            // The server gives up on every silent connection after about a second.
            let closed = slow.filter { RawHTTP.isClosedByPeer($0, timeout: 5) }.count
            #expect(closed == slow.count)
        }
    }

    @Test("shutdown refuses new connections but finishes the request in flight")
    func gracefulShutdown() throws {
        let release = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        var router = TestRouter()
        router.get("/slow") { _, _ in
            entered.signal()
            release.wait()
            return try .json(["done": true])
        }
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(port: 0, workerThreads: 2), responder: router,
            logger: Logger(label: "test", sink: MemoryLogSink()))
        try server.start()
        let port = server.port
        let inFlight = try RawHTTP.connect(port: port)
        defer { close(inFlight) }
        RawHTTP.send(inFlight, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(entered.wait(timeout: .now() + 10) == .success)

        let stopped = DispatchSemaphore(value: 0)
        let left = LockedBox(-1)
        Thread.detachNewThread {
            left.value = server.shutdown()
            stopped.signal()
        }
        // Wait until the listener is gone, then check nobody new gets in.
        let refused = eventually(timeout: .seconds(2), every: .milliseconds(10)) {
            (try? RawHTTP.connect(port: port, timeout: 1)).map({ close($0) }) == nil
        }
        #expect(refused, "new connections must be refused while draining")
        #expect(stopped.wait(timeout: .now() + 0.2) == .timedOut, "shutdown must wait for the request in flight")

        release.signal()
        let response = try RawHTTP.readResponse(inFlight)
        #expect(response.status == 200)
        #expect(response.jsonObject?["done"] as? Bool == true)
        #expect(response.header("Connection")?.lowercased() == "close")
        #expect(stopped.wait(timeout: .now() + 10) == .success)
        #expect(left.value == 0)
    }

    @Test("the access log has one line per request and never a credential or query value")
    func accessLogHasNoSecrets() throws {
        let log = MemoryLogSink()
        try withServer(sampleRouter(), log: log) { server in
            let secrets = ["tok-SECRET-1", "cookie-SECRET-2", "basic-SECRET-3", "query-SECRET-4"]
            let response = try RawHTTP.request(
                port: server.port, path: "/hello?token=\(secrets[3])",
                headers: [
                    ("X-Session-Token", secrets[0]), ("Cookie", "sessionid=\(secrets[1])"),
                    ("Authorization", "Bearer \(secrets[2])"),
                ])
            #expect(response.status == 200)
            _ = try RawHTTP.request(port: server.port, path: "/fail", headers: [("X-Session-Token", secrets[0])])
            // A path trying to forge a second log line.
            _ = try RawHTTP.request(port: server.port, path: "/x%0Ainfo%20forged")
        }
        let lines = log.lines.joined()
        #expect(!lines.contains("SECRET"), "the log must not contain a credential or query value")
        #expect(lines.contains("handler failed"), "a failing handler is logged for the operator")
        let access = log.lines.filter { $0.contains("homeport.access") }
        #expect(access.count == 3)
        #expect(access.first?.contains("127.0.0.1 GET /hello 200") == true)
        #expect(!log.lines.contains { $0.hasPrefix("info forged") }, "a path cannot start a log line")
    }

    @Test("the server listens on IPv6 loopback")
    func ipv6() throws {
        let configuration = HTTPServerConfiguration(host: "::1", port: 0, workerThreads: 1)
        try withServer(sampleRouter(), configuration: configuration) { server in
            let response = try RawHTTP.request(host: "::1", port: server.port, path: "/hello")
            #expect(response.status == 200)
        }
    }

    @Test("binding an address in use fails with a clear error")
    func portInUse() throws {
        try withServer(sampleRouter()) { server in
            let second = HTTPServer(
                configuration: HTTPServerConfiguration(port: server.port), responder: TestRouter(),
                logger: Logger(label: "test", sink: MemoryLogSink()))
            #expect {
                try second.start()
            } throws: { error in
                String(describing: error).contains("cannot listen on 127.0.0.1:\(server.port)")
            }
        }
    }
}
