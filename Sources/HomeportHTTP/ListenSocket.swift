import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A bound, listening TCP socket that the HTTP daemon then serves.
struct ListenSocket {
    let descriptor: Int32
    let port: Int
    let isIPv6: Bool

    /// Resolves `host`, binds the first address that accepts, and listens.
    static func open(host: String, port: Int, backlog: Int32 = 1024) throws -> ListenSocket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
            hints.ai_socktype = SOCK_STREAM
        #endif
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &results)
        guard status == 0, let first = results else {
            throw HTTPServerError.cannotResolve(host: host, reason: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(results) }

        var lastError: Int32 = 0
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            guard fd >= 0 else {
                lastError = errno
                continue
            }
            var on: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            let isIPv6 = info.pointee.ai_family == AF_INET6
            if isIPv6 {
                setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<Int32>.size))
            }
            guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0, listen(fd, backlog) == 0 else {
                lastError = errno
                close(fd)
                continue
            }
            prepare(fd)
            return ListenSocket(descriptor: fd, port: boundPort(fd), isIPv6: isIPv6)
        }
        throw HTTPServerError.cannotListen(
            address: ListenAddress(host: host, port: port).description,
            reason: String(cString: strerror(lastError)))
    }

    /// Binds a Unix-domain socket at `path` (mode 0660: its owner and group connect) and listens.
    /// A socket file left by a server that is gone is replaced; a live one, or a path that is not
    /// a socket, is refused.
    static func openUnix(path: String, backlog: Int32 = 1024) throws -> ListenSocket {
        let refuse = { (reason: String) in HTTPServerError.cannotListen(address: path, reason: reason) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity, !path.utf8.contains(0) else {
            throw refuse("a socket path is at most \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
        }
        var status = stat()
        if lstat(path, &status) == 0 {
            guard (status.st_mode & S_IFMT) == S_IFSOCK else { throw refuse("the path exists and is not a socket") }
            guard !isServed(&address) else { throw refuse("another server listens on this socket") }
            unlink(path)
        }
        let fd = unixStreamSocket()
        guard fd >= 0 else { throw refuse(String(cString: strerror(errno))) }
        // Bound with the process's umask (022 lets no one else write, so connect), then opened
        // to the group.
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, chmod(path, 0o660) == 0, listen(fd, backlog) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw refuse(reason)
        }
        prepare(fd)
        return ListenSocket(descriptor: fd, port: 0, isIPv6: false)
    }

    /// Non-blocking, and closed in any program this process starts: a child that held the socket
    /// would keep it listening after the server has closed it.
    private static func prepare(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
    }

    /// A new Unix-domain stream socket; -1 when none could be made.
    private static func unixStreamSocket() -> Int32 {
        #if canImport(Glibc)
            socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #else
            socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
    }

    /// Whether a server accepts connections on the socket at `address`.
    private static func isServed(_ address: inout sockaddr_un) -> Bool {
        let probe = unixStreamSocket()
        guard probe >= 0 else { return false }
        defer { close(probe) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }

    private static func boundPort(_ fd: Int32) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard ok else { return 0 }
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer in
            if family == AF_INET6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    Int(UInt16(bigEndian: $0.pointee.sin6_port))
                }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                Int(UInt16(bigEndian: $0.pointee.sin_port))
            }
        }
    }
}

/// A listening socket bound before its server starts, so that the port the system picks for
/// port 0 is known while the rest is set up (the links mail carries, the replicas table). The
/// server that is given it listens on it; unused, it is closed.
package final class BoundListener: @unchecked Sendable {
    let socket: ListenSocket
    private let lock = NSLock()
    private var taken = false

    /// The port bound.
    package var port: Int { socket.port }

    /// Binds `host`:`port` and listens.
    package init(host: String, port: Int) throws {
        socket = try ListenSocket.open(host: host, port: port)
    }

    /// The socket, once: the server that starts on it owns it from then on.
    func take() -> ListenSocket? {
        lock.withLock {
            defer { taken = true }
            return taken ? nil : socket
        }
    }

    deinit {
        if !taken { close(socket.descriptor) }
    }
}

/// Renders a peer address as text.
func addressText(_ address: UnsafePointer<sockaddr>?) -> String {
    guard let address else { return "unknown" }
    var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
    switch Int32(address.pointee.sa_family) {
    case AF_INET:
        return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
            var raw = v4.pointee.sin_addr
            guard inet_ntop(AF_INET, &raw, &buffer, socklen_t(buffer.count)) != nil else { return "unknown" }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    case AF_INET6:
        return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
            var raw = v6.pointee.sin6_addr
            guard inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count)) != nil else { return "unknown" }
            // A dual-stack socket reports an IPv4 client as ::ffff:a.b.c.d: it is that IPv4 client.
            return AddressRange.canonical(
                String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    case AF_UNIX:
        // A peer on the same host, through a Unix-domain socket.
        return TrustedProxies.unixPeer
    default:
        return "unknown"
    }
}

/// Why the server could not start.
package enum HTTPServerError: Error, CustomStringConvertible, Equatable {
    /// The host name did not resolve.
    case cannotResolve(host: String, reason: String)
    /// No resolved address could be bound (in use, not local, no permission).
    case cannotListen(address: String, reason: String)
    /// libmicrohttpd refused to start.
    case daemonFailed
    /// HTTPS was asked for, and this libmicrohttpd has no TLS.
    case tlsUnavailable
    /// libmicrohttpd would not start with this certificate and key.
    case tlsRefused

    /// A sentence for the operator.
    package var description: String {
        switch self {
        case .cannotResolve(let host, let reason): "cannot resolve '\(host)': \(reason)"
        case .cannotListen(let address, let reason): "cannot listen on \(address): \(reason)"
        case .daemonFailed: "the HTTP daemon (libmicrohttpd) failed to start"
        case .tlsUnavailable:
            "this libmicrohttpd was built without TLS: install Debian's libmicrohttpd12 (it links GnuTLS), or serve plain HTTP behind a proxy that terminates TLS"
        case .tlsRefused:
            "libmicrohttpd would not serve HTTPS with this certificate and key (is the key the certificate's, and both PEM? "
                + "with --tls-priority, is it a GnuTLS priority string this GnuTLS knows?)"
        }
    }
}
