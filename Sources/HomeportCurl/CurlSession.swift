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
    /// Where it connects, whatever a name resolves to.
    package let reach: CurlReach

    package init(
        caFile: String? = nil, timeoutSeconds: Int = 30, byteLimit: Int = 16 << 20, reach: CurlReach = .anywhere
    ) {
        self.caFile = caFile
        self.timeoutSeconds = timeoutSeconds
        self.byteLimit = byteLimit
        self.reach = reach
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
        /// Whether the request was started (`false`: its batch ran out of time before it).
        package var started = true

        package init(description: String, started: Bool = true) {
            self.description = description
            self.started = started
        }
    }

    /// Sends a request (a POST when `body` is given, else a GET) and waits for the answer.
    package func perform(_ url: String, headers: [String] = [], body: Data? = nil) -> Result<Answer, Failure> {
        lock.withLock {
            if easy == nil { easy = CurlEasy() }
            guard let easy else { return .failure(Failure(description: "libcurl failed")) }
            let exchange = CurlExchange(limit: byteLimit)
            let list = CurlHeaderList(headers + ["Expect:"])
            Self.setUp(easy, url: url, headers: list, timeoutSeconds: timeoutSeconds, reach: reach)
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
    /// sets it up, `timeoutSeconds` in all (at most 10 to connect), to the addresses `reach` allows.
    package static func setUp(
        _ easy: CurlEasy, url: String, headers: CurlHeaderList, timeoutSeconds: Int, reach: CurlReach
    ) {
        easy.useHTTP(url: url, headers: headers)
        easy.limit(seconds: timeoutSeconds)
        _ = homeport_curl_reach(easy.handle, reach.rawValue)
    }
}

/// Where a transfer may connect, checked on each address a name resolves to as its socket opens
/// (so a name that resolves somewhere else than its spelling says is caught too).
package enum CurlReach: Int32, Sendable {
    /// Anywhere: the server's own peers (an identity provider, FCM, its push gateway).
    case anywhere = 0
    /// Public addresses only: not this machine, a private, shared, link-local, multicast or
    /// reserved network (URLs strangers name: Web Push endpoints).
    case publicOnly = 1
    /// Anywhere but a link-local address (169.254/16, fe80::/10, fd00:ec2::254), where a cloud's
    /// instance metadata answers: URLs strangers name on a server that lets them name its network.
    case notLinkLocal = 2

    /// Whether `address` (4 or 16 bytes) is one that ``notLinkLocal`` refuses.
    package static func isLinkLocal(_ address: [UInt8]) -> Bool {
        homeport_is_link_local(address, Int32(address.count)) != 0
    }
}
