import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback port nothing answers on for as long as this lives: a socket bound to it that does
/// not listen, so a connection is refused at once and no other test's server can take the port.
public final class DeadPort: @unchecked Sendable {
    private let descriptor: Int32
    /// The port.
    public let port: Int

    /// Binds `port` on `host` (by default a free port on 127.0.0.1) without listening.
    public init(host: String = "127.0.0.1", port wanted: Int = 0) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RawHTTPError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        address.sin_port = UInt16(wanted).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw RawHTTPError("bind failed")
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }
}
