import Foundation
import HomeportHTTP
import HomeportTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("The query is read by the server itself: any number of arguments answers at once")
struct RequestTargetTests {
    /// A router whose one route tells how many query arguments it got, and two of them.
    private func queryRouter() -> TestRouter {
        var router = TestRouter()
        router.get("/query") { request, _ in
            try .json([
                "count": String(request.query.count), "a": request.query["a"] ?? "-", "b": request.query["b"] ?? "-",
                "c": request.query["c"] ?? "-", "d": request.query["d"] ?? "-", "e": request.query["e"] ?? "-",
            ])
        }
        return router
    }

    @Test(
        "hundreds or thousands of arguments, well under the header limit, are answered at once",
        arguments: [4096, 16384])
    func manyArguments(maxHeaderBytes: Int) throws {
        let configuration = HTTPServerConfiguration(port: 0, workerThreads: 2, maxHeaderBytes: maxHeaderBytes)
        try withServer(queryRouter(), configuration: configuration) { server in
            // libmicrohttpd alone ran out of connection memory from about 240 arguments on at
            // 16 KiB (60 at 4 KiB) and then held the connection without an answer.
            for count in [1, 59, 60, 61, 239, 240, 241, 400, 700] {
                let query = (0..<count).map { "k\($0)=1" }.joined(separator: "&")
                let line = "GET /query?\(query) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                guard line.utf8.count < maxHeaderBytes / 2 else { continue }
                let response = try RawHTTP.exchange(port: server.port, Array(line.utf8), timeout: 3)
                #expect(response.status == 200, "\(count) arguments at \(maxHeaderBytes)")
                #expect(response.jsonObject?["count"] as? String == String(count), "\(count) arguments")
            }
            // One byte an argument: the cheapest target for a pool that stores each one.
            let ampersands = String(repeating: "&", count: maxHeaderBytes / 2)
            let response = try RawHTTP.exchange(
                port: server.port,
                Array("GET /query?\(ampersands) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8), timeout: 3)
            #expect(response.status == 200)
            #expect(response.jsonObject?["count"] as? String == "0")
        }
    }

    @Test("a request line over the header limit is 414 at once, whatever its query")
    func overlongLine() throws {
        let configuration = HTTPServerConfiguration(port: 0, workerThreads: 2, maxHeaderBytes: 4096)
        try withServer(queryRouter(), configuration: configuration) { server in
            let query = String(repeating: "a=1&", count: 2000)
            let response = try RawHTTP.exchange(
                port: server.port, Array("GET /query?\(query) HTTP/1.1\r\nHost: x\r\n\r\n".utf8), timeout: 3)
            #expect(response.status == 414)
        }
    }

    @Test("arguments decode as a form does: + is a space, %HH escapes, the last value wins")
    func decoding() throws {
        try withServer(queryRouter()) { server in
            let response = try RawHTTP.request(port: server.port, path: "/query?a=1&b=x+y%21&c=%41%zz%4&d&e=1=2&a=2&&")
            #expect(response.status == 200)
            let body = response.jsonObject ?? [:]
            #expect(body["a"] as? String == "2")
            #expect(body["b"] as? String == "x y!")
            #expect(body["c"] as? String == "A%zz%4")
            #expect(body["d"] as? String == "")
            #expect(body["e"] as? String == "1=2")
            #expect(body["count"] as? String == "5")
            // The path is still decoded and matched without the query.
            #expect(
                try RawHTTP.request(port: server.port, path: "/%71uery?a=%E2%9C%93").jsonObject?["a"] as? String == "✓")
        }
    }

    @Test("a NUL in the target is 400 bad_request at once, before or after the ?")
    func nulInTarget() throws {
        try withServer(queryRouter()) { server in
            let ampersands = [UInt8](repeating: UInt8(ascii: "&"), count: 6000)
            for target in [
                Array("/query".utf8) + [0] + Array("?a=1".utf8),
                Array("/query?a=1".utf8) + [0] + Array("&b=2".utf8),
                Array("/que".utf8) + [0] + Array("ry?".utf8) + ampersands,
            ] {
                let request =
                    Array("GET ".utf8) + target + Array(" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)
                let response = try RawHTTP.exchange(port: server.port, request, timeout: 3)
                #expect(response.status == 400, "\(target.prefix(20))")
                #expect((response.jsonObject?["error"] as? [String: Any])?["code"] as? String == "bad_request")
            }
        }
    }

    @Test("%00 in the path is 400 bad_request: libmicrohttpd's decoding would cut the path short")
    func escapedNULInPath() throws {
        try withServer(queryRouter()) { server in
            for path in ["/query%00x", "/query%00", "/qu%00ery?a=1", "/%00"] {
                let response = try RawHTTP.request(port: server.port, path: path, timeout: 3)
                #expect(response.status == 400, "\(path)")
                #expect((response.jsonObject?["error"] as? [String: Any])?["code"] as? String == "bad_request")
            }
            // In the query it is a value's byte, decoded by the server's own parser; %0 and %000 are not %00.
            #expect(try RawHTTP.request(port: server.port, path: "/query?a=%00", timeout: 3).status == 200)
            #expect(try RawHTTP.request(port: server.port, path: "/query%30", timeout: 3).status != 400)
        }
    }

    @Test("the raw query is decoded without the server: edge cases of the parser")
    func parserEdges() throws {
        try withServer(queryRouter()) { server in
            for (path, expected) in [
                ("/query?", "0"), ("/query?=", "1"), ("/query?%", "1"), ("/query?a=%", "1"), ("/query?&&&a", "1"),
                ("/query?a&a&a", "1"),
            ] {
                let response = try RawHTTP.request(port: server.port, path: path)
                #expect(response.status == 200, "\(path)")
                #expect(response.jsonObject?["count"] as? String == expected, "\(path)")
            }
        }
    }
}
