import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLSessionTransport {
    /// Opens a streaming answer: a session of its own (ephemeral, no cookies, cache or stored
    /// credentials, the same proxy rule) whose delegate refuses every redirect and hands the body
    /// over as it arrives. The request's `deadline` bounds the time to the response head; a body
    /// that runs more than the request's `byteLimit` ahead of its reader fails the stream (a
    /// delegate queue must not wait).
    public func open(_ request: ClientRequest) async throws -> ClientStream {
        let opener = StreamOpener(request: request, proxy: proxy)
        return try await opener.open()
    }
}

/// One streaming exchange over URLSession.
final class StreamOpener: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let request: ClientRequest
    private let channel: ChunkChannel
    private let head = ResumeOnce<ClientStream>()
    private let lock = NSLock()
    private var session: URLSession?
    private var headDelivered = false
    private var overrun = false
    private var timedOut = false
    private let address: String

    init(request: ClientRequest, proxy: URL?) {
        self.request = request
        self.channel = ChunkChannel(limit: request.byteLimit)
        self.address = ServerAddress.origin(of: request.url) ?? request.url.absoluteString
        super.init()
        let configuration = URLSessionTransport.configuration(proxy: proxy)
        // An idle timeout only; the reader keeps its own (heartbeats arrive every 15 s).
        configuration.timeoutIntervalForRequest = 24 * 3600
        configuration.timeoutIntervalForResource = 7 * 24 * 3600
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
    }

    func open() async throws -> ClientStream {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.httpShouldHandleCookies = false
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        guard let session else { throw ClientError.unreachable(address: address, reason: "no session") }
        let task = session.dataTask(with: urlRequest)
        channel.whenCancelled { [weak self] in
            task.cancel()
            self?.session?.invalidateAndCancel()
        }
        let seconds =
            request.deadline.timeInterval
        let timer = DispatchWorkItem { [weak self] in
            guard let self else { return }
            let late = lock.withLock { () -> Bool in
                guard !headDelivered else { return false }
                timedOut = true
                return true
            }
            if late { task.cancel() }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: timer)
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                head.attach(continuation)
                task.resume()
            }
        } onCancel: {
            channel.cancel()
            head.resume(with: .failure(CancellationError()))
        }
    }

    #if canImport(Security)
        /// Accepts the certificate of an address whose installation key is pinned when it holds
        /// that key; anything else is the system's trust.
        func urlSession(
            _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
            completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
        ) {
            let (disposition, credential) =
                ServerTrustPin.disposition(challenge, pin: request.pinnedKeySHA256) ?? (.performDefaultHandling, nil)
            completionHandler(disposition, credential)
        }
    #endif

    /// Refuses every redirect: the 3xx goes back to the caller, who decides.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    /// The head: the stream is handed to the caller.
    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        deliverHead(response as? HTTPURLResponse)
        completionHandler(.allow)
    }

    /// A chunk of the body; one the reader is too far behind to take fails the stream.
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard !channel.offer(data) else { return }
        if !channel.isCancelled {
            lock.withLock { overrun = true }
            dataTask.cancel()
        }
    }

    /// The end of the exchange.
    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let response = task.response as? HTTPURLResponse
        let (overrun, timedOut, delivered) = lock.withLock { (self.overrun, self.timedOut, headDelivered) }
        var failure: ClientError?
        if overrun {
            failure = .tooLarge(address: address, limit: request.byteLimit)
        } else if timedOut {
            failure = .unreachable(
                address: address,
                reason: ClientError.deadlineReason(
                    seconds: Int(request.deadline.components.seconds)
                        + (request.deadline.components.attoseconds > 0 ? 1 : 0),
                    sent: nil))
        } else if let error {
            if !delivered, let response, (300..<400).contains(response.statusCode) {
                // A refused redirect: the 3xx is the answer.
                deliverHead(response)
            } else {
                failure = .unreachable(
                    address: address,
                    reason: delivered
                        ? "the connection dropped (\(error.localizedDescription))" : error.localizedDescription)
            }
        } else {
            deliverHead(response)
        }
        if let failure {
            head.resume(with: .failure(failure))
            channel.finish(failure)
        } else {
            channel.finish(nil)
        }
        session.finishTasksAndInvalidate()
    }

    private func deliverHead(_ response: HTTPURLResponse?) {
        guard let response else { return }
        let first = lock.withLock { () -> Bool in
            guard !headDelivered else { return false }
            headDelivered = true
            return true
        }
        guard first else { return }
        var headers: [String: String] = [:]
        for (key, value) in response.allHeaderFields {
            if let name = key as? String, let text = value as? String { headers[name.lowercased()] = text }
        }
        head.resume(with: .success(ClientStream(status: response.statusCode, headers: headers, channel: channel)))
    }
}
