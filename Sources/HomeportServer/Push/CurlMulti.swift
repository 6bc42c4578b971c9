import CCurl
import Foundation

/// Sends a batch of requests at once, on the calling thread, through libcurl's multi interface:
/// to a server that speaks HTTP/2 (ALPN, as browsers' push services and UnifiedPush
/// distributors behind TLS do), the requests are streams of one connection, many to a packet;
/// to one that speaks HTTP/1.1, kept-alive connections, up to ``connectionsPerHost`` at once.
/// Connections stay open between batches. Batches sent at once (a push gateway's, for
/// several servers) each get a multi handle of their own; a request that is slow, or never
/// answered, holds only itself until its timeout.
final class CurlMulti: @unchecked Sendable {
    /// One request: a POST of `body` to `url` with these header lines.
    struct Request {
        var url: String
        var headers: [String]
        var body: Data
    }

    /// Longest wait for one exchange, in seconds.
    let timeoutSeconds: Int
    /// Requests in flight at once.
    let inFlight: Int
    /// Connections to one host at once (HTTP/1.1; over HTTP/2 one carries them all).
    let connectionsPerHost: Int
    /// Whether it connects to public addresses only (``CurlSession/publicOnly``).
    let publicOnly: Bool
    /// A file of PEM certificates trusted instead of libcurl's CA file (that file's and more),
    /// if any: a file, so that libcurl reads it once and keeps its store for every connection.
    private let trusted: String?
    private let lock = NSLock()
    /// The multi handles no batch is using, with their connections.
    private var resting: [Handle] = []

    /// A multi handle and the easy handles it reuses.
    private final class Handle {
        let multi: UnsafeMutableRawPointer
        var idle: [UnsafeMutableRawPointer] = []

        init?(connectionsPerHost: Int) {
            guard let multi = curl_multi_init() else { return nil }
            self.multi = multi
            _ = homeport_curl_multi_set_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
            _ = homeport_curl_multi_set_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, connectionsPerHost)
        }

        deinit {
            for easy in idle { curl_easy_cleanup(easy) }
            curl_multi_cleanup(multi)
        }
    }

    /// `extraCA`: PEM certificates to trust besides the system's.
    init(
        timeoutSeconds: Int, publicOnly: Bool, extraCA: String? = nil, inFlight: Int = 256, connectionsPerHost: Int = 8
    ) {
        self.timeoutSeconds = timeoutSeconds
        self.publicOnly = publicOnly
        self.inFlight = inFlight
        self.connectionsPerHost = connectionsPerHost
        trusted = extraCA.flatMap { extra in
            let system = (try? Data(contentsOf: URL(fileURLWithPath: "/etc/ssl/certs/ca-certificates.crt"))) ?? Data()
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(
                "homeport-webpush-ca-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).pem"
            ).path
            let bundle = system + Data(("\n" + extra + "\n").utf8)
            return FileManager.default.createFile(atPath: path, contents: bundle) ? path : nil
        }
    }

    deinit {
        if let trusted { try? FileManager.default.removeItem(atPath: trusted) }
    }

    /// One transfer in flight: where its answer goes, and what libcurl reads until it ends.
    private final class Transfer {
        let index: Int
        let exchange: CurlSession.Exchange
        let context: Unmanaged<CurlSession.Exchange>
        var headers: UnsafeMutablePointer<curl_slist>?

        init(index: Int, limit: Int) {
            self.index = index
            exchange = CurlSession.Exchange(limit: limit)
            context = Unmanaged.passRetained(exchange)
        }

        func finish() {
            curl_slist_free_all(headers)
            headers = nil
            context.release()
        }
    }

    /// Each request's answer, or why there was none, in order. No request starts after
    /// `deadline`: those come back as failures, unsent.
    func perform(_ requests: [Request], deadline: ContinuousClock.Instant) -> [Result<
        CurlSession.Answer, CurlSession.Failure
    >] {
        var results = [Result<CurlSession.Answer, CurlSession.Failure>](
            repeating: .failure(CurlSession.Failure(description: "not sent: the batch ran out of time")),
            count: requests.count)
        guard let handle = lock.withLock({ resting.popLast() }) ?? Handle(connectionsPerHost: connectionsPerHost)
        else { return requests.map { _ in .failure(CurlSession.Failure(description: "libcurl failed")) } }
        defer { lock.withLock { resting.append(handle) } }
        let multi = handle.multi
        var active: [UnsafeMutableRawPointer: Transfer] = [:]
        var next = 0
        func start() {
            while active.count < inFlight, next < requests.count, ContinuousClock.now < deadline {
                defer { next += 1 }
                guard let easy = handle.idle.popLast() ?? curl_easy_init() else {
                    results[next] = .failure(CurlSession.Failure(description: "libcurl failed"))
                    continue
                }
                let transfer = Transfer(index: next, limit: 64 << 10)
                configure(easy, requests[next], transfer)
                guard curl_multi_add_handle(multi, easy) == CURLM_OK else {
                    transfer.finish()
                    curl_easy_cleanup(easy)
                    results[next] = .failure(CurlSession.Failure(description: "libcurl failed"))
                    continue
                }
                active[easy] = transfer
            }
        }
        start()
        var running: Int32 = 0
        while !active.isEmpty {
            _ = curl_multi_perform(multi, &running)
            var code = CURLE_OK
            while let easy = homeport_curl_multi_done(multi, &code) {
                _ = curl_multi_remove_handle(multi, easy)
                guard let transfer = active.removeValue(forKey: easy) else { continue }
                if code == CURLE_OK {
                    results[transfer.index] = .success(
                        CurlSession.Answer(
                            status: homeport_curl_status(easy), body: transfer.exchange.body,
                            headers: transfer.exchange.headers))
                    handle.idle.append(easy)
                } else {
                    results[transfer.index] = .failure(
                        CurlSession.Failure(description: String(cString: curl_easy_strerror(code))))
                    curl_easy_cleanup(easy)
                }
                transfer.finish()
            }
            start()
            if !active.isEmpty { _ = curl_multi_poll(multi, nil, 0, 100, nil) }
        }
        return results
    }

    /// Sets a handle up for `request`, its answer going to `transfer`.
    private func configure(_ easy: UnsafeMutableRawPointer, _ request: Request, _ transfer: Transfer) {
        for header in request.headers + ["Expect:"] { transfer.headers = curl_slist_append(transfer.headers, header) }
        _ = homeport_curl_set_string(easy, CURLOPT_URL, request.url)
        _ = homeport_curl_set_slist(easy, CURLOPT_HTTPHEADER, transfer.headers)
        _ = homeport_curl_set_long(easy, CURLOPT_TIMEOUT, timeoutSeconds)
        _ = homeport_curl_set_long(easy, CURLOPT_CONNECTTIMEOUT, min(10, timeoutSeconds))
        _ = homeport_curl_set_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = homeport_curl_set_long(easy, CURLOPT_FOLLOWLOCATION, 0)
        _ = homeport_curl_set_string(easy, CURLOPT_PROXY, "")
        _ = homeport_curl_set_long(easy, CURLOPT_PROTOCOLS, Int(CURLPROTO_HTTP | CURLPROTO_HTTPS))
        _ = homeport_curl_set_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        // A second request to a host waits to learn whether the first connection multiplexes.
        _ = homeport_curl_set_long(easy, CURLOPT_PIPEWAIT, 1)
        _ = homeport_curl_public_only(easy, publicOnly ? 1 : 0)
        if let trusted { _ = homeport_curl_set_string(easy, CURLOPT_CAINFO, trusted) }
        _ = homeport_curl_set_pointer(easy, CURLOPT_WRITEDATA, transfer.context.toOpaque())
        _ = homeport_curl_set_write_function(easy, curlSessionWrite)
        _ = homeport_curl_set_pointer(easy, CURLOPT_HEADERDATA, transfer.context.toOpaque())
        _ = homeport_curl_set_header_function(easy, curlSessionHeader)
        _ = homeport_curl_set_long(easy, CURLOPT_POST, 1)
        _ = homeport_curl_set_long(easy, CURLOPT_POSTFIELDSIZE, request.body.count)
        // libcurl keeps its own copy of the body until the transfer ends.
        _ = request.body.withUnsafeBytes {
            homeport_curl_set_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0.baseAddress))
        }
    }
}
