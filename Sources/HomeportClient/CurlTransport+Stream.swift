#if canImport(CCurl)
    import CCurl
    import Foundation
    import HomeportCurl

    extension CurlTransport {
        /// Opens a streaming answer on a thread of its own: returns once the response head has
        /// arrived (within the request's `deadline`, which bounds the connection and the head, not
        /// the body), then hands the body over chunk by chunk, waiting while more than the
        /// request's `byteLimit` is unread. The same rules as ``send(_:)`` otherwise: no cookie
        /// engine, no redirect followed, no proxy but the one named.
        public func open(_ request: ClientRequest) async throws -> ClientStream {
            let channel = ChunkChannel(limit: request.byteLimit)
            let head = ResumeOnce<ClientStream>()
            let (proxy, caFile) = (self.proxy, self.caFile)
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    head.attach(continuation)
                    if channel.isCancelled { return }
                    Thread.detachNewThread {
                        Self.stream(request, proxy: proxy, caFile: caFile, channel: channel, head: head)
                    }
                }
            } onCancel: {
                channel.cancel()
                head.resume(with: .failure(CancellationError()))
            }
        }

        /// What one streaming transfer holds.
        private final class StreamTransfer: CurlExchange {
            let channel: ChunkChannel
            let head: ResumeOnce<ClientStream>
            let headDeadline: ContinuousClock.Instant
            var headDelivered = false
            var timedOut = false

            init(channel: ChunkChannel, head: ResumeOnce<ClientStream>, headDeadline: ContinuousClock.Instant) {
                self.channel = channel
                self.head = head
                self.headDeadline = headDeadline
                // The channel bounds what is unread; the exchange keeps no body of its own.
                super.init(limit: 0)
            }

            /// Hands the stream to the caller, once.
            func deliverHead() {
                guard !headDelivered else { return }
                headDelivered = true
                head.resume(with: .success(ClientStream(status: status, headers: headers, channel: channel)))
            }

            override func headEnded() { deliverHead() }

            override func received(_ bytes: UnsafeRawBufferPointer) -> Bool {
                deliverHead()
                return channel.push(Data(bytes))
            }

            /// The reader cancelled, or the head is late.
            override var shouldAbort: Bool {
                if channel.isCancelled { return true }
                if !headDelivered && ContinuousClock.now > headDeadline {
                    timedOut = true
                    return true
                }
                return false
            }
        }

        private static func stream(
            _ request: ClientRequest, proxy: String, caFile: String?, channel: ChunkChannel,
            head: ResumeOnce<ClientStream>
        ) {
            let address = ServerAddress.origin(of: request.url) ?? request.url.absoluteString
            let transfer = StreamTransfer(
                channel: channel, head: head, headDeadline: ContinuousClock.now + request.deadline)
            let millis = milliseconds(request.deadline)
            let result = run(request, proxy: proxy, caFile: caFile, exchange: transfer) { easy in
                // The deadline bounds the connection and the head; the body may last (the reader decides).
                easy.set(CURLOPT_CONNECTTIMEOUT_MS, max(1, millis))
                easy.set(CURLOPT_TCP_KEEPALIVE, 1)
            }
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
            let reason =
                transfer.headDelivered
                ? "the connection dropped (\(CurlLibrary.describe(result)))"
                : reason(
                    transfer.timedOut ? CURLE_OPERATION_TIMEDOUT : result, requestSent: transfer.requestSent,
                    seconds: seconds)
            let error = ClientError.unreachable(address: address, reason: reason)
            head.resume(with: .failure(error))
            channel.finish(error)
        }
    }
#endif
