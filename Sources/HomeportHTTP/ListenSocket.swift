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
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            return ListenSocket(descriptor: fd, port: boundPort(fd), isIPv6: isIPv6)
        }
        throw HTTPServerError.cannotListen(
            address: ListenAddress(host: host, port: port).description,
            reason: String(cString: strerror(lastError)))
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
    default:
        return "unknown"
    }
}

/// Why the server could not start.
public enum HTTPServerError: Error, CustomStringConvertible, Equatable {
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
    public var description: String {
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
