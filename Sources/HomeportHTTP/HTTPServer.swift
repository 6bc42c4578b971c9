import CMicroHTTPD
import Foundation
import HomeportLifecycle
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
package final class HTTPServer: @unchecked Sendable {
    /// The configuration the server was created with.
    package let configuration: HTTPServerConfiguration
    /// What answers the requests (a ``Router``).
    package let responder: any HTTPResponder
    let connections: ConnectionRegistry
    let logger: Logger
    let accessLogger: Logger

    private let lock = NSLock()
    private var lifecycle = LifecycleState.created
    let inFlight = Atomic<Int>(0)
    let draining = Atomic<Bool>(false)
    /// Connections handed to libmicrohttpd from the listen backlog at a stop, not yet set up.
    let adoptions = Atomic<Int>(0)
    /// Responses being streamed, so that a shutdown can end them (a suspended connection must be
    /// resumed before libmicrohttpd stops).
    let liveStreams = Mutex<[ObjectIdentifier: HTTPBodyStream]>([:])
    /// The threads that run ``HandlerPlacement/pool`` routes.
    let pool: WorkPool
    /// Answers by route group and status, and their latency (for `/metrics`).
    package let metrics = HTTPMetrics()
    /// Requests whose work is queued or running on the pool, their connections suspended; `nil`
    /// once the server stops (no connection may be suspended after that).
    let offloads = Mutex<[ObjectIdentifier: OffloadedRequest]?>([:])

    private enum LifecycleState {
        case created
        case running(daemon: OpaquePointer, listen: ListenSocket, sweeper: RepeatingTask)
        case stopped
    }

    /// The certificate and key of the running daemon, kept while it runs.
    private var tlsMaterial: TLSMaterial?
    /// Daemons replaced by a certificate reload, finishing the connections they hold.
    private var retired: [(daemon: OpaquePointer, material: TLSMaterial?)] = []

    /// A socket bound before the server starts (port 0), which ``start()`` listens on.
    private let bound: BoundListener?

    /// Creates a server answering with `responder` (a ``Router``); nothing is bound until ``start()``,
    /// unless `bound` is a socket bound already.
    package init(
        configuration: HTTPServerConfiguration, responder: any HTTPResponder, logger: Logger,
        bound: BoundListener? = nil
    ) {
        self.bound = bound
        self.configuration = configuration
        self.responder = responder
        self.connections = ConnectionRegistry(configuration: configuration)
        self.pool = WorkPool(threads: configuration.poolThreads, queueLimit: configuration.poolQueueLimit)
        self.logger = logger.withLabel("homeport.http")
        self.accessLogger = Logger(
            label: "homeport.access", minimumLevel: logger.minimumLevel,
            sink: configuration.accessLogDelay.map { BufferedLogSink(logger.sink, delay: $0) } ?? logger.sink)
    }

    deinit {
        stopNow()
    }

    /// Binds the listen address and starts the worker threads.
    package func start() throws {
        if configuration.tls != nil && homeport_mhd_has_tls() == 0 { throw HTTPServerError.tlsUnavailable }
        raiseDescriptorLimit()
        let socket =
            try bound?.take() ?? configuration.unixSocketPath.map { try ListenSocket.openUnix(path: $0) }
            ?? ListenSocket.open(host: configuration.host, port: configuration.port)
        let material = configuration.tls.map(TLSMaterial.init)
        guard let daemon = startDaemon(on: socket.descriptor, ipv6: socket.isIPv6, tls: material) else {
            close(socket.descriptor)
            throw configuration.tls == nil ? HTTPServerError.daemonFailed : HTTPServerError.tlsRefused
        }
        // The deadlines are checked four times a second: a connection is cut at most that late.
        let sweeper = RepeatingTask(
            "homeport.http.deadlines", after: .milliseconds(250), every: .milliseconds(250), failed: { _ in }
        ) { [connections] in connections.sweep() }
        sweeper.start()
        pool.start()
        lock.withLock {
            lifecycle = .running(daemon: daemon, listen: socket, sweeper: sweeper)
            tlsMaterial = material
        }
    }

    /// A libmicrohttpd daemon on `descriptor` with this server's callbacks, serving HTTPS with
    /// `tls`; `nil` when it will not start.
    private func startDaemon(on descriptor: Int32, ipv6: Bool, tls: TLSMaterial?) -> OpaquePointer? {
        // No MHD_USE_TURBO: libmicrohttpd calls it "slightly more experimental", and a worker crashed
        // once under the full test suite with it on.
        var flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_USE_ITC.rawValue
            | MHD_ALLOW_SUSPEND_RESUME.rawValue
        if ipv6 { flags |= MHD_USE_IPv6.rawValue }
        let context = Unmanaged.passUnretained(self).toOpaque()
        // libmicrohttpd starts its worker threads here: they inherit the policy.
        return configuration.workerScheduling.whileStartingThreads {
            homeport_mhd_start(
                UInt32(flags), descriptor, UInt32(max(1, configuration.workerThreads)),
                UInt32(max(1, configuration.idleTimeoutSeconds)), Self.connectionMemory(configuration),
                UInt32(Self.daemonConnectionLimit(configuration)), acceptPolicyCallback,
                accessHandlerCallback, requestCompletedCallback, notifyConnectionCallback, uriLogCallback,
                tls?.certificate, tls?.key, tls?.priorities, context)
        }
    }

    /// libmicrohttpd's memory per connection: the request head (up to the header limit), the
    /// table it parses the `Cookie` field into (about as large again), and the answer's head
    /// (4 KiB: the web door's, with its policy headers and cookies, is under 2).
    /// Held to the header limit alone, a browser with a hundred ordinary cookies (5 KB) was
    /// closed without an answer on the web door; the limit is kept by the server instead.
    /// No larger than that: libmicrohttpd 0.9 zeroes the whole of it after every request on a
    /// kept-alive connection (at 48 KiB, a tenth of a signed-in request's cycles).
    static func connectionMemory(_ configuration: HTTPServerConfiguration) -> Int {
        2 * max(4096, configuration.maxHeaderBytes) + (4 << 10)
    }

    /// Serves new connections with another certificate and key (a renewal), without dropping a
    /// connection: a new daemon starts on the same listening socket with them, and the old one
    /// stops accepting and finishes the connections it holds, then stops. Throws, and keeps the
    /// old certificate, when the new one will not start.
    package func reloadTLS(_ credentials: TLSCredentials) throws {
        try lock.withLock {
            // A server that is stopping serves no new connection: there is nothing to reload.
            guard case .running(let old, let listen, let sweeper) = lifecycle, !draining.load(ordering: .relaxed)
            else { return }
            let duplicate = dup(listen.descriptor)
            guard duplicate >= 0 else { throw HTTPServerError.daemonFailed }
            // A renewal changes the pair, never the priorities the server started with.
            var credentials = credentials
            if let priorities = configuration.tls?.priorities { credentials.priorities = priorities }
            let material = TLSMaterial(credentials)
            guard let daemon = startDaemon(on: duplicate, ipv6: listen.isIPv6, tls: material) else {
                close(duplicate)
                throw HTTPServerError.tlsRefused
            }
            // The new daemon's descriptor still names the socket, so the kernel keeps it in the
            // old daemon's epoll sets: its workers wake for a new connection too, and are refused
            // the accept, until it stops (once the connections it holds have ended).
            let oldDescriptor = Self.stopAccepting(old, on: listen.descriptor)
            if oldDescriptor >= 0 { close(oldDescriptor) }
            retired.append((old, tlsMaterial))
            lifecycle = .running(
                daemon: daemon, listen: ListenSocket(descriptor: duplicate, port: listen.port, isIPv6: listen.isIPv6),
                sweeper: sweeper)
            tlsMaterial = material
        }
        retireWhenIdle()
    }

    /// Stops retired daemons once they hold no connection (checked every tenth of a second).
    private func retireWhenIdle() {
        runOnce(after: .milliseconds(100)) { [weak self] in
            guard let self else { return }
            let (idle, waiting) = lock.withLock {
                let idle = retired.filter { homeport_mhd_connection_count($0.daemon) == 0 }
                retired.removeAll { entry in idle.contains { $0.daemon == entry.daemon } }
                return (idle, !retired.isEmpty)
            }
            // Each daemon's certificate and key stay allocated until it has stopped.
            for entry in idle { withExtendedLifetime(entry.material) { MHD_stop_daemon(entry.daemon) } }
            if waiting { retireWhenIdle() }
        }
    }

    /// Connections libmicrohttpd may hold past ``HTTPServerConfiguration/maxConnections``: a
    /// connection admitted at the cap in place of one shut down (see ``ConnectionRegistry``)
    /// arrives before libmicrohttpd has closed that one.
    static let sheddingHeadroom = 64

    /// The connection limit libmicrohttpd is given: each worker thread's share of it (the limit
    /// over the threads) is the whole cap plus the headroom, so no worker ever reaches its share.
    /// The cap is the ``ConnectionRegistry``'s. (A worker at its share takes the listening socket
    /// out of its epoll set, and libmicrohttpd 0.9.75 aborts the process when that fails, as it
    /// does once the server has stopped accepting: see ``stopAccepting(_:on:)``.)
    static func daemonConnectionLimit(_ configuration: HTTPServerConfiguration) -> Int {
        (max(1, configuration.maxConnections) + sheddingHeadroom) * max(1, configuration.workerThreads)
    }

    /// Raises this process's open-file limit to what the connection cap needs, as far as the
    /// hard limit allows; says so in the log when it cannot.
    private func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return }
        let wanted = rlim_t(configuration.maxConnections + Self.sheddingHeadroom + 256)
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
    package var port: Int {
        lock.withLock {
            if case .running(_, let listen, _) = lifecycle { return listen.port }
            return 0
        }
    }

    /// Requests read but not yet fully answered.
    package var requestsInFlight: Int { inFlight.load(ordering: .relaxed) }

    /// Graceful stop: stops listening at once, waits up to the drain timeout for requests in
    /// flight (their responses carry `Connection: close`), then closes every connection.
    ///
    /// Requests in flight include those that had arrived without being read yet: connections
    /// the kernel had accepted into the listen backlog, and requests waiting in a connection's
    /// socket. A connection idle between requests is closed.
    ///
    /// Returns the number of requests still in flight when the wait ended (0 in a clean drain);
    /// 0 at once when the server is not running or another call is stopping it.
    @discardableResult
    package func shutdown() -> Int {
        // Draining is set under the lock, as a reload reads it: no daemon replaces this one now.
        let running: (daemon: OpaquePointer, listen: Int32)? = lock.withLock {
            guard case .running(let daemon, let listen, _) = lifecycle, !draining.load(ordering: .relaxed) else {
                return nil
            }
            draining.store(true, ordering: .relaxed)
            return (daemon, listen.descriptor)
        }
        guard let (daemon, listen) = running else { return 0 }
        // Streams never end by themselves: end them now, so they drain like any other answer.
        liveStreams.withLock { Array($0.values) }.forEach { $0.finish() }
        let listenDescriptor = Self.stopAccepting(daemon, on: listen)
        if listenDescriptor >= 0 {
            adoptBacklog(listenDescriptor, into: daemon)
            close(listenDescriptor)
        }
        let deadline = ContinuousClock.now.advanced(by: configuration.drainTimeout)
        // An adopted connection libmicrohttpd refuses after all (an address over its cap) is
        // never set up: the drain waits a second for adoptions at most.
        let adoptionDeadline = ContinuousClock.now.advanced(by: .seconds(1))
        // Quiet twice in a row, 5 ms apart: a request libmicrohttpd has just read off its socket
        // is counted in flight a moment later.
        var quiet = 0
        while quiet < 2 && ContinuousClock.now < deadline {
            let adopting = adoptions.load(ordering: .relaxed) > 0 && ContinuousClock.now < adoptionDeadline
            let busy = inFlight.load(ordering: .relaxed) > 0 || adopting || connections.hasUnreadRequest()
            quiet = busy ? 0 : quiet + 1
            usleep(5_000)
        }
        let left = inFlight.load(ordering: .relaxed)
        stopNow()
        return left
    }

    /// Has `daemon`'s workers stop accepting on `descriptor`, the listening socket it was given,
    /// and returns a descriptor of that socket which the caller owns (to accept what is left in
    /// its backlog, then close); -1 when there is none.
    ///
    /// Not with `MHD_quiesce_daemon` where it can be helped: in libmicrohttpd 0.9.75, quiescing a
    /// pool of epoll workers races with the workers themselves (each takes the socket out of its
    /// epoll set once it sees the daemon quiesced), and the process aborts when a worker wins
    /// ("Failed to remove listen FD from epoll set"). `descriptor` is made to name an eventfd
    /// instead (`homeport_mhd_take_listen_socket`); quiescing remains where that cannot be done.
    static func stopAccepting(_ daemon: OpaquePointer, on descriptor: Int32) -> Int32 {
        let kept = homeport_mhd_take_listen_socket(descriptor)
        return kept >= 0 ? kept : MHD_quiesce_daemon(daemon)
    }

    /// Hands libmicrohttpd the connections the kernel had already accepted into the listen
    /// backlog when the server stopped listening: closing the socket with them inside would
    /// reset them, though their clients did everything right. They are served like any other
    /// request in flight (with `Connection: close`). A client whose connection completes after
    /// this sweep is refused (reset), as at any closed port.
    private func adoptBacklog(_ listenDescriptor: Int32, into daemon: OpaquePointer) {
        while true {
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept(listenDescriptor, $0, &length)
                }
            }
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            // The listen socket is non-blocking: an empty backlog ends the loop. libmicrohttpd
            // makes the socket non-blocking, and closes it itself when it cannot take it.
            let added = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { MHD_add_connection(daemon, client, $0, length) }
            }
            // Its worker thread sets it up a moment later; the drain waits for that.
            if added == .YES { adoptions.add(1, ordering: .relaxed) }
        }
    }

    /// Stops at once, closing every connection.
    private func stopNow() {
        let running: (OpaquePointer, RepeatingTask)? = lock.withLock {
            defer { lifecycle = .stopped }
            if case .running(let daemon, _, let sweeper) = lifecycle { return (daemon, sweeper) }
            return nil
        }
        guard let (daemon, sweeper) = running else { return }
        sweeper.stop()
        // libmicrohttpd must not find a connection suspended when it stops.
        abandonOffloads()
        MHD_stop_daemon(daemon)
        let leftovers = lock.withLock {
            defer { retired.removeAll() }
            return retired
        }
        for entry in leftovers { withExtendedLifetime(entry.material) { MHD_stop_daemon(entry.daemon) } }
        if let path = configuration.unixSocketPath { unlink(path) }
        pool.stop()
        (accessLogger.sink as? BufferedLogSink)?.flush()
    }
}

/// PEM text copied into C strings that live as long as the daemon that reads them.
final class TLSMaterial: @unchecked Sendable {
    let certificate: UnsafeMutablePointer<CChar>?
    let key: UnsafeMutablePointer<CChar>?
    let priorities: UnsafeMutablePointer<CChar>?

    init(_ credentials: TLSCredentials) {
        certificate = strdup(credentials.certificatePEM)
        key = strdup(credentials.keyPEM)
        priorities = strdup(credentials.priorities)
    }

    deinit {
        if let key {
            // The key's bytes are wiped before they are freed.
            memset(key, 0, strlen(key))
            free(key)
        }
        free(certificate)
        free(priorities)
    }
}

#if canImport(Glibc)
    private let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#else
    private let RLIMIT_NOFILE_VALUE = RLIMIT_NOFILE
#endif
