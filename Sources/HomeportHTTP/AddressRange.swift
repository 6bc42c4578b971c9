import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A block of IP addresses: `10.0.0.0/8`, `fd00::/8`, or one address (`127.0.0.1`, `::1`).
package struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    /// The network, host bits cleared.
    let network: IPAddress
    /// How many leading bits must match.
    let prefixLength: Int

    /// Parses `ADDRESS[/BITS]`; throws a message fit for a user.
    package init(parsing text: String) throws {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let address = IPAddress(String(parts[0])) else {
            throw AddressRangeError(text: text)
        }
        let maximum = address.isV4 ? 32 : 128
        let length = parts.count == 2 ? Int(parts[1]) : maximum
        guard let length, (0...maximum).contains(length) else { throw AddressRangeError(text: text) }
        network = address.masked(to: length)
        prefixLength = length
    }

    /// Whether `address` (an IP literal, IPv4 or IPv6; an IPv4 address mapped into IPv6 counts as
    /// IPv4) lies in the block.
    package func contains(_ address: String) -> Bool {
        IPAddress(address).map(contains) ?? false
    }

    /// Whether `address` lies in the block.
    func contains(_ address: IPAddress) -> Bool {
        address.isV4 == network.isV4 && address.masked(to: prefixLength) == network
    }

    /// `network/bits`.
    package var description: String {
        "\(network.text)/\(prefixLength)"
    }

    /// `address` as one client is always spelled: an IPv4 address mapped into IPv6
    /// (`::ffff:192.0.2.7`, as a dual-stack socket or a proxy reports it) as the IPv4 address
    /// (`192.0.2.7`), anything else as it is. Budgets, logs and caps then count an IPv4 client
    /// once, and never in the one IPv6 block every mapped address shares.
    package static func canonical(_ address: String) -> String {
        guard address.utf8.contains(UInt8(ascii: ":")), let parsed = IPAddress(address) else { return address }
        return canonical(address, parsed)
    }

    /// `text`, which names `address`, in its ``canonical(_:)`` spelling.
    static func canonical(_ text: String, _ address: IPAddress) -> String {
        address.isV4 && text.utf8.contains(UInt8(ascii: ":")) ? address.text : text
    }

    /// The bucket a client address counts in for budgets and fair shares: an IPv4 address (mapped
    /// ones included) as it is, an IPv6 address by its /64 (`2001:db8:1:2::/64`: one subscriber's
    /// network, which hands out as many addresses as it likes), anything else as it is.
    package static func bucket(_ address: String) -> String {
        let address = canonical(address)
        guard address.utf8.contains(UInt8(ascii: ":")), let parsed = IPAddress(address), !parsed.isV4 else {
            return address
        }
        return stride(from: 48, through: 0, by: -16).map {
            String(UInt16(truncatingIfNeeded: parsed.high >> $0), radix: 16)
        }
        .joined(separator: ":") + "::/64"
    }
}

/// An address block that is not `ADDRESS[/BITS]`.
package struct AddressRangeError: Error, CustomStringConvertible, Equatable {
    /// What the user typed.
    package var text: String

    /// A sentence for the user.
    package var description: String {
        "'\(text)' is not an address or a block of them; use an IP address, or one with /BITS, such as 10.0.0.0/8 or fd00::/8"
    }
}
