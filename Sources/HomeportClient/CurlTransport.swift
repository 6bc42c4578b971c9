#if canImport(CCurl)
    import CCurl
    import Foundation
    import HomeportCrypto

    /// The Linux transport: libcurl, with no cookie engine, no redirect following, a byte limit
    /// enforced while reading, and a total deadline (`CURLOPT_TIMEOUT_MS`). It reaches IPv6
    /// literals such as `http://[::1]:8080`, which Foundation's URLSession on Linux refuses.
    ///
    /// It never takes a proxy from the environment (`http_proxy`, `HTTPS_PROXY`, `ALL_PROXY`, …):
    /// a proxy sees every request and can answer an identity probe itself, so one is used only
    /// when the caller names it.
    public final class CurlTransport: ClientTransport {
        private static let initialized: Void = {
            // Before libcurl initializes OpenSSL, which would otherwise free its state at exit
            // under a transfer still running on another thread.
            CryptoLibrary.keepStateAtExit()
            curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        }()

        /// Sets up libcurl and OpenSSL for the process. Call it first thing in `main` of a program
        /// that exits while transfers may still run (a race's losing addresses are aborted in the
        /// background, not waited for): OpenSSL then keeps its state at exit instead of freeing it
        /// under a thread still in a TLS handshake. Creating a transport does the same, but too late
        /// when something else used OpenSSL first.
        public static func prepareProcess() {
            initialized
        }
        let proxy: String
        /// The only CA file trusted instead of the system's; `nil` trusts the system's.
        let caFile: String?

        /// Creates the transport; every request goes through `proxy` when one is given, and
        /// directly otherwise, whatever the environment says. `certificateAuthorities` replaces the
        /// system's trusted CAs with one PEM file (a test's own CA; never set by default).
        public init(proxy: URL? = nil, certificateAuthorities caFile: String? = nil) {
            Self.initialized
            self.proxy = proxy?.absoluteString ?? ""
            self.caFile = caFile
        }

        /// What one buffered transfer accumulates.
        private final class Transfer: CurlExchange {
            let limit: Int
            var body = Data()
            var tooLarge = false
            let cancelled: ManagedAtomicFlag
            init(limit: Int, cancelled: ManagedAtomicFlag) {
                self.limit = limit
                self.cancelled = cancelled
            }

            override func received(_ bytes: UnsafeRawBufferPointer) -> Bool {
                guard body.count + bytes.count <= limit else {
                    tooLarge = true
                    return false
                }
                body.append(contentsOf: bytes)
                return true
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
                curl in
                _ = homeport_curl_set_long(curl, CURLOPT_TIMEOUT_MS, max(1, millis))
                _ = homeport_curl_set_long(curl, CURLOPT_CONNECTTIMEOUT_MS, max(1, millis))
                if request.method == "HEAD" { _ = homeport_curl_set_long(curl, CURLOPT_NOBODY, 1) }
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

        /// What a transfer's C callbacks reach through an unmanaged pointer: the response head as
        /// it arrives and whether the request went out; subclasses keep the body their way.
        class CurlExchange {
            /// The easy handle, while the transfer runs.
            var curl: UnsafeMutableRawPointer?
            /// Header fields of the latest response head, names lowercased; a field sent twice
            /// keeps both values, so the second cannot hide behind the first.
            var headers: [String: String] = [:]
            /// Whether libcurl connected and was about to send the request.
            var requestSent = false

            /// The status of the latest response head, once it ended.
            var status = 0

            /// A final response head (not 1xx) ended.
            func headEnded() {}

            /// A chunk of the body; false aborts the transfer.
            func received(_ bytes: UnsafeRawBufferPointer) -> Bool { true }

            /// Whether to abort now (asked about once a second even when nothing arrives).
            var shouldAbort: Bool { false }
        }

        /// Runs `request` on a new easy handle with what every transfer shares — no cookie engine,
        /// no redirect followed, http and https only, no proxy but `proxy` (`""` turns off the
        /// environment's), the request's headers and body — and `configure`'s options on top.
        static func run(
            _ request: ClientRequest, proxy: String, caFile: String?, exchange: CurlExchange,
            extraHeaders: [String] = [],
            configure: (UnsafeMutableRawPointer) -> Void
        ) -> CURLcode {
            guard let curl = curl_easy_init() else { return CURLE_FAILED_INIT }
            // The pin outlives the handle: closing a connection in the cleanup may still read
            // from the peer (and OpenSSL verify what it sends).
            var pin: UnsafeMutablePointer<homeport_pin>?
            defer {
                curl_easy_cleanup(curl)
                homeport_pin_free(pin)
            }
            exchange.curl = curl
            defer { exchange.curl = nil }
            let context = Unmanaged.passRetained(exchange)
            defer { context.release() }
            var headerList: UnsafeMutablePointer<curl_slist>?
            defer { curl_slist_free_all(headerList) }
            for line in request.headers.map({ "\($0.key): \($0.value)" }) + extraHeaders {
                headerList = curl_slist_append(headerList, line)
            }
            _ = homeport_curl_set_string(curl, CURLOPT_URL, request.url.absoluteString)
            _ = homeport_curl_set_string(curl, CURLOPT_CUSTOMREQUEST, request.method)
            _ = homeport_curl_set_long(curl, CURLOPT_FOLLOWLOCATION, 0)
            _ = homeport_curl_set_long(curl, CURLOPT_NOSIGNAL, 1)
            _ = homeport_curl_set_long(curl, CURLOPT_NOPROGRESS, 0)
            _ = homeport_curl_set_string(curl, CURLOPT_PROTOCOLS_STR, "http,https")
            _ = homeport_curl_set_string(curl, CURLOPT_PROXY, proxy)
            _ = homeport_curl_set_string(curl, CURLOPT_NOPROXY, "")
            if let caFile { _ = homeport_curl_set_string(curl, CURLOPT_CAINFO, caFile) }
            _ = homeport_curl_set_slist(curl, CURLOPT_HTTPHEADER, headerList)
            let opaque = context.toOpaque()
            _ = homeport_curl_set_pointer(curl, CURLOPT_WRITEDATA, opaque)
            _ = homeport_curl_set_pointer(curl, CURLOPT_HEADERDATA, opaque)
            _ = homeport_curl_set_pointer(curl, CURLOPT_XFERINFODATA, opaque)
            _ = homeport_curl_set_pointer(curl, CURLOPT_PREREQDATA, opaque)
            // A function pointer passed where libcurl reads one: the shim has no typed setter for it.
            _ = homeport_curl_set_pointer(
                curl, CURLOPT_PREREQFUNCTION, unsafeBitCast(prereqCallback, to: UnsafeMutableRawPointer.self))
            _ = homeport_curl_set_write_function(curl, writeCallback)
            _ = homeport_curl_set_header_function(curl, headerCallback)
            _ = homeport_curl_set_progress_function(curl, progressCallback)
            if request.url.scheme?.lowercased() == "https" {
                let digest = request.pinnedKeySHA256
                let store = CAStores.store(for: caFile ?? CAStores.defaultFile)
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
                    guard let pin, homeport_curl_pin(curl, pin) == CURLE_OK else { return CURLE_SSL_CERTPROBLEM }
                }
            }
            configure(curl)
            if exchange.shouldAbort { return CURLE_ABORTED_BY_CALLBACK }
            let body = [UInt8](request.body ?? Data())
            return body.withUnsafeBufferPointer { pointer -> CURLcode in
                if request.body != nil {
                    _ = homeport_curl_set_long(curl, CURLOPT_POSTFIELDSIZE, body.count)
                    _ = homeport_curl_set_pointer(
                        curl, CURLOPT_POSTFIELDS,
                        UnsafeMutableRawPointer(mutating: pointer.baseAddress ?? UnsafePointer(bitPattern: 1)!))
                }
                return curl_easy_perform(curl)
            }
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
                String(cString: curl_easy_strerror(result)) + (requestSent ? " (after the request was sent)" : "")
            }
        }

        private static let writeCallback: curl_write_callback = { data, size, count, context in
            guard let data, let context else { return 0 }
            let exchange = Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue()
            let length = size * count
            return exchange.received(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
        }

        private static let headerCallback: curl_write_callback = { data, size, count, context in
            guard let data, let context else { return 0 }
            let exchange = Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue()
            let length = size * count
            let line = String(
                decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self
            ).trimmingCharacters(in: .whitespacesAndNewlines)
            if line.hasPrefix("HTTP/") {
                exchange.headers = [:]  // a new response head (after 100 Continue)
            } else if line.isEmpty, let curl = exchange.curl {
                exchange.status = homeport_curl_status(curl)
                if exchange.status >= 200 { exchange.headEnded() }
            } else if let colon = line.firstIndex(of: ":") {
                let name = line[..<colon].lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                exchange.headers[name] = exchange.headers[name].map { $0 + ", " + value } ?? value
            }
            return length
        }

        private static let prereqCallback:
            @convention(c) (
                UnsafeMutableRawPointer?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int32, Int32
            ) -> Int32 = { context, _, _, _, _ in
                if let context { Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().requestSent = true }
                return CURL_PREREQFUNC_OK
            }

        private static let progressCallback: curl_xferinfo_callback = { context, _, _, _, _ in
            guard let context else { return 0 }
            return Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().shouldAbort ? 1 : 0
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
