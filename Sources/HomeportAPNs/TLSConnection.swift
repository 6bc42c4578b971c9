import COpenSSL
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Why a connection to APNs failed.
public struct APNsConnectionError: Error, CustomStringConvertible, Sendable {
    /// A sentence for logs (never a token or a payload).
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// A TLS connection from OpenSSL on a non-blocking socket: the system's trust plus an optional CA
/// file, the server's name (or IP address) verified, ALPN `h2`. Used by one thread.
final class TLSConnection {
    let descriptor: Int32
    private let ssl: OpaquePointer

    private init(descriptor: Int32, ssl: OpaquePointer) {
        self.descriptor = descriptor
        self.ssl = ssl
    }

    deinit {
        SSL_free(ssl)
        close(descriptor)
    }

    /// Connects and completes the TLS handshake before `deadline`, or throws saying what failed.
    static func connect(host: String, port: Int, caFile: String?, deadline: ContinuousClock.Instant) throws
        -> TLSConnection
    {
        let context = try Context.shared(caFile: caFile)
        let descriptor = try openSocket(host: host, port: port, deadline: deadline)
        // Held until SSL_new has counted it: another thread may replace it in the shared table.
        guard let ssl = withExtendedLifetime(context, { SSL_new(context.pointer) }) else {
            close(descriptor)
            throw APNsConnectionError("OpenSSL could not make a TLS session")
        }
        let connection = TLSConnection(descriptor: descriptor, ssl: ssl)
        guard let method = socketMethod, homeport_ssl_set_socket(ssl, method, descriptor) == 1 else {
            throw APNsConnectionError("OpenSSL could not make a socket BIO")
        }
        _ = homeport_ssl_partial_writes(ssl)
        // The certificate must name the host: an IP address by its IP, a name by its name (and SNI).
        let parameters = SSL_get0_param(ssl)
        if host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) {
            _ = X509_VERIFY_PARAM_set1_ip_asc(parameters, host)
        } else {
            _ = homeport_ssl_set_sni(ssl, host)
            _ = SSL_set1_host(ssl, host)
        }
        let alpn: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]
        _ = SSL_set_alpn_protos(ssl, alpn, UInt32(alpn.count))
        while true {
            ERR_clear_error()
            let result = SSL_connect(ssl)
            if result == 1 { break }
            let error = SSL_get_error(ssl, result)
            guard error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE else {
                let verify = SSL_get_verify_result(ssl)
                let reason =
                    verify != X509_V_OK
                    ? "the certificate is not trusted: \(String(cString: X509_verify_cert_error_string(verify)))"
                    : "the TLS handshake failed"
                throw APNsConnectionError("\(host):\(port): \(reason)")
            }
            guard wait(descriptor, error == SSL_ERROR_WANT_READ ? Int16(POLLIN) : Int16(POLLOUT), until: deadline)
            else { throw APNsConnectionError("\(host):\(port): the TLS handshake timed out") }
        }
        var selected: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &selected, &length)
        guard length == 2, let selected, selected[0] == UInt8(ascii: "h"), selected[1] == UInt8(ascii: "2") else {
            throw APNsConnectionError("\(host):\(port) does not speak HTTP/2 (ALPN h2)")
        }
        return connection
    }

    /// OpenSSL's socket BIO, but writing with `MSG_NOSIGNAL`: a host that closed the connection
    /// while a batch goes out fails the write (EPIPE) instead of raising SIGPIPE, which would end
    /// the process wherever the signal is not ignored (`serve` ignores it; a program that embeds
    /// the client may not). Made once, on first use.
    nonisolated(unsafe) private static let socketMethod = homeport_bio_socket_method()

    /// What a read or a write came to.
    enum Progress {
        /// This many bytes.
        case bytes(Int)
        /// Nothing now; wait for the socket to be readable (or writable).
        case wait(readable: Bool)
        /// The peer closed the connection.
        case closed
        /// The connection failed.
        case failed
    }

    /// Writes from `bytes`.
    func write(_ bytes: UnsafeRawBufferPointer) -> Progress {
        ERR_clear_error()
        let result = SSL_write(ssl, bytes.baseAddress, Int32(bytes.count))
        return result > 0 ? .bytes(Int(result)) : progress(after: result)
    }

    /// Reads into `buffer`.
    func read(_ buffer: UnsafeMutableRawBufferPointer) -> Progress {
        ERR_clear_error()
        let result = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
        return result > 0 ? .bytes(Int(result)) : progress(after: result)
    }

    /// Whether OpenSSL holds decrypted bytes not read yet.
    var hasBufferedBytes: Bool { SSL_pending(ssl) > 0 }

    private func progress(after result: Int32) -> Progress {
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: .wait(readable: true)
        case SSL_ERROR_WANT_WRITE: .wait(readable: false)
        case SSL_ERROR_ZERO_RETURN: .closed
        default: .failed
        }
    }

    private static func openSocket(host: String, port: Int, deadline: ContinuousClock.Instant) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &results)
        guard status == 0, let first = results else {
            throw APNsConnectionError("cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(results) }
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        var reason = "no address"
        while let info = candidate {
            candidate = info.pointee.ai_next
            let descriptor = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard descriptor >= 0 else { continue }
            var on: Int32 = 1
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            if Glibc.connect(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return descriptor }
            if errno == EINPROGRESS {
                guard wait(descriptor, Int16(POLLOUT), until: deadline) else {
                    close(descriptor)
                    throw APNsConnectionError("connecting to \(host):\(port) timed out")
                }
                let error = socketError(descriptor)
                if error == 0 { return descriptor }
                reason = String(cString: strerror(error))
            } else {
                reason = String(cString: strerror(errno))
            }
            close(descriptor)
        }
        throw APNsConnectionError("cannot connect to \(host):\(port): \(reason)")
    }

    private static func socketError(_ descriptor: Int32) -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length)
        return error
    }

    /// Waits until `descriptor` is ready for `events`; false at `deadline`.
    static func wait(_ descriptor: Int32, _ events: Int16, until deadline: ContinuousClock.Instant) -> Bool {
        let left = deadline - ContinuousClock.now
        guard left > .zero else { return false }
        var poller = pollfd(fd: descriptor, events: events, revents: 0)
        let millis = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1
        return poll(&poller, 1, Int32(min(millis, Int64(Int32.max)))) > 0 && poller.revents != 0
    }
}
