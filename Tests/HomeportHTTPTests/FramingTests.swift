import Foundation
import HomeportTestSupport
import Testing

@testable import HomeportHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// Requests whose body could be read two ways (RFC 9112 §6.3), each refused at once with the
/// connection closed, so that nothing after it on the connection is read as a request.
@Suite("Request framing")
struct FramingTests {
    /// Sends `head` and a pipelined `GET /users/9` after it; returns the first answer and whether
    /// the server then closed the connection without answering the second request.
    private func exchange(_ server: HTTPServer, _ head: String) throws -> (RawResponse, closed: Bool) {
        let fd = try RawHTTP.connect(port: server.port, timeout: 5)
        defer { close(fd) }
        RawHTTP.send(fd, head + "GET /users/9 HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = try RawHTTP.readResponse(fd)
        return (first, RawHTTP.isClosedByPeer(fd, timeout: 5))
    }

    @Test(
        "ambiguous framing is 400 and closes the connection",
        arguments: [
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 40\r\n\r\nabc",
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            // libmicrohttpd reads a coding padded with spaces or tabs as no coding at all (a body up
            // to the connection's end), so it cannot be served as chunked: refused at once.
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked \r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\t\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\nabc",
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length : 3\r\n\r\nabc",
            "GET /hello HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
            "GET /hello HTTP/1.1\r\n\r\n",
            // HTTP/1.0 has no chunked coding (RFC 9112 §6.1), whatever else the request says.
            "POST /echo HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            // A bare CR in a value, which another parser may take for a line's end.
            "POST /echo HTTP/1.1\r\nHost: x\r\nX-A: a\rContent-Length: 50\r\nContent-Length: 3\r\n\r\nabc",
            "GET /hello HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n",
        ])
    func ambiguous(head: String) throws {
        try withServer(sampleRouter()) { server in
            let (response, closed) = try exchange(server, head)
            #expect(response.status == 400)
            #expect(closed, "nothing after an ambiguous request is read as another request")
            #expect(try RawHTTP.request(port: server.port, path: "/hello").status == 200)
        }
    }

    @Test(
        "a transfer coding other than chunked is 501 at once, not read until the peer gives up",
        arguments: ["gzip", "chunked, gzip", "gzip, chunked", "identity"])
    func unknownCoding(coding: String) throws {
        try withServer(sampleRouter()) { server in
            let head = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \(coding)\r\n\r\nabc"
            let (response, closed) = try exchange(server, head)
            #expect(response.status == 501)
            #expect((response.jsonObject?["error"] as? [String: Any])?["code"] as? String == "not_implemented")
            #expect(closed)
        }
    }

    @Test("well-formed framing is served: one length, the same length twice, chunked in any case")
    func wellFormed() throws {
        try withServer(sampleRouter()) { server in
            for head in [
                "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
                "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
                "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                // Leading whitespace is not part of a field value (RFC 9110 §5.5).
                "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \tchunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            ] {
                let fd = try RawHTTP.connect(port: server.port, timeout: 5)
                defer { close(fd) }
                RawHTTP.send(fd, head + "GET /users/9 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                let text = String(decoding: try RawHTTP.readToEnd(fd), as: UTF8.self)
                #expect(text.hasPrefix("HTTP/1.1 200"), "\(head)")
                #expect(text.contains(#"{"bytes":3}"#), "\(head)")
                #expect(text.contains(#"{"id":"9"}"#), "the connection goes on: \(head)")
            }
        }
    }

    @Test("header field names must be tokens")
    func tokens() {
        #expect(Framing.isToken("Content-Length"))
        #expect(Framing.isToken("X-a!#$%&'*+-.^_`|~9"))
        for bad in ["", "Content-Length ", " Host", "a\tb", "a:b", "naïve", "a\"b", "a(b)"] {
            #expect(!Framing.isToken(bad), "\(bad)")
        }
    }
}
