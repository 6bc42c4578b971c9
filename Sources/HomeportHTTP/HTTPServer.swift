import CMicroHTTPD
import Foundation
import HomeportLogging
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An HTTP/1.1 server on libmicrohttpd: a pool of epoll worker threads calling a ``Router``.
///
/// Handlers run synchronously on the worker threads. The server enforces the limits of its
/// ``HTTPServerConfiguration``, writes one access-log line per request (method, path without
/// the query, status, bytes, time, peer — never a header, cookie or query value), and shuts
/// down gracefully: ``shutdown()`` stops accepting, lets requests in flight finish, then stops.
public final class HTTPServer: @unchecked Sendable {
    /// The configuration the server was created with.
    public let configuration: HTTPServerConfiguration
    let responder: any HTTPResponder
    let connections: ConnectionRegistry
    let logger: Logger
    let accessLogger: Logger

    private let lock = NSLock()
    private var lifecycle = LifecycleState.created
    let inFlight = Atomic<Int>(0)
    let draining = Atomic<Bool>(false)
    /// Responses being streamed, so that a shutdown can end them (a suspended connection must be
    /// resumed before libmicrohttpd stops).
    let liveStreams = Mutex<[ObjectIdentifier: HTTPBodyStream]>([:])

    private enum LifecycleState {
        case created
        case running(daemon: OpaquePointer, listen: ListenSocket, sweeper: any DispatchSourceTimer)
        case stopped
    }

    /// Creates a server answering with `responder` (a ``Router``); nothing is bound until ``start()``.
    public init(configuration: HTTPServerConfiguration, responder: any HTTPResponder, logger: Logger) {
        self.configuration = configuration
        self.responder = responder
        self.connections = ConnectionRegistry(configuration: configuration)
        self.logger = logger.withLabel("homeport.http")
        self.accessLogger = logger.withLabel("homeport.access")
    }

    deinit {
        stopNow()
    }

    /// Binds the listen address and starts the worker threads.
    public func start() throws {
        raiseDescriptorLimit()
        let socket = try ListenSocket.open(host: configuration.host, port: configuration.port)
        // No MHD_USE_TURBO: libmicrohttpd calls it "slightly more experimental", and a worker crashed
        // once under the full test suite with it on.
        var flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_USE_ITC.rawValue
            | MHD_ALLOW_SUSPEND_RESUME.rawValue
        if socket.isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard
            let daemon = homeport_mhd_start(
                UInt32(flags), socket.descriptor, UInt32(max(1, configuration.workerThreads)),
                UInt32(max(1, configuration.idleTimeoutSeconds)), max(4096, configuration.maxHeaderBytes),
                UInt32(max(1, configuration.maxConnections)), acceptPolicyCallback, accessHandlerCallback,
                requestCompletedCallback, notifyConnectionCallback, context)
        else {
            close(socket.descriptor)
            throw HTTPServerError.daemonFailed
        }
        // The deadlines are checked four times a second: a connection is cut at most that late.
        let sweeper = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "homeport.http.deadlines"))
        sweeper.schedule(deadline: .now() + .milliseconds(250), repeating: .milliseconds(250))
        sweeper.setEventHandler { [connections] in connections.sweep() }
        sweeper.resume()
        lock.withLock { lifecycle = .running(daemon: daemon, listen: socket, sweeper: sweeper) }
    }

    /// Raises this process's open-file limit to what the connection cap needs, as far as the
    /// hard limit allows; says so in the log when it cannot.
    private func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return }
        let wanted = rlim_t(configuration.maxConnections + 256)
        guard limit.rlim_cur < wanted else { return }
        limit.rlim_cur = min(wanted, limit.rlim_max)
        _ = setrlimit(RLIMIT_NOFILE_VALUE, &limit)
        if limit.rlim_cur < wanted {
            logger.warning(
                "the open-file limit is lower than --max-connections needs",
                metadata: ["limit": String(limit.rlim_cur), "needed": String(wanted)])
        }
    }

    /// The port the server listens on (useful after binding port 0); 0 before ``start()``.
    public var port: Int {
        lock.withLock {
            if case .running(_, let listen, _) = lifecycle { return listen.port }
            return 0
        }
    }

    /// Requests read but not yet fully answered.
    public var requestsInFlight: Int { inFlight.load(ordering: .relaxed) }

    /// Graceful stop: refuses new connections at once, waits up to the drain timeout for requests in
    /// flight (their responses carry `Connection: close`), then closes every connection.
    ///
    /// Returns the number of requests still in flight when the wait ended (0 in a clean drain).
    @discardableResult
    public func shutdown() -> Int {
        let daemon: OpaquePointer? = lock.withLock {
            if case .running(let daemon, _, _) = lifecycle { return daemon }
            return nil
        }
        guard let daemon else { return 0 }
        draining.store(true, ordering: .relaxed)
        // Streams never end by themselves: end them now, so they drain like any other answer.
        liveStreams.withLock { Array($0.values) }.forEach { $0.finish() }
        let listenDescriptor = MHD_quiesce_daemon(daemon)
        if listenDescriptor >= 0 { close(listenDescriptor) }
        let deadline = ContinuousClock.now.advanced(by: configuration.drainTimeout)
        while inFlight.load(ordering: .relaxed) > 0 && ContinuousClock.now < deadline {
            usleep(5_000)
        }
        let left = inFlight.load(ordering: .relaxed)
        stopNow()
        return left
    }

    /// Stops at once, closing every connection.
    private func stopNow() {
        let running: (OpaquePointer, any DispatchSourceTimer)? = lock.withLock {
            defer { lifecycle = .stopped }
            if case .running(let daemon, _, let sweeper) = lifecycle { return (daemon, sweeper) }
            return nil
        }
        guard let (daemon, sweeper) = running else { return }
        sweeper.cancel()
        MHD_stop_daemon(daemon)
    }
}

#if canImport(Glibc)
    private let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#else
    private let RLIMIT_NOFILE_VALUE = RLIMIT_NOFILE
#endif
