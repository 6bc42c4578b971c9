import CCurl
import Foundation
import HomeportCurl
import Testing

@Suite("An answer's head, as libcurl hands it over one line at a time")
struct CurlExchangeHeadTests {
    /// What `exchange` took from `lines`, each given to the header callback as libcurl gives it.
    @discardableResult
    private func feed(_ lines: [String], to exchange: CurlExchange = CurlExchange(limit: 1024)) -> CurlExchange {
        let context = Unmanaged.passUnretained(exchange).toOpaque()
        for line in lines {
            var bytes = Array(line.utf8).map { CChar(bitPattern: $0) }
            let taken = bytes.withUnsafeMutableBufferPointer {
                CurlExchange.headerCallback($0.baseAddress, 1, $0.count, context)
            }
            #expect(taken == line.utf8.count, "every byte of \(line.debugDescription) is taken")
        }
        return exchange
    }

    @Test("names are lowercased; spaces, tabs and line ends around names and values are dropped")
    func trimmed() {
        let kept = feed([
            "HTTP/1.1 429 Too Many Requests\r\n", "Retry-After:\t 120 \r\n", " Content-Type : text/plain\r\n",
            "X-Empty:\r\n", "X-Blank:   \r\n", "not a field\r\n", "Location: https://a.example/x:y\r\n", "\r\n",
        ]).headers
        #expect(
            kept == [
                "retry-after": "120", "content-type": "text/plain", "x-empty": "", "x-blank": "",
                "location": "https://a.example/x:y",
            ])
    }

    @Test("a status line starts afresh: an interim answer's fields are not the final answer's")
    func interim() {
        let kept = feed([
            "HTTP/1.1 100 Continue\r\n", "Retry-After: 5\r\n", "\r\n", "HTTP/1.1 201 Created\r\n", "Location: /m/1\r\n",
            "\r\n",
        ]).headers
        #expect(kept == ["location": "/m/1"])
    }

    @Test("a field sent twice keeps both values, in any spelling of its name: the second cannot hide")
    func twice() {
        let kept = feed([
            "HTTP/1.1 200 OK\r\n", "X-Homeport-Installation: a\r\n", "x-homeport-installation:  b\r\n", "\r\n",
        ]).headers
        #expect(kept == ["x-homeport-installation": "a, b"])
    }

    @Test("a value that is not UTF-8 is kept repaired, never a crash; at most 100 names are kept")
    func hostile() {
        var line: [CChar] = Array("X-Bytes: ".utf8).map { CChar(bitPattern: $0) } + [-1, -2, 13, 10]
        let exchange = CurlExchange(limit: 1024)
        let context = Unmanaged.passUnretained(exchange).toOpaque()
        _ = line.withUnsafeMutableBufferPointer { CurlExchange.headerCallback($0.baseAddress, 1, $0.count, context) }
        #expect(exchange.headers["x-bytes"] == "\u{FFFD}\u{FFFD}")
        let many = feed((0..<150).map { "X-\($0): v\r\n" }).headers
        #expect(many.count == CurlExchange.fieldLimit)
        #expect(many["x-0"] == "v" && many["x-99"] == "v" && many["x-100"] == nil)
    }

    @Test("a body is kept up to the limit; one byte more stops the transfer and says so")
    func bodyLimit() {
        let exchange = CurlExchange(limit: 4)
        #expect([UInt8]("abcd".utf8).withUnsafeBytes { exchange.received($0) })
        #expect(exchange.body == Data("abcd".utf8) && !exchange.tooLarge)
        #expect(![UInt8]("e".utf8).withUnsafeBytes { exchange.received($0) })
        #expect(exchange.tooLarge && exchange.body == Data("abcd".utf8))
    }
}
