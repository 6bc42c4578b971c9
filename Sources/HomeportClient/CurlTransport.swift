#if canImport(CCurl)
    import CCurl
    import Foundation
    import HomeportCurl

    /// The Linux transport: libcurl, with no cookie engine, no redirect following, a byte limit
    /// enforced while reading, and a total deadline (`CURLOPT_TIMEOUT_MS`). It reaches IPv6
    /// literals such as `http://[::1]:8080`, which Foundation's URLSession on Linux refuses.
    ///
    /// It never takes a proxy from the environment (`http_proxy`, `HTTPS_PROXY`, `ALL_PROXY`, …):
    /// a proxy sees every request and can answer an identity probe itself, so one is used only
    /// when the caller names it.
    public final class CurlTransport: ClientTransport {
        /// Sets up libcurl and OpenSSL for the process. Call it first thing in `main` of a program
        /// that exits while transfers may still run (a race's losing addresses are aborted in the
        /// background, not waited for): OpenSSL then keeps its state at exit instead of freeing it
        /// under a thread still in a TLS handshake. Creating a transport does the same, but too late
        /// when something else used OpenSSL first.
        public static func prepareProcess() {
            CurlLibrary.prepareProcess()
        }
        let proxy: String
        /// The only CA file trusted instead of the system's; `nil` trusts the system's.
        let caFile: String?

        /// Creates the transport; every request goes through `proxy` when one is given, and
        /// directly otherwise, whatever the environment says. `certificateAuthorities` replaces the
        /// system's trusted CAs with one PEM file (a test's own CA; never set by default).
        public init(proxy: URL? = nil, certificateAuthorities caFile: String? = nil) {
            CurlLibrary.prepareProcess()
            self.proxy = proxy?.absoluteString ?? ""
            self.caFile = caFile
        }

        /// What one buffered transfer accumulates: the body up to its limit, until cancelled.
        private final class Transfer: CurlExchange {
            let cancelled: ManagedAtomicFlag
            init(limit: Int, cancelled: ManagedAtomicFlag) {
                self.cancelled = cancelled
                super.init(limit: limit)
            }

            override var shouldAbort: Bool { cancelled.isSet }
        }

        /// Sends one request on a worker thread. Cancelling the calling task returns at once (a
        /// race need not wait for its losers) and aborts the transfer in the background.
        public func send(_ request: ClientRequest) async throws -> ClientResponse {
            let cancelled = ManagedAtomicFlag()
            let outcome = ResumeOnce<ClientResponse>()
            let (proxy, caFile) = (self.proxy, self.caFile)
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    outcome.attach(continuation)
                    // Already cancelled: send nothing.
                    if cancelled.isSet { return }
                    // A thread of its own: a blocking transfer (a blackholed address) must not hold
                    // one of Dispatch's few pool threads and starve the rest of the race.
                    Thread.detachNewThread {
                        outcome.resume(
                            with: Result {
                                try Self.perform(request, proxy: proxy, caFile: caFile, cancelled: cancelled)
                            })
                    }
                }
            } onCancel: {
                cancelled.set()
                outcome.resume(with: .failure(CancellationError()))
            }
        }

        private static func perform(
            _ request: ClientRequest, proxy: String, caFile: String?, cancelled: ManagedAtomicFlag
        ) throws
            -> ClientResponse
        {
            let address = ServerAddress.origin(of: request.url) ?? request.url.absoluteString
            let transfer = Transfer(limit: request.byteLimit, cancelled: cancelled)
            let millis = milliseconds(request.deadline)
            // No "Expect: 100-continue" round trip.
            let result = run(request, proxy: proxy, caFile: caFile, exchange: transfer, extraHeaders: ["Expect:"]) {
                easy in
                easy.set(CURLOPT_TIMEOUT_MS, max(1, millis))
                easy.set(CURLOPT_CONNECTTIMEOUT_MS, max(1, millis))
                if request.method == "HEAD" { easy.set(CURLOPT_NOBODY, 1) }
            }
            if transfer.tooLarge { throw ClientError.tooLarge(address: address, limit: request.byteLimit) }
            guard result == CURLE_OK else {
                if cancelled.isSet { throw CancellationError() }
                throw ClientError.unreachable(
                    address: address,
                    reason: reason(result, requestSent: transfer.requestSent, seconds: (millis + 999) / 1000))
            }
            return ClientResponse(status: transfer.status, headers: transfer.headers, body: transfer.body)
        }

        // MARK: What every transfer shares

        /// Runs `request` on a new easy handle with what every transfer shares — no cookie engine,
        /// no redirect followed, http and https only, no proxy but `proxy` (`""` turns off the
        /// environment's), the request's headers and body — and `configure`'s options on top.
        static func run(
            _ request: ClientRequest, proxy: String, caFile: String?, exchange: CurlExchange,
            extraHeaders: [String] = [],
            configure: (CurlEasy) -> Void
        ) -> CURLcode {
            // The pin outlives the handle: closing a connection in the cleanup may still read
            // from the peer (and OpenSSL verify what it sends). The handle is `transfer`'s own, so
            // it is gone when that returns.
            var pin: UnsafeMutablePointer<homeport_pin>?
            defer { homeport_pin_free(pin) }
            return transfer(request, proxy: proxy, caFile: caFile, exchange: exchange, extraHeaders, &pin, configure)
        }

        /// ``run(_:proxy:caFile:exchange:extraHeaders:configure:)`` on a handle of its own, with
        /// the pin it makes put in `pin`.
        private static func transfer(
            _ request: ClientRequest, proxy: String, caFile: String?, exchange: CurlExchange, _ extraHeaders: [String],
            _ pin: inout UnsafeMutablePointer<homeport_pin>?, _ configure: (CurlEasy) -> Void
        ) -> CURLcode {
            guard let easy = CurlEasy() else { return CURLE_FAILED_INIT }
            let headers = CurlHeaderList(request.headers.map { "\($0.key): \($0.value)" } + extraHeaders)
            easy.useHTTP(url: request.url.absoluteString, headers: headers, proxy: proxy)
            easy.set(CURLOPT_CUSTOMREQUEST, request.method)
            if let caFile { easy.set(CURLOPT_CAINFO, caFile) }
            easy.attach(exchange, abortable: true)
            if request.url.scheme?.lowercased() == "https" {
                let digest = request.pinnedKeySHA256
                let store = CAStores.store(for: caFile ?? CurlLibrary.defaultCAFile)
                if digest != nil || store != nil {
                    // Without the set-up in place, the transfer does not run: a half-set pin could
                    // leave libcurl's name check off with nothing checking the name in its place.
                    guard digest.map({ $0.count == 32 }) ?? true, let host = request.url.host else {
                        return CURLE_SSL_CERTPROBLEM
                    }
                    var bare =
                        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
                    // As libcurl: a name's trailing dot is not part of what the certificate lists.
                    if bare.hasSuffix(".") { bare.removeLast() }
                    pin =
                        digest.map { homeport_pin_new($0, bare, store?.pointer) }
                        ?? homeport_pin_new(nil, bare, store?.pointer)
                    guard let pin, homeport_curl_pin(easy.handle, pin) == CURLE_OK else { return CURLE_SSL_CERTPROBLEM }
                }
            }
            configure(easy)
            if exchange.shouldAbort { return CURLE_ABORTED_BY_CALLBACK }
            if let body = request.body { easy.post(body) }
            return withExtendedLifetime(headers) { easy.perform() }
        }

        /// A duration in whole milliseconds.
        static func milliseconds(_ duration: Duration) -> Int {
            Int(duration.components.seconds) * 1000 + Int(duration.components.attoseconds / 1_000_000_000_000_000)
        }

        /// Why a transfer failed, in words, saying whether the request had been sent.
        static func reason(_ result: CURLcode, requestSent: Bool, seconds: Int) -> String {
            switch result {
            case CURLE_OPERATION_TIMEDOUT: ClientError.deadlineReason(seconds: seconds, sent: requestSent)
            case CURLE_COULDNT_CONNECT: "connection refused"
            case CURLE_COULDNT_RESOLVE_HOST: "the name does not resolve"
            case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR: "TLS failed (certificate not trusted)"
            case CURLE_FAILED_INIT: "libcurl failed"
            case CURLE_SSL_CERTPROBLEM:
                "TLS could not be set up (the CAs, or the installation key's pin), so nothing was sent"
            default:
                CurlLibrary.describe(result) + (requestSent ? " (after the request was sent)" : "")
            }
        }
    }

    /// A flag set once from any thread.
    final class ManagedAtomicFlag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        func set() { lock.withLock { value = true } }
        var isSet: Bool { lock.withLock { value } }
    }
#endif
