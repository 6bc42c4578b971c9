import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Every open connection, what it is doing and since when: the per-address cap, the header and
/// body deadlines, and the memory budget for request bodies.
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
    private let headerDeadline: UInt64
    private let bodyDeadline: UInt64
    private let bodyBudget: Int
    /// Bytes of request bodies reserved in memory right now.
    let bufferedBodyBytes = Atomic<Int>(0)

    init(configuration: HTTPServerConfiguration) {
        maxPerAddress = configuration.maxConnectionsPerAddress
        headerDeadline = UInt64(max(1, configuration.headerTimeoutSeconds)) * 1000
        bodyDeadline = UInt64(max(1, configuration.bodyTimeoutSeconds)) * 1000
        bodyBudget = configuration.maxBufferedBodyBytes
    }

    /// Whether one more connection from `address` may open (checked before any byte is read).
    func admits(_ address: AddressKey) -> Bool {
        guard maxPerAddress > 0 else { return true }
        return lock.withLock { perAddress[address, default: 0] < maxPerAddress }
    }

    /// Records a connection that libmicrohttpd has just set up.
    func opened(descriptor: Int32, address: AddressKey, client: String) -> Connection {
        let connection = Connection(descriptor: descriptor, address: address, client: client)
        enter(.awaitingHead, connection)
        lock.withLock {
            connections[ObjectIdentifier(connection)] = connection
            perAddress[address, default: 0] += 1
        }
        return connection
    }

    /// Forgets a connection; called by libmicrohttpd before it closes the socket.
    func closed(_ connection: Connection) {
        lock.withLock {
            connections[ObjectIdentifier(connection)] = nil
            let left = perAddress[connection.address, default: 1] - 1
            perAddress[connection.address] = left > 0 ? left : nil
        }
    }

    /// Moves a connection into `phase`, whose deadline starts now.
    func enter(_ phase: Phase, _ connection: Connection) {
        connection.state.store(phase.rawValue << 62 | milliseconds(), ordering: .relaxed)
    }

    /// Reserves `bytes` of body memory; false (and nothing reserved) when the budget is spent.
    func reserveBody(_ bytes: Int) -> Bool {
        let total = bufferedBodyBytes.add(bytes, ordering: .relaxed).newValue
        guard total <= bodyBudget else {
            bufferedBodyBytes.subtract(bytes, ordering: .relaxed)
            return false
        }
        return true
    }

    /// Gives back body memory reserved with ``reserveBody(_:)``.
    func releaseBody(_ bytes: Int) {
        if bytes > 0 { bufferedBodyBytes.subtract(bytes, ordering: .relaxed) }
    }

    /// Shuts down every connection past its phase's deadline and returns how many.
    ///
    /// `shutdown(2)`, not `close(2)`: libmicrohttpd still owns the descriptor; it sees the end of
    /// the stream, closes the connection and tells ``closed(_:)``, which waits for this lock, so
    /// a descriptor is never shut down after libmicrohttpd closed it.
    @discardableResult
    func sweep() -> Int {
        let now = milliseconds()
        return lock.withLock {
            var count = 0
            for connection in connections.values where !connection.cut {
                let state = connection.state.load(ordering: .relaxed)
                let since = state & (1 << 62 - 1)
                let limit: UInt64
                switch Phase(rawValue: state >> 62) {
                case .awaitingHead: limit = headerDeadline
                case .readingBody: limit = bodyDeadline
                default: continue
                }
                guard now > since, now - since > limit else { continue }
                connection.cut = true
                _ = shutdown(connection.descriptor, Int32(SHUT_RDWR))
                count += 1
            }
            return count
        }
    }

    /// Connections open right now.
    var openCount: Int { lock.withLock { connections.count } }

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
