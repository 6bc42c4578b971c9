import Foundation
import HomeportCurl

/// Which hosts name this machine or a private network, by their spelling (a name is not
/// resolved: a public name that resolves to a private address is not caught here).
enum NetworkAddress {
    /// Whether `host` (a name, an IPv4 address, or an IPv6 address with or without brackets) is
    /// `localhost`, or an address that is unspecified, loopback, private (RFC 1918), shared
    /// (100.64/10), link-local, or unique-local (fc00::/7), an IPv4 one mapped into IPv6 too.
    static func isPrivate(host: String) -> Bool {
        let bare = bare(host)
        if bare == "localhost" || bare.hasSuffix(".localhost") { return true }
        guard let bytes = address(bare) else { return false }
        if bytes.count == 4 { return isPrivate(bytes) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return isPrivate(Array(bytes[12..<16]))
        }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && (bytes[15] == 0 || bytes[15] == 1) { return true }
        return bytes[0] & 0xFE == 0xFC || (bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80)
    }

    /// Whether `host` spells a link-local address (169.254/16, fe80::/10, fd00:ec2::254, also as
    /// an IPv6 form that carries an IPv4 one), as ``CurlReach/notLinkLocal`` refuses at connect.
    static func isLinkLocal(host: String) -> Bool {
        address(bare(host)).map(CurlReach.isLinkLocal) ?? false
    }

    /// `host` in lowercase, without IPv6 brackets or a name's final dot (`localhost.` is
    /// `localhost`: the final dot changes nothing a name resolves to).
    private static func bare(_ host: String) -> String {
        var bare = host.lowercased()
        if bare.hasPrefix("[") && bare.hasSuffix("]") { bare = String(bare.dropFirst().dropLast()) }
        if bare.hasSuffix(".") { bare = String(bare.dropLast()) }
        return bare
    }

    /// The address `bare` spells: four octets (IPv4, as ``ipv4(_:)`` reads it) or sixteen
    /// (IPv6); `nil` for a name.
    private static func address(_ bare: String) -> [UInt8]? {
        if let octets = ipv4(bare) { return octets }
        var address = in6_addr()
        guard inet_pton(AF_INET6, bare, &address) == 1 else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    /// The four octets of a dotted IPv4 address (as inet_aton reads it, so `127.1` and
    /// `0x7f.0.0.1` are caught as what they are).
    private static func ipv4(_ text: String) -> [UInt8]? {
        var address = in_addr()
        guard !text.isEmpty, text.allSatisfy({ $0.isHexDigit || $0 == "." || $0 == "x" }),
            inet_aton(text, &address) != 0
        else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    private static func isPrivate(_ octets: [UInt8]) -> Bool {
        switch (octets[0], octets[1]) {
        case (0, _), (10, _), (127, _): true
        case (100, 64...127), (169, 254), (172, 16...31), (192, 168): true
        default: false
        }
    }
}
