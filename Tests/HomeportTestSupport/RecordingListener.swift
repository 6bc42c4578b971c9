import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback listener that keeps every request head it receives and answers as a test scripts
/// it: a canned response (after a delay, with repeated header fields, or never), by route, or
/// never at all (a blackhole that accepts and stays silent). A test can change the script while
/// the listener runs.
public final class RecordingListener: @unchecked Sendable {
    /// One canned answer.
    public struct Canned: Sendable {
        /// The status.
        public var status: Int
        /// Header fields.
        public var headers: [String: String]
        /// The body.
        public var body: String
        /// Header lines sent as they are after ``headers`` (a field sent twice, say).
        public var extraHeaderLines: [String] = []
        /// Seconds to wait before answering.
        public var delay: Double = 0
        /// Whether to read the request and never answer it (the connection stays open and silent).
        public var silent = false

        /// Creates an answer.
        public init(_ status: Int, _ headers: [String: String] = [:], _ body: String = "") {
            self.status = status
            self.headers = headers
            self.body = body
        }

        /// This answer, sent `seconds` late.
        public func delayed(_ seconds: Double) -> Canned {
            var copy = self
            copy.delay = seconds
            return copy
        }

        /// A request that is read and never answered.
        public static var never: Canned {
            var canned = Canned(0)
            canned.silent = true
            return canned
        }
    }

    /// One step of a scripted streaming answer (server-sent events).
    public enum StreamStep: Sendable {
        /// Writes these bytes as they are (the response head is one of them).
        case write(String)
        /// Waits this many seconds.
        case pause(Double)
        /// Closes the connection (a drop, wherever the script is).
        case close
        /// Keeps the connection open and silent until the listener stops.
        case hold
    }

    /// How the listener answers.
    public enum Behaviour: Sendable {
        /// Answers every request with this status, headers and body.
        case respond(status: Int, headers: [String: String], body: String)
        /// Answers by route: a key `"METHOD /path"` is tried before the bare `"/path"` (404 for
        /// any other request).
        case routes([String: Canned])
        /// Answers the listed paths by route, and every other request in turn from the sequence.
        case routesThenSequence([String: Canned], [Canned])
        /// Accepts connections and never answers.
        case blackhole
        /// Answers `streamPath` with the scripts in turn (the last one again once they run out),
        /// and every other request by route.
        case routesAndStreams([String: Canned], streamPath: String, [[StreamStep]])
        /// Passes every request on to the server on 127.0.0.1:`port`, and its answers back, with
        /// `fault` (see ``RecordingListener/RelayFault``).
        case relay(port: Int, fault: RelayFault)
        /// Answers each request with what `answer` makes of its head (request line and headers):
        /// a listener that computes its lie.
        case answer(@Sendable (String) -> Canned)
    }

    /// What a relay does wrong.
    public enum RelayFault: Sendable {
        /// Nothing: every request and answer passes as it is.
        case none
        /// Holds every request this many seconds before passing it on (the server answers late).
        case late(Double)
        /// Passes identity probes on, and holds any other request forever, unanswered.
        case hangsOnAPI
        /// Passes identity probes on, and closes the connection on any other request.
        case dropsAPI
        /// Holds the first request to `path` (on whichever connection) until the test lets it go
        /// (``RecordingListener/releaseFirstRequest()``), passing every other request on: a
        /// request sent first that arrives last.
        case holdsFirst(path: String)
    }

    private let fd: Int32
    let lock = NSLock()
    private var script: Behaviour
    private var heads: [String] = []
    /// Every byte each connection sent, by connection, in the order they were accepted.
    private var bytes: [[UInt8]] = []
    var open: [Int32] = []
    var running = true
    private var sequenceTurn = 0
    private var streamTurn = 0
    /// A relay's ``RelayFault/holdsFirst(path:)``: whether the first request to the path came,
    /// and whether it is held now.
    var firstCame = false
    var firstHeld = false
    /// The port.
    public let port: Int
    /// The host it listens on.
    public let host: String

    /// Starts listening on `host` (an IPv4 or IPv6 loopback literal) with `behaviour`.
    public init(host: String = "127.0.0.1", behaviour: Behaviour) throws {
        self.host = host
        self.script = behaviour
        let v6 = host.contains(":")
        let fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        guard fd >= 0 else { throw RawHTTPError("socket failed") }
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var bound = false
        if v6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            inet_pton(AF_INET6, host, &address.sin6_addr)
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr(host)
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
        }
        guard bound, listen(fd, 64) == 0 else {
            close(fd)
            throw RawHTTPError("cannot listen on \(host)")
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = withUnsafePointer(to: &storage) { pointer in
            v6
                ? pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    Int(UInt16(bigEndian: $0.pointee.sin6_port))
                }
                : pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    Int(UInt16(bigEndian: $0.pointee.sin_port))
                }
        }
        let listener = fd
        // Every descriptor is closed by the one thread that owns it, after it is done with it:
        // this one closes the listening socket; each connection's thread closes its own. Closing
        // a number another thread still uses could close (or, with shutdown, stop listening on)
        // whatever socket the system has given that number since: another test's listener.
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 {
                    guard lock.withLock({ running }) else {
                        close(listener)
                        return
                    }
                    // Interrupted, or out of descriptors for a moment: keep listening.
                    usleep(10_000)
                    continue
                }
                lock.withLock { open.append(client) }
                Thread.detachNewThread { self.serve(client) }
            }
        }
    }

    deinit {
        stop()
    }

    /// Stops listening and ends every connection: it shuts the sockets down, under the lock,
    /// while they are still open, and each owning thread then closes its own (see `init`). It
    /// never closes a number itself, so it cannot reach a socket the system has given that
    /// number since.
    public func stop() {
        lock.withLock {
            guard running else { return }
            running = false
            shutdown(fd, Int32(SHUT_RDWR))
            open.forEach { shutdown($0, Int32(SHUT_RDWR)) }
        }
    }

    /// The base URL, such as `http://127.0.0.1:40123`.
    public var url: String { host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)" }

    /// How the listener answers from now on (connections already answered are not affected).
    public var behaviour: Behaviour {
        get { lock.withLock { script } }
        set { lock.withLock { script = newValue } }
    }

    /// Whether a relay holds the first request to its fault's path now.
    public var holdsFirstRequest: Bool { lock.withLock { firstHeld } }

    /// Lets the request a relay holds (``RelayFault/holdsFirst(path:)``) go on.
    public func releaseFirstRequest() {
        lock.withLock { firstHeld = false }
    }

    /// Every request head received so far (request line and headers).
    public var requests: [String] { lock.withLock { heads } }

    /// Every byte received so far, connection by connection: heads, bodies, and whatever came
    /// after an answer.
    public var received: [[UInt8]] { lock.withLock { bytes } }

    /// How many bytes received so far belong to an occurrence of one of `secrets` (a token, a
    /// password, a device token), counted over each connection's bytes as they came.
    public func credentialBytes(_ secrets: [String]) -> Int {
        received.reduce(0) { total, connection in
            secrets.filter { !$0.isEmpty }.reduce(total) { total, secret in
                var count = 0
                var rest = connection[...]
                let needle = Array(secret.utf8)
                while let range = rest.firstRange(of: needle) {
                    count += needle.count
                    rest = rest[range.upperBound...]
                }
                return total + count
            }
        }
    }

    /// Appends `chunk` to the bytes of connection `index`.
    func record(_ chunk: ArraySlice<UInt8>, connection index: Int) {
        lock.withLock { bytes[index] += chunk }
    }

    /// Forgets every request and byte received so far (a test that set the scene and now attacks).
    public func forgetReceived() {
        lock.withLock {
            heads.removeAll()
            bytes = bytes.map { _ in [] }
        }
    }

    /// Whether any request carried a credential: a session token, a cookie or an Authorization header.
    public var sawCredential: Bool {
        requests.contains { head in
            head.lowercased().split(separator: "\r\n").contains {
                $0.hasPrefix("x-session-token:") || $0.hasPrefix("cookie:") || $0.hasPrefix("authorization:")
            }
        }
    }

    /// The method and the path (without its query: a probe's challenge, say) of a request
    /// head's request line; routes are looked up by them.
    static func route(of head: String) -> (method: String, path: String) {
        let words = head.split(separator: " ")
        let path = words.dropFirst().first?.split(separator: "?", maxSplits: 1).first
        return (words.first.map(String.init) ?? "GET", path.map(String.init) ?? "/")
    }

    /// Plays a stream script; returns whether the connection is to be held open.
    private func play(_ script: [StreamStep], on client: Int32) -> Bool {
        for step in script {
            switch step {
            case .write(let text): if !RawHTTP.send(client, text) { return false }
            case .pause(let seconds): usleep(useconds_t(seconds * 1_000_000))
            case .close: return false
            case .hold: return true
            }
        }
        return false
    }

    /// How many stream requests arrived so far.
    public var streamsOpened: Int { lock.withLock { streamTurn } }

    private func serve(_ client: Int32) {
        let connection = lock.withLock {
            bytes.append([])
            return bytes.count - 1
        }
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        var holdOpen = false
        reading: while true {
            let count = recv(client, &chunk, chunk.count, 0)
            if count <= 0 { break }
            record(chunk[0..<count], connection: connection)
            buffer += chunk[0..<count]
            if case .relay(let port, let fault) = behaviour {
                relay(client, connection: connection, buffered: buffer, to: port, fault: fault)
                break
            }
            guard let end = buffer.firstRange(of: [13, 10, 13, 10]) else { continue }
            let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
            lock.withLock { heads.append(head) }
            buffer.removeSubrange(..<end.upperBound)
            let (method, path) = Self.route(of: head)
            let answer: Canned
            switch behaviour {
            case .respond(let status, let headers, let body): answer = Canned(status, headers, body)
            case .answer(let make): answer = make(head)
            case .routes(let routes): answer = routes["\(method) \(path)"] ?? routes[path] ?? Canned(404, [:], "{}")
            case .routesThenSequence(let routes, let answers):
                if let routed = routes["\(method) \(path)"] ?? routes[path] {
                    answer = routed
                } else {
                    let turn = lock.withLock {
                        sequenceTurn += 1; return sequenceTurn - 1
                    }
                    answer = answers[min(turn, answers.count - 1)]
                }
            case .blackhole:
                holdOpen = true
                continue
            case .relay: continue
            case .routesAndStreams(let routes, let streamPath, let scripts):
                if path == streamPath, !scripts.isEmpty {
                    let turn = lock.withLock {
                        streamTurn += 1
                        return streamTurn - 1
                    }
                    holdOpen = play(scripts[min(turn, scripts.count - 1)], on: client)
                    break reading
                }
                answer = routes["\(method) \(path)"] ?? routes[path] ?? Canned(404, [:], "{}")
            }
            if answer.silent {
                holdOpen = true
                break
            }
            if answer.delay > 0 { usleep(useconds_t(answer.delay * 1_000_000)) }
            var text =
                "HTTP/1.1 \(answer.status) Canned\r\nContent-Length: \(answer.body.utf8.count)\r\nConnection: close\r\n"
            for (name, value) in answer.headers { text += "\(name): \(value)\r\n" }
            for line in answer.extraHeaderLines { text += line + "\r\n" }
            text += "\r\n" + answer.body
            RawHTTP.send(client, text)
            // Whatever the client still sends (a body after its head) is counted too, until it
            // closes (the answer said it would).
            while true {
                let count = recv(client, &chunk, chunk.count, 0)
                if count <= 0 { break }
                record(chunk[0..<count], connection: connection)
            }
            break
        }
        if holdOpen {
            // Hold the connection open and silent until stopped.
            while lock.withLock({ running }) { usleep(50_000) }
        }
        // Forgotten before it is closed, so that stop() never shuts down a number the system has
        // since given to another socket (another test's listener, say).
        lock.withLock { open.removeAll { $0 == client } }
        close(client)
    }
}
