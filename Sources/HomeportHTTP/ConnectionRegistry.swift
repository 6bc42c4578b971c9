import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Every open connection, what it is doing and since when: the per-address cap, the header and
/// body deadlines, and the memory budget for request bodies (with each address's share of it).
///
/// libmicrohttpd's idle timeout alone lets a client that trickles a byte now and then hold a
/// connection for ever, and its connection cap lets one address take every slot. Here each
/// connection has a phase with a deadline, a sweeper shuts down those past it, and one address
/// (an IPv6 client by its /64) holds at most ``HTTPServerConfiguration/maxConnectionsPerAddress``.
final class ConnectionRegistry: @unchecked Sendable {
    /// One open connection.
    final class Connection: @unchecked Sendable {
        let descriptor: Int32
        let address: AddressKey
        /// The peer's address as text, for the access log (worked out once per connection).
        let client: String
        /// The phase in the top two bits, the milliseconds since the registry's epoch below.
        let state = Atomic<UInt64>(0)
        /// Shut down by the sweeper already (guarded by the registry's lock).
        var cut = false
        /// The streamed response it carries, until the sweeper finds its client gone (guarded by
        /// the registry's lock).
        var stream: HTTPBodyStream?
        /// Bytes of the request body received since the body phase began.
        let bodyBytes = Atomic<Int>(0)

        init(descriptor: Int32, address: AddressKey, client: String) {
            self.descriptor = descriptor
            self.address = address
            self.client = client
        }
    }

    /// What a connection is doing.
    enum Phase: UInt64 {
        /// Waiting for (or reading) a request line and headers: the header deadline runs.
        case awaitingHead = 0
        /// Reading a request body: the body deadline runs.
        case readingBody = 1
        /// The server is answering: no deadline of the client's.
        case answering = 2
        /// The server streams a response for as long as the client stays: no deadline, but a
        /// client that has gone is noticed without waiting for the next write.
        case streaming = 3
    }

    /// A client address as the per-address cap counts it: IPv4 exactly, IPv6 by its /64.
    struct AddressKey: Hashable, Sendable {
        var family: Int32
        var bits: UInt64
    }

    private let lock = NSLock()
    private var connections: [ObjectIdentifier: Connection] = [:]
    private var perAddress: [AddressKey: Int] = [:]
    private let maxPerAddress: Int
    private let maxConnections: Int
    /// Connections open and not shut down by ``cut(_:)``.
    private var live = 0
    private let headerDeadline: UInt64
    private let bodyDeadline: UInt64
    /// Bytes a second a body must average once ``bodyGrace`` milliseconds have passed (0: none).
    private let minBodyRate: UInt64
    private let bodyGrace: UInt64
    private let bodyBudget: Int
    /// The most of the body budget one address may hold: an eighth, or one largest body.
    private let addressShare: Int
    /// The part of the budget only bodies of at most ``smallBody`` bytes may use: an eighth.
    private let smallBodyReserve: Int
    /// Bytes of request bodies reserved in memory right now (changed under the lock).
    let bufferedBodyBytes = Atomic<Int>(0)
    private var bodyBytesPerAddress: [AddressKey: Int] = [:]

    init(configuration: HTTPServerConfiguration) {
        maxPerAddress = configuration.maxConnectionsPerAddress
        maxConnections = max(1, configuration.maxConnections)
        headerDeadline = UInt64(max(1, configuration.headerTimeoutSeconds)) * 1000
        bodyDeadline = UInt64(max(1, configuration.bodyTimeoutSeconds)) * 1000
        minBodyRate = UInt64(max(0, configuration.minBodyBytesPerSecond))
        bodyGrace = UInt64(max(1, configuration.bodyRateGraceSeconds)) * 1000
        bodyBudget = configuration.maxBufferedBodyBytes
        addressShare = max(configuration.maxBodyBytes, configuration.maxBufferedBodyBytes / 8)
        smallBodyReserve = min(
            configuration.maxBufferedBodyBytes / 8, configuration.maxBufferedBodyBytes - configuration.maxBodyBytes)
    }

    /// Whether one more connection from `address` may open (checked before any byte is read).
    ///
    /// Past its address's cap, no. At the server's cap, it takes the place of a connection of the
    /// address that holds the most (see ``shedOne()``) — one waiting for a request, sending a
    /// body, or holding a stream — so that a few addresses holding every slot with requests they
    /// never finish, bodies they trickle or streams cannot keep everyone else out; when every
    /// connection is being answered, no.
    func admits(_ address: AddressKey) -> Bool {
        let (admitted, stream): (Bool, HTTPBodyStream?) = lock.withLock {
            if maxPerAddress > 0 && perAddress[address, default: 0] >= maxPerAddress { return (false, nil) }
            if live < maxConnections { return (true, nil) }
            guard let shed = shedOne() else { return (false, nil) }
            return (true, shed.stream)
        }
        // A stream's connection is suspended, out of libmicrohttpd's loop: finishing the stream
        // resumes it, and its shut-down socket then closes it.
        stream?.finish()
        return admitted
    }

    /// Shuts down the connection to give up first, and returns it: of the address with the most
    /// connections, one waiting for a request, else one sending a body, else one holding a
    /// stream; the longest in its phase. Never one being answered. Under the lock.
    private func shedOne() -> Connection? {
        var chosen: Connection?
        var chosenRank = (count: 0, phase: UInt64.max, since: UInt64.max)
        for connection in connections.values where !connection.cut {
            let state = connection.state.load(ordering: .relaxed)
            let phase = state >> 62
            guard phase != Phase.answering.rawValue else { continue }
            // Waiting for a head first, then a body, then a stream.
            let order = phase == Phase.streaming.rawValue ? 3 : phase == Phase.readingBody.rawValue ? 1 : 0
            let rank = (
                count: perAddress[connection.address, default: 0], phase: UInt64(order), since: state & (1 << 62 - 1)
            )
            if rank.count > chosenRank.count
                || (rank.count == chosenRank.count
                    && (rank.phase < chosenRank.phase
                        || (rank.phase == chosenRank.phase && rank.since < chosenRank.since)))
            {
                chosen = connection
                chosenRank = rank
            }
        }
        guard let chosen else { return nil }
        cut(chosen)
        return chosen
    }

    /// Shuts a connection down (under the lock). libmicrohttpd sees the end of the stream and
    /// closes it.
    private func cut(_ connection: Connection) {
        connection.cut = true
        live -= 1
        _ = shutdown(connection.descriptor, Int32(SHUT_RDWR))
    }

    /// Records a connection that libmicrohttpd has just set up.
    func opened(descriptor: Int32, address: AddressKey, client: String) -> Connection {
        let connection = Connection(descriptor: descriptor, address: address, client: client)
        enter(.awaitingHead, connection)
        lock.withLock {
            connections[ObjectIdentifier(connection)] = connection
            perAddress[address, default: 0] += 1
            live += 1
        }
        return connection
    }

    /// Forgets a connection; called by libmicrohttpd before it closes the socket.
    func closed(_ connection: Connection) {
        lock.withLock {
            connections[ObjectIdentifier(connection)] = nil
            if !connection.cut { live -= 1 }
            let left = perAddress[connection.address, default: 1] - 1
            perAddress[connection.address] = left > 0 ? left : nil
        }
    }

    /// Moves a connection into the streaming phase, with the stream to finish should its client go.
    func streaming(_ stream: HTTPBodyStream, on connection: Connection) {
        lock.withLock { connection.stream = stream }
        enter(.streaming, connection)
    }

    /// Moves a connection into `phase`, whose deadline starts now.
    func enter(_ phase: Phase, _ connection: Connection) {
        if phase == .readingBody { connection.bodyBytes.store(0, ordering: .relaxed) }
        connection.state.store(phase.rawValue << 62 | milliseconds(), ordering: .relaxed)
    }

    /// Reserves `bytes` more of body memory for a request from `address` whose body, with them,
    /// is `bodySize` bytes; false (and nothing reserved) when they do not fit.
    ///
    /// Memory is reserved as bytes arrive, never on a length's announcement, so that holding it
    /// costs a client the bytes themselves. Three ceilings: the whole budget; one address's share
    /// of it (``addressShare``), so that one client cannot hold it all; and, for a body past
    /// ``smallBody`` bytes, the budget less a reserve, so that small requests (a login, a JSON
    /// call) still fit while large uploads fill the rest.
    func reserveBody(_ bytes: Int, from address: AddressKey?, bodySize: Int) -> Bool {
        lock.withLock {
            let ceiling = bodySize <= Self.smallBody ? bodyBudget : bodyBudget - smallBodyReserve
            let total = bufferedBodyBytes.load(ordering: .relaxed) + bytes
            guard total <= ceiling else { return false }
            if let address {
                let held = bodyBytesPerAddress[address, default: 0] + bytes
                guard held <= addressShare else { return false }
                bodyBytesPerAddress[address] = held
            }
            bufferedBodyBytes.store(total, ordering: .relaxed)
            return true
        }
    }

    /// Gives back body memory reserved with ``reserveBody(_:from:bodySize:)``.
    func releaseBody(_ bytes: Int, from address: AddressKey?) {
        guard bytes > 0 else { return }
        lock.withLock {
            bufferedBodyBytes.subtract(bytes, ordering: .relaxed)
            if let address {
                let left = bodyBytesPerAddress[address, default: bytes] - bytes
                bodyBytesPerAddress[address] = left > 0 ? left : nil
            }
        }
    }

    /// A body of at most this many bytes may use the reserve of the budget kept for small ones.
    static let smallBody = 16 << 10

    /// Shuts down every connection past its phase's deadline, and every one whose client has
    /// closed its side while the server waits for the rest of a request; returns how many.
    ///
    /// `shutdown(2)`, not `close(2)`: libmicrohttpd still owns the descriptor; it sees the end of
    /// the stream, closes the connection and tells ``closed(_:)``, which waits for this lock, so
    /// a descriptor is never shut down after libmicrohttpd closed it.
    ///
    /// libmicrohttpd does not notice a peer's end of stream while it waits for more of a request,
    /// nor while a streamed response is suspended: such a connection would hold its slot until
    /// the deadline, or the stream's next write. So a connection that has waited a second is asked
    /// (a peek that reads nothing) whether its peer is gone.
    @discardableResult
    func sweep() -> Int {
        let now = milliseconds()
        let (count, abandoned): (Int, [HTTPBodyStream]) = lock.withLock {
            var count = 0
            var abandoned: [HTTPBodyStream] = []
            for connection in connections.values where !connection.cut {
                let state = connection.state.load(ordering: .relaxed)
                let since = state & (1 << 62 - 1)
                guard now > since, now - since > 1000 else { continue }
                let limit: UInt64
                switch Phase(rawValue: state >> 62) {
                case .awaitingHead: limit = headerDeadline
                case .readingBody:
                    limit = bodyDeadline
                    // Past the grace, a body slower than the minimum rate is a connection held, not
                    // a body sent; unless bytes wait unread in the socket (the server, not the
                    // client, was slow to read them).
                    let elapsed = now - since
                    if minBodyRate > 0, elapsed > bodyGrace,
                        UInt64(connection.bodyBytes.load(ordering: .relaxed)) * 1000 < minBodyRate * elapsed,
                        Self.peek(connection.descriptor) <= 0
                    {
                        cut(connection)
                        count += 1
                        continue
                    }
                case .streaming:
                    // A suspended connection is out of libmicrohttpd's event loop: shutting its
                    // socket down would go unseen, so the stream is finished instead.
                    if let stream = connection.stream, Self.peerHasClosed(connection.descriptor) {
                        connection.stream = nil
                        abandoned.append(stream)
                        count += 1
                    }
                    continue
                default: continue
                }
                guard now - since > limit || Self.peerHasClosed(connection.descriptor) else { continue }
                cut(connection)
                count += 1
            }
            return (count, abandoned)
        }
        abandoned.forEach { $0.finish() }
        return count
    }

    /// Whether the peer has ended its side of the stream (and nothing of it is left unread).
    static func peerHasClosed(_ descriptor: Int32) -> Bool {
        peek(descriptor) == 0
    }

    /// What a one-byte peek at a socket reads, without waiting or taking it: 1 when a byte is
    /// waiting, 0 when the peer has ended its side, -1 when nothing has come (or on an error).
    private static func peek(_ descriptor: Int32) -> Int {
        var byte: UInt8 = 0
        return recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
    }

    /// Whether a connection waiting for a request has bytes of one unread in its socket: a
    /// request that has arrived but that libmicrohttpd has not read yet (a graceful stop serves
    /// it).
    func hasUnreadRequest() -> Bool {
        lock.withLock {
            connections.values.contains { connection in
                guard !connection.cut,
                    Phase(rawValue: connection.state.load(ordering: .relaxed) >> 62) == .awaitingHead
                else { return false }
                return Self.peek(connection.descriptor) > 0
            }
        }
    }

    /// Connections open right now and in `phase`, not shut down.
    func count(in phase: Phase) -> Int {
        lock.withLock {
            connections.values.count {
                !$0.cut && Phase(rawValue: $0.state.load(ordering: .relaxed) >> 62) == phase
            }
        }
    }

    /// Milliseconds on the coarse monotonic clock: a few milliseconds of resolution are plenty for
    /// deadlines of seconds, and reading it costs next to nothing (this runs thrice a request).
    private func milliseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
        return UInt64(now.tv_sec) * 1000 + UInt64(now.tv_nsec / 1_000_000)
    }

    /// The key of a peer address, or `nil` for a family other than IPv4 and IPv6.
    static func key(_ address: UnsafePointer<sockaddr>?) -> AddressKey? {
        guard let address else { return nil }
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                AddressKey(family: AF_INET, bits: UInt64(UInt32(bigEndian: $0.pointee.sin_addr.s_addr)))
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                let bytes = withUnsafeBytes(of: v6.pointee.sin6_addr) { Array($0) }
                // An IPv4 address mapped into IPv6 (::ffff:a.b.c.d) counts as that IPv4 address.
                if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
                    let v4 = bytes[12..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                    return AddressKey(family: AF_INET, bits: v4)
                }
                return AddressKey(family: AF_INET6, bits: bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
            }
        default:
            return nil
        }
    }
}
