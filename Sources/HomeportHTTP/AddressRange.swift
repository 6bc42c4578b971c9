import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A block of IP addresses: `10.0.0.0/8`, `fd00::/8`, or one address (`127.0.0.1`, `::1`).
public struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    /// The network's bytes (4 for IPv4, 16 for IPv6).
    let network: [UInt8]
    /// How many leading bits must match.
    let prefixLength: Int
    /// The network as the per-request checks compare it.
    private let block: IPAddress

    /// Parses `ADDRESS[/BITS]`; throws a message fit for a user.
    public init(parsing text: String) throws {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let bytes = Self.bytes(of: String(parts[0])),
            let address = IPAddress(String(parts[0]))
        else {
            throw AddressRangeError(text: text)
        }
        let maximum = bytes.count * 8
        let length = parts.count == 2 ? Int(parts[1]) : maximum
        guard let length, (0...maximum).contains(length) else { throw AddressRangeError(text: text) }
        network = Self.masked(bytes, to: length)
        prefixLength = length
        block = address.masked(to: length)
    }

    /// Whether `address` (an IP literal, IPv4 or IPv6; an IPv4 address mapped into IPv6 counts as
    /// IPv4) lies in the block.
    public func contains(_ address: String) -> Bool {
        IPAddress(address).map(contains) ?? false
    }

    /// Whether `address` lies in the block.
    func contains(_ address: IPAddress) -> Bool {
        address.isV4 == block.isV4 && address.masked(to: prefixLength) == block
    }

    /// `network/bits`.
    public var description: String {
        let text =
            network.count == 4
            ? network.map(String.init).joined(separator: ".")
            : Self.text(ofIPv6: network)
        return "\(text)/\(prefixLength)"
    }

    /// `address` as one client is always spelled: an IPv4 address mapped into IPv6
    /// (`::ffff:192.0.2.7`, as a dual-stack socket or a proxy reports it) as the IPv4 address
    /// (`192.0.2.7`), anything else as it is. Budgets, logs and caps then count an IPv4 client
    /// once, and never in the one IPv6 block every mapped address shares.
    public static func canonical(_ address: String) -> String {
        guard address.utf8.contains(UInt8(ascii: ":")), let parsed = IPAddress(address), parsed.isV4 else {
            return address
        }
        return parsed.v4Text
    }

    /// The bucket a client address counts in for budgets and fair shares: an IPv4 address (mapped
    /// ones included) as it is, an IPv6 address by its /64 (`2001:db8:1:2::/64`: one subscriber's
    /// network, which hands out as many addresses as it likes), anything else as it is.
    public static func bucket(_ address: String) -> String {
        let address = canonical(address)
        guard address.utf8.contains(UInt8(ascii: ":")), let bytes = bytes(of: address), bytes.count == 16 else {
            return address
        }
        return stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":") + "::/64"
    }

    /// The bytes of an IP literal, or `nil`; `::ffff:a.b.c.d` gives the IPv4 address's four.
    static func bytes(of text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return Array(bytes[12..<16])
        }
        return bytes
    }

    private static func masked(_ bytes: [UInt8], to length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let bits = max(0, min(8, length - index * 8))
            return bits == 8 ? byte : byte & ~(UInt8(0xFF) >> bits)
        }
    }

    private static func text(ofIPv6 bytes: [UInt8]) -> String {
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        _ = inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count))
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// An address block that is not `ADDRESS[/BITS]`.
public struct AddressRangeError: Error, CustomStringConvertible, Equatable {
    /// What the user typed.
    public var text: String

    /// A sentence for the user.
    public var description: String {
        "'\(text)' is not an address or a block of them; use an IP address, or one with /BITS, such as 10.0.0.0/8 or fd00::/8"
    }
}
