import CCurl
import Foundation

/// One libcurl handle, kept between exchanges so its connection stays open (keep-alive), for
/// the server's exchanges with a push gateway, its Web Pushes, and the gateway's fetch of an
/// enrolling server.
/// One exchange at a time; HTTP and HTTPS only, no redirects, no proxy from the environment.
package final class CurlSession: @unchecked Sendable {
    private let lock = NSLock()
    private var easy: CurlEasy?
    /// The CA file trusted instead of the system's, if any.
    package let caFile: String?
    /// Longest wait for one exchange, in seconds.
    package let timeoutSeconds: Int
    /// The largest answer read, in bytes.
    package let byteLimit: Int
    /// Whether it connects to public addresses only, whatever a name resolves to (for URLs
    /// strangers name).
    package let publicOnly: Bool

    package init(caFile: String? = nil, timeoutSeconds: Int = 30, byteLimit: Int = 16 << 20, publicOnly: Bool = false) {
        self.caFile = caFile
        self.timeoutSeconds = timeoutSeconds
        self.byteLimit = byteLimit
        self.publicOnly = publicOnly
    }

    /// What came back: the status, the body, and the final answer's header fields (names
    /// lowercase; a field sent twice has both values, joined by `, `).
    package struct Answer {
        package var status: Int
        package var body: Data
        package var headers: [String: String] = [:]

        /// The seconds `Retry-After` asks for (0 to a day), when it gives one number (sent twice,
        /// it gives none).
        package var retryAfter: Int64? {
            headers["retry-after"].flatMap { Int64($0) }.map { min(max($0, 0), 86400) }
        }
    }

    /// Why there was no answer.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// Sends a request (a POST when `body` is given, else a GET) and waits for the answer.
    package func perform(_ url: String, headers: [String] = [], body: Data? = nil) -> Result<Answer, Failure> {
        lock.withLock {
            if easy == nil { easy = CurlEasy() }
            guard let easy else { return .failure(Failure(description: "libcurl failed")) }
            let exchange = CurlExchange(limit: byteLimit)
            let list = CurlHeaderList(headers + ["Expect:"])
            Self.setUp(easy, url: url, headers: list, timeoutSeconds: timeoutSeconds, publicOnly: publicOnly)
            if let caFile { easy.set(CURLOPT_CAINFO, caFile) }
            easy.attach(exchange)
            if let body { easy.post(body) } else { easy.set(CURLOPT_HTTPGET, 1) }
            let code = withExtendedLifetime(list) { easy.perform() }
            guard code == CURLE_OK else {
                // The connection may be broken: the next exchange starts afresh.
                self.easy = nil
                return .failure(Failure(description: CurlLibrary.describe(code)))
            }
            return .success(Answer(status: easy.status, body: exchange.body, headers: exchange.headers))
        }
    }

    /// What every exchange of the server's own is: an HTTP exchange as ``CurlEasy/useHTTP(url:headers:proxy:)``
    /// sets it up, `timeoutSeconds` in all (at most 10 to connect), and with `publicOnly` public
    /// addresses only.
    package static func setUp(
        _ easy: CurlEasy, url: String, headers: CurlHeaderList, timeoutSeconds: Int, publicOnly: Bool
    ) {
        easy.useHTTP(url: url, headers: headers)
        easy.limit(seconds: timeoutSeconds)
        _ = homeport_curl_public_only(easy.handle, publicOnly ? 1 : 0)
    }
}
