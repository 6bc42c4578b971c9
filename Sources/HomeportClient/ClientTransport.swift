import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One request as the client sends it: no cookie, cache or stored credential is ever added.
public struct ClientRequest: Sendable {
    /// The method.
    public var method: String
    /// The full URL.
    public var url: URL
    /// Header fields (the session token is added here, and only here, by the API client).
    public var headers: [String: String]
    /// The body.
    public var body: Data?
    /// Largest answer read; a larger one fails.
    public var byteLimit: Int
    /// Total time for the whole exchange (not an idle timeout).
    public var deadline: Duration
    /// The SHA-256 of an installation key (its raw public half, as the wire writes it) this address is known to
    /// hold: over HTTPS, a certificate whose public key is that key is accepted whatever its CA,
    /// name or address (a self-signed certificate the server made from the key); any other
    /// certificate is checked against the system's trust, as without it.
    public var pinnedKeySHA256: [UInt8]?

    /// Creates a request.
    public init(
        method: String = "GET", url: URL, headers: [String: String] = [:], body: Data? = nil, byteLimit: Int,
        deadline: Duration
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.byteLimit = byteLimit
        self.deadline = deadline
    }
}

/// An answer; redirects are returned as they are (3xx with `Location`), never followed.
public struct ClientResponse: Sendable {
    /// The status.
    public var status: Int
    /// Header fields, names lowercased; a field sent more than once holds its values joined with
    /// `", "` (so a second `Content-Type` cannot hide behind the first).
    public var headers: [String: String]
    /// The body.
    public var body: Data

    /// Creates a response.
    public init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Sends requests. The URLSession transport is the real one; tests may count or refuse.
public protocol ClientTransport: Sendable {
    /// Sends one request; throws ``ClientError/unreachable(address:reason:)`` or ``ClientError/tooLarge(address:limit:)``.
    func send(_ request: ClientRequest) async throws -> ClientResponse

    /// Opens a request whose answer is read as it arrives (server-sent events): returns at the
    /// response head, within the request's `deadline`; the body follows in chunks.
    func open(_ request: ClientRequest) async throws -> ClientStream
}

extension ClientTransport {
    /// A transport that cannot stream answers with the whole body at once, within the request's
    /// limits: enough for a short answer, not for a stream that lives long.
    public func open(_ request: ClientRequest) async throws -> ClientStream {
        ClientStream(response: try await send(request))
    }
}

/// A URLSession with no cookie store, no cache, no credential store and no proxy but one the
/// caller names, that never follows a redirect by itself, caps what it reads, and enforces a total
/// deadline per request.
public final class URLSessionTransport: NSObject, ClientTransport, URLSessionDataDelegate, @unchecked Sendable {
    private var session: URLSession?
    /// The proxy every request goes through, if any.
    let proxy: URL?
    private let lock = NSLock()
    private var tasks: [Int: TaskState] = [:]

    private final class TaskState {
        let limit: Int
        var pin: [UInt8]?
        var response: HTTPURLResponse?
        var data = Data()
        var tooLarge = false
        var timedOut = false
        var continuation: CheckedContinuation<ClientResponse, any Error>?
        init(limit: Int) { self.limit = limit }
    }

    /// Creates the transport; every request goes through `proxy` (an `http://HOST:PORT` URL) when
    /// one is given, and directly otherwise: no proxy is taken from the system or the environment.
    ///
    /// On Linux, Foundation's URLSession (libcurl underneath) does not implement proxy settings
    /// and libcurl reads `http_proxy`, `ALL_PROXY` and their kin from the environment: without a
    /// proxy, this transport sets `no_proxy=*` for the process so that none is ever used, and a
    /// `proxy` is not honoured there (``CurlTransport``, the default on Linux, honours it).
    public init(proxy: URL? = nil) {
        self.proxy = proxy
        #if os(Linux)
            if proxy == nil { _ = Self.noProxyFromEnvironment }
        #endif
        super.init()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: Self.configuration(proxy: proxy), delegate: self, delegateQueue: queue)
    }

    #if os(Linux)
        /// Sets `no_proxy=*` for the process, once: `setenv` while another thread reads the
        /// environment (a program being started, libcurl) is not safe, so it is not done again
        /// for every transport.
        private static let noProxyFromEnvironment: Void = {
            setenv("no_proxy", "*", 1)
            setenv("NO_PROXY", "*", 1)
        }()
    #endif

    /// An ephemeral configuration with no cookie store, cache or credential store, and no proxy
    /// but `proxy`.
    static func configuration(proxy: URL?) -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.connectionProxyDictionary = proxyDictionary(proxy)
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.urlCache = nil
        configuration.urlCredentialStorage = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        return configuration
    }

    deinit {
        session?.invalidateAndCancel()
    }

    /// The proxy settings for `proxy` (the keys' values are those of CFNetwork's
    /// `kCFNetworkProxiesHTTP*` and `kCFNetworkProxiesHTTPS*`); an empty dictionary means no proxy.
    private static func proxyDictionary(_ proxy: URL?) -> [AnyHashable: Any] {
        guard let proxy, let host = proxy.host else { return [:] }
        let port = proxy.port ?? 80
        return [
            "HTTPEnable": 1, "HTTPProxy": host, "HTTPPort": port, "HTTPSEnable": 1, "HTTPSProxy": host,
            "HTTPSPort": port,
        ]
    }

    /// Sends one request.
    public func send(_ request: ClientRequest) async throws -> ClientResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.httpBody = request.body
        urlRequest.httpShouldHandleCookies = false
        let seconds =
            request.deadline.timeInterval
        urlRequest.timeoutInterval = max(1, seconds)
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        guard let session else {
            throw ClientError.unreachable(address: request.url.absoluteString, reason: "no session")
        }
        let task = session.dataTask(with: urlRequest)
        let state = TaskState(limit: request.byteLimit)
        state.pin = request.pinnedKeySHA256
        let address = ServerAddress.origin(of: request.url) ?? request.url.absoluteString
        // The deadline ends the exchange at once; the task is stopped as soon as libcurl lets go.
        let timer = DispatchWorkItem { [weak self] in
            self?.finish(task, state, throwing: TransportFailure(error: nil, tooLarge: false, timedOut: true))
        }
        defer { timer.cancel() }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    lock.withLock {
                        state.continuation = continuation
                        tasks[task.taskIdentifier] = state
                    }
                    DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: timer)
                    task.resume()
                }
            } onCancel: {
                task.cancel()
            }
        } catch let failure as TransportFailure {
            if failure.tooLarge { throw ClientError.tooLarge(address: address, limit: request.byteLimit) }
            if failure.timedOut {
                throw ClientError.unreachable(
                    address: address,
                    reason: ClientError.deadlineReason(seconds: Int(seconds.rounded(.up)), sent: nil))
            }
            try Task.checkCancellation()
            let reason =
                (failure.error as? URLError).map { Self.describe($0, deadline: Int(seconds.rounded(.up))) }
                ?? "the connection failed"
            throw ClientError.unreachable(address: address, reason: reason)
        }
    }

    private static func describe(_ error: URLError, deadline: Int) -> String {
        switch error.code {
        case .cannotConnectToHost: "connection refused"
        // URLSession's own timeout, set to the request's deadline.
        case .timedOut: ClientError.deadlineReason(seconds: deadline, sent: nil)
        case .cannotFindHost, .dnsLookupFailed: "the name does not resolve"
        case .networkConnectionLost: "the connection was lost"
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
            .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot:
            "TLS failed (certificate not trusted)"
        default: error.localizedDescription
        }
    }

    // MARK: URLSessionDataDelegate

    /// Refuses every redirect: the 3xx goes back to the caller, who decides.
    public func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    #if canImport(Security)
        /// Accepts the certificate of an address whose installation key is pinned when it holds
        /// that key; anything else is the system's trust.
        public func urlSession(
            _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
            completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
        ) {
            let pin = lock.withLock { tasks[task.taskIdentifier]?.pin }
            let (disposition, credential) =
                ServerTrustPin.disposition(challenge, pin: pin) ?? (.performDefaultHandling, nil)
            completionHandler(disposition, credential)
        }
    #endif

    /// Keeps the response head.
    public func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        lock.withLock { tasks[dataTask.taskIdentifier]?.response = response as? HTTPURLResponse }
        completionHandler(.allow)
    }

    /// Accumulates the body up to the limit; past it, ends the exchange at once (what arrives
    /// afterwards, before the task stops, is dropped).
    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let overflowing: TaskState? = lock.withLock {
            guard let state = tasks[dataTask.taskIdentifier], !state.tooLarge else { return nil }
            if state.data.count + data.count > state.limit {
                state.tooLarge = true
                return state
            }
            state.data.append(data)
            return nil
        }
        if let overflowing {
            finish(dataTask, overflowing, throwing: TransportFailure(error: nil, tooLarge: true, timedOut: false))
        }
    }

    /// Ends an exchange before its task completes (its limit or its deadline): the caller hears
    /// at once, and the task is suspended and cancelled so libcurl stops reading.
    private func finish(_ task: URLSessionTask, _ state: TaskState, throwing failure: TransportFailure) {
        let continuation: CheckedContinuation<ClientResponse, any Error>? = lock.withLock {
            if failure.timedOut { state.timedOut = true }
            tasks[task.taskIdentifier] = nil
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(throwing: failure)
        task.suspend()
        task.cancel()
    }

    /// Finishes the exchange.
    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let state = lock.withLock({ tasks.removeValue(forKey: task.taskIdentifier) }) else { return }
        let (continuation, timedOut) = lock.withLock { () -> (CheckedContinuation<ClientResponse, any Error>?, Bool) in
            defer { state.continuation = nil }
            return (state.continuation, state.timedOut)
        }
        if let response = state.response, !state.tooLarge, !timedOut, error == nil || isRedirectRefusal(error, response)
        {
            var headers: [String: String] = [:]
            for (key, value) in response.allHeaderFields {
                if let name = key as? String, let text = value as? String { headers[name.lowercased()] = text }
            }
            continuation?.resume(
                returning: ClientResponse(status: response.statusCode, headers: headers, body: state.data))
        } else {
            continuation?.resume(throwing: TransportFailure(error: error, tooLarge: state.tooLarge, timedOut: timedOut))
        }
    }

    private func isRedirectRefusal(_ error: (any Error)?, _ response: HTTPURLResponse) -> Bool {
        (300..<400).contains(response.statusCode) && (error as? URLError)?.code != .cancelled
    }
}

/// A failure inside the transport, mapped to a ``ClientError`` by ``URLSessionTransport/send(_:)``.
struct TransportFailure: Error {
    var error: (any Error)?
    var tooLarge: Bool
    var timedOut: Bool
}
