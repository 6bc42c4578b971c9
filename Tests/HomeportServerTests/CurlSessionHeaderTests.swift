import Foundation
import Testing

@testable import HomeportServer

@Suite("An answer's header lines, as libcurl hands them over one at a time")
struct CurlSessionHeaderTests {
    /// The fields kept after `lines`, each given to the header callback as libcurl gives it.
    private func fields(_ lines: [String]) -> [String: String] {
        let exchange = CurlSession.Exchange(limit: 1024)
        let context = Unmanaged.passUnretained(exchange).toOpaque()
        for line in lines {
            var bytes = Array(line.utf8).map { CChar(bitPattern: $0) }
            let taken = bytes.withUnsafeMutableBufferPointer { curlSessionHeader($0.baseAddress, 1, $0.count, context) }
            #expect(taken == line.utf8.count, "every byte of \(line.debugDescription) is taken")
        }
        return exchange.headers
    }

    @Test("names are lowercased; spaces, tabs and line ends around names and values are dropped")
    func trimmed() {
        let kept = fields([
            "HTTP/1.1 429 Too Many Requests\r\n", "Retry-After:\t 120 \r\n", " Content-Type : text/plain\r\n",
            "X-Empty:\r\n", "X-Blank:   \r\n", "not a field\r\n", "Location: https://a.example/x:y\r\n", "\r\n",
        ])
        #expect(
            kept == [
                "retry-after": "120", "content-type": "text/plain", "x-empty": "", "x-blank": "",
                "location": "https://a.example/x:y",
            ])
    }

    @Test("a status line starts afresh: an interim answer's fields are not the final answer's")
    func interim() {
        let kept = fields([
            "HTTP/1.1 100 Continue\r\n", "Retry-After: 5\r\n", "\r\n", "HTTP/1.1 201 Created\r\n", "Location: /m/1\r\n",
            "\r\n",
        ])
        #expect(kept == ["location": "/m/1"])
    }

    @Test("a value that is not UTF-8 is kept repaired, never a crash; at most 100 fields are kept")
    func hostile() {
        let exchange = CurlSession.Exchange(limit: 1024)
        let context = Unmanaged.passUnretained(exchange).toOpaque()
        var line: [CChar] = Array("X-Bytes: ".utf8).map { CChar(bitPattern: $0) } + [-1, -2, 13, 10]
        _ = line.withUnsafeMutableBufferPointer { curlSessionHeader($0.baseAddress, 1, $0.count, context) }
        #expect(exchange.headers["x-bytes"] == "\u{FFFD}\u{FFFD}")
        let many = fields((0..<150).map { "X-\($0): v\r\n" })
        #expect(many.count == 100)
    }
}
