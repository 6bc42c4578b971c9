import Foundation

/// The reverse proxies whose word about the client is taken: from one of them, the client's
/// address comes from the one header the operator named (`X-Forwarded-For` unless told
/// otherwise); the other is ignored, whoever sends it. From anyone else both are ignored.
///
/// One header, not a preference between two: nginx and Caddy add to `X-Forwarded-For` and pass a
/// client's own `Forwarded` through untouched, so a server that preferred `Forwarded` let every
/// client behind them name its own address.
package struct TrustedProxies: Sendable, Equatable {
    /// The header a trusted proxy names the client in.
    package enum Header: String, Sendable, CaseIterable {
        /// `X-Forwarded-For: client, proxy1, …` (nginx's `$proxy_add_x_forwarded_for`, Caddy, Traefik).
        case xForwardedFor = "x-forwarded-for"
        /// `Forwarded: for=client, for=proxy1` (RFC 7239).
        case forwarded = "forwarded"
    }

    /// The blocks proxies connect from.
    package var ranges: [AddressRange]
    /// The one header read.
    package var header: Header
    /// Whether a peer on the server's Unix-domain socket is a proxy: set when the server listens
    /// on one, which only processes on this host that may open the socket file reach. Such a
    /// peer has no address (``unixPeer``); its header names the client as a trusted proxy's does.
    package var trustsLocalSocket = false

    /// The client address of a peer on a Unix-domain socket, which has none: what the log and
    /// the per-client limits see when no trusted proxy named the client.
    package static let unixPeer = "unix"

    /// Whether any peer's word is taken: otherwise no header is read at all.
    package var isActive: Bool { trustsLocalSocket || !ranges.isEmpty }

    /// Trusts proxies in `ranges` (none: every header is ignored), reading `header`.
    package init(_ ranges: [AddressRange] = [], header: Header = .xForwardedFor) {
        self.ranges = ranges
        self.header = header
    }

    /// Parses `CIDR,CIDR,…`.
    package init(parsing list: String, header: Header = .xForwardedFor) throws {
        ranges = try list.split(separator: ",").map { try AddressRange(parsing: String($0)) }
        self.header = header
    }

    /// Whether `address` is a trusted proxy's.
    package func trusts(_ address: String) -> Bool {
        IPAddress(address).map(trusts) ?? false
    }

    func trusts(_ address: IPAddress) -> Bool {
        ranges.contains { $0.contains(address) }
    }

    /// The client's address for a request from `peer` with `headers`, in its
    /// ``AddressRange/canonical(_:)`` spelling.
    ///
    /// From an untrusted peer: the peer. From a trusted one (or ``unixPeer`` when
    /// ``trustsLocalSocket``), the hops the proxies recorded in
    /// ``header`` (every such field in order) are read from the right, the nearest first: the
    /// first that is not a trusted proxy is the client, since the hops to its left are whatever
    /// the client chose to send. Every hop trusted: the leftmost. A hop that is not an IP address
    /// (`unknown`, an obfuscated name, garbage) ends the search with the peer itself, so a client
    /// can never pick its own address. Read over the fields' bytes: this runs on every request
    /// a proxy passes on.
    package func clientAddress(peer: String, headers: [(name: String, value: String)]) -> String {
        let peer = AddressRange.canonical(peer)
        let trustedPeer =
            peer == Self.unixPeer ? trustsLocalSocket : !ranges.isEmpty && (IPAddress(peer).map(trusts) ?? false)
        guard trustedPeer else { return peer }
        var leftmost = peer
        for field in headers.reversed() where field.name.caseInsensitiveEquals(header.rawValue) {
            for hop in Self.hops(field.value, header).reversed() {
                guard let found = Self.address(of: hop) else { return peer }
                guard trusts(found.address) else { return found.text }
                leftmost = found.text
            }
        }
        return leftmost
    }

    /// Every hop the forwarding fields of `headers` name (`X-Forwarded-For`, `Forwarded`'s
    /// `for=`, `X-Real-IP`), whoever sent them, each in its canonical spelling, or `nil` for a hop
    /// that is no IP address (`unknown`, an obfuscated name, garbage).
    package static func forwardedHops(_ headers: some Sequence<(name: String, value: String)>) -> [String?] {
        var hops: [String?] = []
        for field in headers {
            // `X-Real-IP` names one client as `X-Forwarded-For` names several.
            let header: Header? =
                field.name.caseInsensitiveEquals("x-real-ip")
                ? .xForwardedFor : Header.allCases.first { field.name.caseInsensitiveEquals($0.rawValue) }
            guard let header else { continue }
            hops += Self.hops(field.value, header).map { address(of: $0)?.text }
        }
        return hops
    }

    /// The hops one field of `header` names, left to right.
    static func hops(_ value: String, _ header: Header) -> [Substring.UTF8View] {
        switch header {
        case .xForwardedFor: elements(of: value)
        case .forwarded: forwardedFor(value)
        }
    }

    /// A list field's elements (`a, b,c`), each without the spaces and tabs around it; empty
    /// elements (`a,,b`) are skipped, a blank one (`a, ,b`) is kept (and is no address).
    static func elements(of value: String) -> [Substring.UTF8View] {
        value.utf8.split(separator: UInt8(ascii: ",")).map(trimmed)
    }

    /// The `for=` values of a `Forwarded` field, element by element (`unknown` for an element
    /// without one).
    static func forwardedFor(_ value: String) -> [Substring.UTF8View] {
        elements(of: value).map { element in
            for pair in element.split(separator: UInt8(ascii: ";")) {
                guard let equals = pair.firstIndex(of: UInt8(ascii: "=")) else { continue }
                let name = trimmed(pair[..<equals])
                guard name.count == 3, name.elementsEqual("for".utf8, by: { $0 | 0x20 == $1 }) else { continue }
                return trimmed(pair[pair.index(after: equals)...])
            }
            return "unknown".utf8[...]
        }
    }

    private static func trimmed(_ text: Substring.UTF8View) -> Substring.UTF8View {
        let blank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = text.firstIndex(where: { !blank($0) }), let last = text.lastIndex(where: { !blank($0) })
        else { return text[text.endIndex...] }
        return text[first...last]
    }

    /// The IP address of a hop, in its canonical spelling and parsed: quotes, brackets and a port
    /// taken off; `nil` when it is none.
    static func address(of hop: Substring.UTF8View) -> (text: String, address: IPAddress)? {
        var text = hop
        let quote = UInt8(ascii: "\"")
        if text.count >= 2 && text.first == quote && text.last == quote { text = text.dropFirst().dropLast() }
        if text.first == UInt8(ascii: "[") {
            guard let close = text.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            text = text[text.index(after: text.startIndex)..<close]
        } else if let colon = text.firstIndex(of: UInt8(ascii: ":")),
            !text[text.index(after: colon)...].contains(UInt8(ascii: ":"))
        {
            text = text[..<colon]
        }
        let candidate = String(decoding: text, as: UTF8.self)
        guard let address = IPAddress(candidate) else { return nil }
        return (AddressRange.canonical(candidate, address), address)
    }
}
