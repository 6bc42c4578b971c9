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
    let router: Router
    let logger: Logger
    let accessLogger: Logger

    private let lock = NSLock()
    private var lifecycle = LifecycleState.created
    let inFlight = Atomic<Int>(0)
    let draining = Atomic<Bool>(false)

    private enum LifecycleState {
        case created
        case running(daemon: OpaquePointer, listen: ListenSocket)
        case stopped
    }

    /// Creates a server; nothing is bound until ``start()``.
    public init(configuration: HTTPServerConfiguration, router: Router, logger: Logger) {
        self.configuration = configuration
        self.router = router
        self.logger = logger.withLabel("homeport.http")
        self.accessLogger = logger.withLabel("homeport.access")
    }

    deinit {
        stopNow()
    }

    /// Binds the listen address and starts the worker threads.
    public func start() throws {
        let socket = try ListenSocket.open(host: configuration.host, port: configuration.port)
        // No MHD_USE_TURBO: libmicrohttpd calls it "slightly more experimental", and a worker crashed
        // once under the full test suite with it on.
        var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_USE_ITC.rawValue
        if socket.isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard
            let daemon = homeport_mhd_start(
                UInt32(flags), socket.descriptor, UInt32(max(1, configuration.workerThreads)),
                UInt32(max(1, configuration.idleTimeoutSeconds)), max(4096, configuration.maxHeaderBytes),
                UInt32(max(1, configuration.maxConnections)),
                accessHandlerCallback, context, requestCompletedCallback, context)
        else {
            close(socket.descriptor)
            throw HTTPServerError.daemonFailed
        }
        lock.withLock { lifecycle = .running(daemon: daemon, listen: socket) }
    }

    /// The port the server listens on (useful after binding port 0); 0 before ``start()``.
    public var port: Int {
        lock.withLock {
            if case .running(_, let listen) = lifecycle { return listen.port }
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
            if case .running(let daemon, _) = lifecycle { return daemon }
            return nil
        }
        guard let daemon else { return 0 }
        draining.store(true, ordering: .relaxed)
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
        let daemon: OpaquePointer? = lock.withLock {
            defer { lifecycle = .stopped }
            if case .running(let daemon, _) = lifecycle { return daemon }
            return nil
        }
        guard let daemon else { return }
        MHD_stop_daemon(daemon)
    }
}
