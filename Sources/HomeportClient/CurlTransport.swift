#if canImport(CCurl)
    import CCurl
    import Foundation

    /// The Linux transport: libcurl, with no cookie engine, no redirect following, a byte limit
    /// enforced while reading, and a total deadline (`CURLOPT_TIMEOUT_MS`). It reaches IPv6
    /// literals such as `http://[::1]:8080`, which Foundation's URLSession on Linux refuses.
    ///
    /// It never takes a proxy from the environment (`http_proxy`, `HTTPS_PROXY`, `ALL_PROXY`, …):
    /// a proxy sees every request and can answer an identity probe itself, so one is used only
    /// when the caller names it.
    public final class CurlTransport: ClientTransport {
        private static let initialized: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()
        let proxy: String

        /// Creates the transport; every request goes through `proxy` when one is given, and
        /// directly otherwise, whatever the environment says.
        public init(proxy: URL? = nil) {
            Self.initialized
            self.proxy = proxy?.absoluteString ?? ""
        }

        /// What one transfer accumulates; reached from the C callbacks through an unmanaged pointer.
        private final class Transfer {
            let limit: Int
            var body = Data()
            var headers: [String: String] = [:]
            var tooLarge = false
            /// Whether libcurl connected and was about to send the request.
            var requestSent = false
            let cancelled: ManagedAtomicFlag
            init(limit: Int, cancelled: ManagedAtomicFlag) {
                self.limit = limit
                self.cancelled = cancelled
            }
        }

        /// Sends one request on a worker thread. Cancelling the calling task returns at once (a
        /// race need not wait for its losers) and aborts the transfer in the background.
        public func send(_ request: ClientRequest) async throws -> ClientResponse {
            let cancelled = ManagedAtomicFlag()
            let outcome = ResumeOnce<ClientResponse>()
            let proxy = self.proxy
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    outcome.attach(continuation)
                    // Already cancelled: send nothing.
                    if cancelled.isSet { return }
                    // A thread of its own: a blocking transfer (a blackholed address) must not hold
                    // one of Dispatch's few pool threads and starve the rest of the race.
                    Thread.detachNewThread {
                        outcome.resume(
                            with: Result { try Self.perform(request, proxy: proxy, cancelled: cancelled) })
                    }
                }
            } onCancel: {
                cancelled.set()
                outcome.resume(with: .failure(CancellationError()))
            }
        }

        private static func perform(_ request: ClientRequest, proxy: String, cancelled: ManagedAtomicFlag) throws
            -> ClientResponse
        {
            let address = ServerAddress.origin(of: request.url) ?? request.url.absoluteString
            guard let curl = curl_easy_init() else {
                throw ClientError.unreachable(address: address, reason: "libcurl failed")
            }
            defer { curl_easy_cleanup(curl) }
            let transfer = Transfer(limit: request.byteLimit, cancelled: cancelled)
            let context = Unmanaged.passRetained(transfer)
            defer { context.release() }
            var headerList: UnsafeMutablePointer<curl_slist>?
            defer { curl_slist_free_all(headerList) }
            for (name, value) in request.headers {
                headerList = curl_slist_append(headerList, "\(name): \(value)")
            }
            // No "Expect: 100-continue" round trip.
            headerList = curl_slist_append(headerList, "Expect:")
            let millis =
                Int(request.deadline.components.seconds) * 1000
                + Int(request.deadline.components.attoseconds / 1_000_000_000_000_000)
            _ = homeport_curl_set_string(curl, CURLOPT_URL, request.url.absoluteString)
            _ = homeport_curl_set_string(curl, CURLOPT_CUSTOMREQUEST, request.method)
            _ = homeport_curl_set_long(curl, CURLOPT_FOLLOWLOCATION, 0)
            _ = homeport_curl_set_long(curl, CURLOPT_NOSIGNAL, 1)
            _ = homeport_curl_set_long(curl, CURLOPT_TIMEOUT_MS, max(1, millis))
            _ = homeport_curl_set_long(curl, CURLOPT_CONNECTTIMEOUT_MS, max(1, millis))
            _ = homeport_curl_set_long(curl, CURLOPT_NOPROGRESS, 0)
            _ = homeport_curl_set_string(curl, CURLOPT_PROTOCOLS_STR, "http,https")
            // "" turns off the environment's proxy variables; a named proxy takes every request.
            _ = homeport_curl_set_string(curl, CURLOPT_PROXY, proxy)
            _ = homeport_curl_set_string(curl, CURLOPT_NOPROXY, "")
            _ = homeport_curl_set_slist(curl, CURLOPT_HTTPHEADER, headerList)
            if request.method == "HEAD" { _ = homeport_curl_set_long(curl, CURLOPT_NOBODY, 1) }
            let body = request.body ?? Data()
            let bodyBytes = [UInt8](body)
            if request.body != nil {
                _ = homeport_curl_set_long(curl, CURLOPT_POSTFIELDSIZE, bodyBytes.count)
            }
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
            if cancelled.isSet { throw CancellationError() }
            let result = bodyBytes.withUnsafeBufferPointer { pointer -> CURLcode in
                if request.body != nil {
                    _ = homeport_curl_set_pointer(
                        curl, CURLOPT_POSTFIELDS,
                        UnsafeMutableRawPointer(mutating: pointer.baseAddress ?? UnsafePointer(bitPattern: 1)!))
                }
                return curl_easy_perform(curl)
            }
            if transfer.tooLarge { throw ClientError.tooLarge(address: address, limit: request.byteLimit) }
            guard result == CURLE_OK else {
                if cancelled.isSet { throw CancellationError() }
                let seconds = (millis + 999) / 1000
                let reason: String =
                    switch result {
                    case CURLE_OPERATION_TIMEDOUT where transfer.requestSent:
                        "no answer within \(seconds) s after the request was sent"
                    case CURLE_OPERATION_TIMEDOUT: "no connection within \(seconds) s; nothing was sent"
                    case CURLE_COULDNT_CONNECT: "connection refused"
                    case CURLE_COULDNT_RESOLVE_HOST: "the name does not resolve"
                    case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR: "TLS failed (certificate not trusted)"
                    default:
                        String(cString: curl_easy_strerror(result))
                            + (transfer.requestSent ? " (after the request was sent)" : "")
                    }
                throw ClientError.unreachable(address: address, reason: reason)
            }
            return ClientResponse(status: homeport_curl_status(curl), headers: transfer.headers, body: transfer.body)
        }

        private static let writeCallback: curl_write_callback = { data, size, count, context in
            guard let data, let context else { return 0 }
            let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
            let length = size * count
            if transfer.body.count + length > transfer.limit {
                transfer.tooLarge = true
                return 0  // aborts the transfer
            }
            data.withMemoryRebound(to: UInt8.self, capacity: length) { transfer.body.append($0, count: length) }
            return length
        }

        private static let headerCallback: curl_write_callback = { data, size, count, context in
            guard let data, let context else { return 0 }
            let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
            let length = size * count
            let line = String(
                decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self
            ).trimmingCharacters(in: .whitespacesAndNewlines)
            if line.hasPrefix("HTTP/") {
                transfer.headers = [:]  // a new response head (after 100 Continue)
            } else if let colon = line.firstIndex(of: ":") {
                let name = line[..<colon].lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                // A field sent twice keeps both values, so the second cannot hide behind the first.
                transfer.headers[name] = transfer.headers[name].map { $0 + ", " + value } ?? value
            }
            return length
        }

        private static let prereqCallback:
            @convention(c) (
                UnsafeMutableRawPointer?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int32, Int32
            ) -> Int32 = { context, _, _, _, _ in
                if let context { Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue().requestSent = true }
                return CURL_PREREQFUNC_OK
            }

        private static let progressCallback: curl_xferinfo_callback = { context, _, _, _, _ in
            guard let context else { return 0 }
            return Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue().cancelled.isSet ? 1 : 0
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
