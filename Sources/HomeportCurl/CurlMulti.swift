import CCurl
import Dispatch
import Foundation
import Synchronization

/// Sends a batch of requests at once through libcurl's multi interface:
/// to a server that speaks HTTP/2 (ALPN, as browsers' push services and UnifiedPush
/// distributors behind TLS do), the requests are streams of one connection, many to a packet;
/// to one that speaks HTTP/1.1, kept-alive connections, up to ``connectionsPerHost`` at once.
/// Connections stay open between batches. A batch is split over the machine's cores, each part
/// on a multi handle of its own, as are batches sent at once (a push gateway's, for several
/// servers). A request that is slow, or never answered, holds only itself until its timeout,
/// and one push service holds at most ``perOrigin`` of the requests in flight: the others'
/// go on. A request's body may be made as it starts (``Request/Body/made(_:)``), so that
/// making bodies overlaps the exchanges already out.
package final class CurlMulti: @unchecked Sendable {
    /// One request: a POST of its body to `url` with these header lines.
    package struct Request {
        package var url: String
        package var headers: [String]
        /// The body, or how to make it (nil: it is not sent) as the request starts.
        package var body: Body

        /// A body made already, or made as the request starts: then making one (an encryption)
        /// overlaps the exchanges of the requests sent before it, on the part's own thread.
        package enum Body {
            case data(Data)
            case made(@Sendable () -> Data?)
        }

        package init(url: String, headers: [String], body: Data) {
            self.init(url: url, headers: headers, making: .data(body))
        }

        package init(url: String, headers: [String], making body: Body) {
            self.url = url
            self.headers = headers
            self.body = body
        }
    }

    /// Longest wait for one exchange, in seconds.
    package let timeoutSeconds: Int
    /// Requests in flight at once.
    package let inFlight: Int
    /// Connections to one host at once (HTTP/1.1; over HTTP/2 one carries them all).
    package let connectionsPerHost: Int
    /// Requests to one push service (`scheme://host[:port]`) in flight at once, in one part.
    package let perOrigin: Int
    /// Where it connects (``CurlSession/reach``).
    package let reach: CurlReach
    /// A file of PEM certificates trusted instead of libcurl's CA file (that file's and more),
    /// if any: a file, so that libcurl reads it once a handle and keeps its store.
    private let trusted: String?
    /// What ``trusted`` holds, to write it again if the file is gone (a cleaner of the
    /// temporary directory).
    private let bundle: Data?
    private let lock = NSLock()
    /// The multi handles no batch is using, with their connections.
    private var resting: [Handle] = []

    /// A multi handle and the easy handles it reuses.
    private final class Handle {
        let multi: UnsafeMutableRawPointer
        var idle: [CurlEasy] = []

        init?(connectionsPerHost: Int) {
            guard let multi = curl_multi_init() else { return nil }
            self.multi = multi
            _ = homeport_curl_multi_set_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
            _ = homeport_curl_multi_set_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, connectionsPerHost)
        }

        deinit {
            idle.removeAll()
            curl_multi_cleanup(multi)
        }
    }

    /// `extraCA`: PEM certificates to trust besides libcurl's own CA file. Throws when that file
    /// cannot be read, or the bundle of both written.
    package init(
        timeoutSeconds: Int, reach: CurlReach, extraCA: String? = nil, inFlight: Int = 256, connectionsPerHost: Int = 8,
        perOrigin: Int = 64
    ) throws {
        self.timeoutSeconds = timeoutSeconds
        self.reach = reach
        self.inFlight = inFlight
        self.connectionsPerHost = connectionsPerHost
        self.perOrigin = perOrigin
        guard let extraCA else {
            trusted = nil
            bundle = nil
            return
        }
        let system = CurlLibrary.defaultCAFile
        guard !system.isEmpty, let systemPEM = FileManager.default.contents(atPath: system) else {
            throw CurlSession.Failure(description: "cannot read libcurl's CA file (\(system)) to add the CA to")
        }
        let bundle = systemPEM + Data(("\n" + extraCA + "\n").utf8)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "homeport-ca-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).pem"
        ).path
        guard FileManager.default.createFile(atPath: path, contents: bundle) else {
            throw CurlSession.Failure(description: "cannot write the CA bundle \(path)")
        }
        trusted = path
        self.bundle = bundle
    }

    deinit {
        if let trusted { try? FileManager.default.removeItem(atPath: trusted) }
    }

    /// One transfer in flight: where its answer goes, and what libcurl reads until it ends.
    private struct Transfer {
        let index: Int
        let easy: CurlEasy
        let exchange: CurlExchange
        let headers: CurlHeaderList
    }

    /// Each request's answer, or why there was none, in order. No request starts after
    /// `deadline`: those come back as failures, unsent.
    package func perform(_ requests: [Request], deadline: ContinuousClock.Instant) -> [Result<
        CurlSession.Answer, CurlSession.Failure
    >] {
        if let trusted, let bundle, !FileManager.default.fileExists(atPath: trusted) {
            _ = FileManager.default.createFile(atPath: trusted, contents: bundle)
        }
        let parts = max(1, min(ProcessInfo.processInfo.activeProcessorCount, requests.count / 16))
        let answers = Mutex(
            [Result<CurlSession.Answer, CurlSession.Failure>](
                repeating: .failure(CurlSession.Failure(description: "not sent", started: false)),
                count: requests.count))
        DispatchQueue.concurrentPerform(iterations: parts) { part in
            let indices = Array(stride(from: part, to: requests.count, by: parts))
            let sent = perform(indices.map { requests[$0] }, deadline: deadline, part: part)
            answers.withLock { all in
                for (index, answer) in zip(indices, sent) { all[index] = answer }
            }
        }
        return answers.withLock { $0 }
    }

    /// The origin a request goes to (`scheme://host[:port]`, lowercase, the scheme's default
    /// port left out): the push service it is counted against.
    package static func origin(of endpoint: String) -> String {
        guard let separator = endpoint.range(of: "://") else { return endpoint }
        let rest = endpoint[separator.upperBound...]
        let origin = endpoint[..<(rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex)]
            .lowercased()
        for (scheme, port) in [("https://", ":443"), ("http://", ":80")]
        where origin.hasPrefix(scheme) && origin.hasSuffix(port) {
            return String(origin.dropLast(port.count))
        }
        return origin
    }

    /// One part of a batch, on a multi handle of its own.
    private func perform(_ requests: [Request], deadline: ContinuousClock.Instant, part: Int) -> [Result<
        CurlSession.Answer, CurlSession.Failure
    >] {
        var results = [Result<CurlSession.Answer, CurlSession.Failure>](
            repeating: .failure(
                CurlSession.Failure(description: "not sent: the batch ran out of time", started: false)),
            count: requests.count)
        guard let handle = lock.withLock({ resting.popLast() }) ?? Handle(connectionsPerHost: connectionsPerHost)
        else { return requests.map { _ in .failure(CurlSession.Failure(description: "libcurl failed")) } }
        defer { lock.withLock { resting.append(handle) } }
        let multi = handle.multi
        // The requests waiting, by push service, taken in turn: one that is slow holds at most
        // `perOrigin` of the places in flight.
        var waiting: [String: [Int]] = [:]
        var origins: [String] = []
        for (index, request) in requests.enumerated() {
            let origin = Self.origin(of: request.url)
            if waiting[origin] == nil { origins.append(origin) }
            waiting[origin, default: []].append(index)
        }
        var position: [String: Int] = [:]
        var flying: [String: Int] = [:]
        var active: [UnsafeMutableRawPointer: (transfer: Transfer, origin: String)] = [:]
        func start() {
            var progress = true
            while progress, active.count < inFlight, ContinuousClock.now < deadline {
                progress = false
                for origin in origins where active.count < inFlight {
                    let queue = waiting[origin] ?? []
                    let at = position[origin, default: 0]
                    guard at < queue.count, flying[origin, default: 0] < perOrigin else { continue }
                    position[origin] = at + 1
                    progress = true
                    let index = queue[at]
                    let body: Data
                    switch requests[index].body {
                    case .data(let data): body = data
                    case .made(let make):
                        guard let made = make() else {
                            results[index] = .failure(CurlSession.Failure(description: "its body was not made"))
                            continue
                        }
                        body = made
                    }
                    guard let easy = handle.idle.popLast() ?? CurlEasy() else {
                        results[index] = .failure(CurlSession.Failure(description: "libcurl failed"))
                        continue
                    }
                    let transfer = Transfer(
                        index: index, easy: easy, exchange: CurlExchange(limit: 64 << 10),
                        headers: CurlHeaderList(requests[index].headers + ["Expect:"]))
                    configure(transfer, url: requests[index].url, body: body)
                    guard curl_multi_add_handle(multi, easy.handle) == CURLM_OK else {
                        results[index] = .failure(CurlSession.Failure(description: "libcurl failed"))
                        continue
                    }
                    active[easy.handle] = (transfer, origin)
                    flying[origin, default: 0] += 1
                }
            }
        }
        start()
        var running: Int32 = 0
        while !active.isEmpty {
            var failed = curl_multi_perform(multi, &running) != CURLM_OK
            var code = CURLE_OK
            while let easy = homeport_curl_multi_done(multi, &code) {
                _ = curl_multi_remove_handle(multi, easy)
                guard let (transfer, origin) = active.removeValue(forKey: easy) else { continue }
                flying[origin, default: 1] -= 1
                if code == CURLE_OK {
                    results[transfer.index] = .success(
                        CurlSession.Answer(
                            status: transfer.easy.status, body: transfer.exchange.body,
                            headers: transfer.exchange.headers))
                    // Kept with its connection for the next request; a failed one is let go.
                    handle.idle.append(transfer.easy)
                } else {
                    results[transfer.index] = .failure(CurlSession.Failure(description: CurlLibrary.describe(code)))
                }
            }
            start()
            if !active.isEmpty, !failed { failed = curl_multi_poll(multi, nil, 0, 10, nil) != CURLM_OK }
            if failed {
                // libcurl cannot go on with this handle: what is in flight fails, to go again.
                for (easy, (transfer, _)) in active {
                    _ = curl_multi_remove_handle(multi, easy)
                    results[transfer.index] = .failure(CurlSession.Failure(description: "libcurl failed"))
                }
                active.removeAll()
            }
        }
        return results
    }

    /// Sets a transfer's handle up for a POST of `body` to `url`, its answer going to its exchange.
    private func configure(_ transfer: Transfer, url: String, body: Data) {
        let easy = transfer.easy
        CurlSession.setUp(
            easy, url: url, headers: transfer.headers, timeoutSeconds: timeoutSeconds, reach: reach)
        easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        // A second request to a host waits to learn whether the first connection multiplexes.
        easy.set(CURLOPT_PIPEWAIT, 1)
        if let trusted { easy.set(CURLOPT_CAINFO, trusted) }
        easy.attach(transfer.exchange)
        easy.post(body)
    }
}
