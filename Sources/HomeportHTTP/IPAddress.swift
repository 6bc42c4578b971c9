#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IP address held in two words, read from its text without an allocation: what the checks
/// made on every request compare (is the peer a trusted proxy, which hop is the client).
/// An IPv4 address mapped into IPv6 (`::ffff:a.b.c.d`) is that IPv4 address.
package struct IPAddress: Equatable, Sendable {
    /// The first 64 bits, big-endian (0 for IPv4).
    package var high: UInt64
    /// The last 64 bits, big-endian (IPv4: the address in the low 32).
    var low: UInt64
    /// Whether it is an IPv4 address.
    package var isV4: Bool

    /// The address an IP literal names, or `nil` for anything else.
    package init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.init(v4: UInt32(bigEndian: v4.s_addr))
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let (high, low) = withUnsafeBytes(of: &v6) { bytes in
            (
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
        if high == 0 && low >> 32 == 0xFFFF {
            self.init(v4: UInt32(truncatingIfNeeded: low))
        } else {
            self.init(high: high, low: low, isV4: false)
        }
    }

    init(v4: UInt32) {
        self.init(high: 0, low: UInt64(v4), isV4: true)
    }

    init(high: UInt64, low: UInt64, isV4: Bool) {
        self.high = high
        self.low = low
        self.isV4 = isV4
    }

    /// The address with every bit past the first `length` cleared.
    func masked(to length: Int) -> IPAddress {
        if isV4 {
            let mask: UInt64 = length <= 0 ? 0 : (0xFFFF_FFFF << (32 - min(length, 32))) & 0xFFFF_FFFF
            return IPAddress(high: 0, low: low & mask, isV4: true)
        }
        let highMask: UInt64 = length <= 0 ? 0 : length >= 64 ? .max : .max << (64 - length)
        let lowMask: UInt64 = length <= 64 ? 0 : length >= 128 ? .max : .max << (128 - length)
        return IPAddress(high: high & highMask, low: low & lowMask, isV4: false)
    }

    /// The address's text: dotted for IPv4, `inet_ntop`'s shortest form for IPv6.
    var text: String {
        guard !isV4 else {
            let value = UInt32(truncatingIfNeeded: low)
            return "\(value >> 24).\(value >> 16 & 0xFF).\(value >> 8 & 0xFF).\(value & 0xFF)"
        }
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { bytes in
            bytes.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
            bytes.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
        }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        _ = inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count))
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
