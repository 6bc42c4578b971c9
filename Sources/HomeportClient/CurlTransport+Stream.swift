#if canImport(CCurl)
    import CCurl
    import Foundation

    extension CurlTransport {
        /// Opens a streaming answer on a thread of its own: returns once the response head has
        /// arrived (within the request's `deadline`, which bounds the connection and the head, not
        /// the body), then hands the body over chunk by chunk, waiting while more than the
        /// request's `byteLimit` is unread. The same rules as ``send(_:)`` otherwise: no cookie
        /// engine, no redirect followed, no proxy but the one named.
        public func open(_ request: ClientRequest) async throws -> ClientStream {
            let channel = ChunkChannel(limit: request.byteLimit)
            let head = ResumeOnce<ClientStream>()
            let proxy = self.proxy
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    head.attach(continuation)
                    if channel.isCancelled { return }
                    Thread.detachNewThread {
                        Self.stream(request, proxy: proxy, channel: channel, head: head)
                    }
                }
            } onCancel: {
                channel.cancel()
                head.resume(with: .failure(CancellationError()))
            }
        }

        /// What one streaming transfer holds; reached from the C callbacks through an unmanaged pointer.
        private final class StreamTransfer {
            let channel: ChunkChannel
            let head: ResumeOnce<ClientStream>
            let headDeadline: ContinuousClock.Instant
            var curl: UnsafeMutableRawPointer?
            var headers: [String: String] = [:]
            var headDelivered = false
            var requestSent = false
            var timedOut = false

            init(channel: ChunkChannel, head: ResumeOnce<ClientStream>, headDeadline: ContinuousClock.Instant) {
                self.channel = channel
                self.head = head
                self.headDeadline = headDeadline
            }

            func deliverHead() {
                guard !headDelivered, let curl else { return }
                headDelivered = true
                head.resume(
                    with: .success(
                        ClientStream(status: homeport_curl_status(curl), headers: headers, channel: channel)))
            }
        }

        private static func stream(
            _ request: ClientRequest, proxy: String, channel: ChunkChannel, head: ResumeOnce<ClientStream>
        ) {
            let address = ServerAddress.origin(of: request.url) ?? request.url.absoluteString
            guard let curl = curl_easy_init() else {
                head.resume(with: .failure(ClientError.unreachable(address: address, reason: "libcurl failed")))
                return
            }
            defer { curl_easy_cleanup(curl) }
            let transfer = StreamTransfer(
                channel: channel, head: head, headDeadline: ContinuousClock.now + request.deadline)
            transfer.curl = curl
            let context = Unmanaged.passRetained(transfer)
            defer { context.release() }
            var headerList: UnsafeMutablePointer<curl_slist>?
            defer { curl_slist_free_all(headerList) }
            for (name, value) in request.headers {
                headerList = curl_slist_append(headerList, "\(name): \(value)")
            }
            let millis =
                Int(request.deadline.components.seconds) * 1000
                + Int(request.deadline.components.attoseconds / 1_000_000_000_000_000)
            _ = homeport_curl_set_string(curl, CURLOPT_URL, request.url.absoluteString)
            _ = homeport_curl_set_string(curl, CURLOPT_CUSTOMREQUEST, request.method)
            _ = homeport_curl_set_long(curl, CURLOPT_FOLLOWLOCATION, 0)
            _ = homeport_curl_set_long(curl, CURLOPT_NOSIGNAL, 1)
            // The deadline bounds the connection and the head; the body may last (the reader decides).
            _ = homeport_curl_set_long(curl, CURLOPT_CONNECTTIMEOUT_MS, max(1, millis))
            _ = homeport_curl_set_long(curl, CURLOPT_NOPROGRESS, 0)
            _ = homeport_curl_set_long(curl, CURLOPT_TCP_KEEPALIVE, 1)
            _ = homeport_curl_set_string(curl, CURLOPT_PROTOCOLS_STR, "http,https")
            _ = homeport_curl_set_string(curl, CURLOPT_PROXY, proxy)
            _ = homeport_curl_set_string(curl, CURLOPT_NOPROXY, "")
            _ = homeport_curl_set_slist(curl, CURLOPT_HTTPHEADER, headerList)
            let opaque = context.toOpaque()
            _ = homeport_curl_set_pointer(curl, CURLOPT_WRITEDATA, opaque)
            _ = homeport_curl_set_pointer(curl, CURLOPT_HEADERDATA, opaque)
            _ = homeport_curl_set_pointer(curl, CURLOPT_XFERINFODATA, opaque)
            _ = homeport_curl_set_pointer(curl, CURLOPT_PREREQDATA, opaque)
            _ = homeport_curl_set_pointer(
                curl, CURLOPT_PREREQFUNCTION, unsafeBitCast(streamPrereqCallback, to: UnsafeMutableRawPointer.self))
            _ = homeport_curl_set_write_function(curl, streamWriteCallback)
            _ = homeport_curl_set_header_function(curl, streamHeaderCallback)
            _ = homeport_curl_set_progress_function(curl, streamProgressCallback)
            if channel.isCancelled { return }
            let result = curl_easy_perform(curl)
            if result == CURLE_OK {
                transfer.deliverHead()
                channel.finish(nil)
                return
            }
            if channel.isCancelled {
                head.resume(with: .failure(CancellationError()))
                channel.finish(CancellationError())
                return
            }
            let seconds = (millis + 999) / 1000
            let reason: String =
                switch result {
                case _ where transfer.headDelivered:
                    "the connection dropped (\(String(cString: curl_easy_strerror(result))))"
                case _ where transfer.timedOut, CURLE_OPERATION_TIMEDOUT:
                    transfer.requestSent
                        ? "no answer within \(seconds) s after the request was sent"
                        : "no connection within \(seconds) s; nothing was sent"
                case CURLE_COULDNT_CONNECT: "connection refused"
                case CURLE_COULDNT_RESOLVE_HOST: "the name does not resolve"
                case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR: "TLS failed (certificate not trusted)"
                default:
                    String(cString: curl_easy_strerror(result))
                        + (transfer.requestSent ? " (after the request was sent)" : "")
                }
            let error = ClientError.unreachable(address: address, reason: reason)
            head.resume(with: .failure(error))
            channel.finish(error)
        }

        private static let streamWriteCallback: curl_write_callback = { data, size, count, context in
            guard let data, let context else { return 0 }
            let transfer = Unmanaged<StreamTransfer>.fromOpaque(context).takeUnretainedValue()
            transfer.deliverHead()
            let length = size * count
            let chunk = data.withMemoryRebound(to: UInt8.self, capacity: length) { Data(bytes: $0, count: length) }
            return transfer.channel.push(chunk) ? length : 0
        }

        private static let streamHeaderCallback: curl_write_callback = { data, size, count, context in
            guard let data, let context else { return 0 }
            let transfer = Unmanaged<StreamTransfer>.fromOpaque(context).takeUnretainedValue()
            let length = size * count
            let line = String(
                decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self
            ).trimmingCharacters(in: .whitespacesAndNewlines)
            if line.hasPrefix("HTTP/") {
                transfer.headers = [:]
            } else if line.isEmpty {
                // The end of a head: a final one (not 1xx) is the answer.
                if let curl = transfer.curl, homeport_curl_status(curl) >= 200 { transfer.deliverHead() }
            } else if let colon = line.firstIndex(of: ":") {
                let name = line[..<colon].lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                transfer.headers[name] = transfer.headers[name].map { $0 + ", " + value } ?? value
            }
            return length
        }

        private static let streamPrereqCallback:
            @convention(c) (
                UnsafeMutableRawPointer?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int32, Int32
            ) -> Int32 = { context, _, _, _, _ in
                if let context {
                    Unmanaged<StreamTransfer>.fromOpaque(context).takeUnretainedValue().requestSent = true
                }
                return CURL_PREREQFUNC_OK
            }

        /// Called about once a second even when nothing arrives: aborts when the reader cancelled,
        /// or when the head is late.
        private static let streamProgressCallback: curl_xferinfo_callback = { context, _, _, _, _ in
            guard let context else { return 0 }
            let transfer = Unmanaged<StreamTransfer>.fromOpaque(context).takeUnretainedValue()
            if transfer.channel.isCancelled { return 1 }
            if !transfer.headDelivered && ContinuousClock.now > transfer.headDeadline {
                transfer.timedOut = true
                return 1
            }
            return 0
        }
    }
#endif
