import Foundation

/// The reverse proxies whose word about the client is taken: from one of them, the client's
/// address comes from the one header the operator named (`X-Forwarded-For` unless told
/// otherwise); the other is ignored, whoever sends it. From anyone else both are ignored.
///
/// One header, not a preference between two: nginx and Caddy add to `X-Forwarded-For` and pass a
/// client's own `Forwarded` through untouched, so a server that preferred `Forwarded` let every
/// client behind them name its own address.
public struct TrustedProxies: Sendable, Equatable {
    /// The header a trusted proxy names the client in.
    public enum Header: String, Sendable, CaseIterable {
        /// `X-Forwarded-For: client, proxy1, …` (nginx's `$proxy_add_x_forwarded_for`, Caddy, Traefik).
        case xForwardedFor = "x-forwarded-for"
        /// `Forwarded: for=client, for=proxy1` (RFC 7239).
        case forwarded = "forwarded"
    }

    /// The blocks proxies connect from.
    public var ranges: [AddressRange]
    /// The one header read.
    public var header: Header

    /// Trusts proxies in `ranges` (none: every header is ignored), reading `header`.
    public init(_ ranges: [AddressRange] = [], header: Header = .xForwardedFor) {
        self.ranges = ranges
        self.header = header
    }

    /// Parses `CIDR,CIDR,…`.
    public init(parsing list: String, header: Header = .xForwardedFor) throws {
        ranges = try list.split(separator: ",").map { try AddressRange(parsing: String($0)) }
        self.header = header
    }

    /// Whether `address` is a trusted proxy's.
    public func trusts(_ address: String) -> Bool {
        ranges.contains { $0.contains(address) }
    }

    /// The client's address for a request from `peer` with `headers`, in its
    /// ``AddressRange/canonical(_:)`` spelling.
    ///
    /// From an untrusted peer: the peer. From a trusted one, the hops the proxies recorded in
    /// ``header`` (every such field in order) are read from the right, the nearest first: the
    /// first that is not a trusted proxy is the client, since the hops to its left are whatever
    /// the client chose to send. Every hop trusted: the leftmost. A hop that is not an IP address
    /// (`unknown`, an obfuscated name, garbage) ends the search with the peer itself, so a client
    /// can never pick its own address.
    public func clientAddress(peer: String, headers: [(name: String, value: String)]) -> String {
        let peer = AddressRange.canonical(peer)
        guard !ranges.isEmpty, trusts(peer) else { return peer }
        let fields = headers.filter { $0.name.caseInsensitiveEquals(header.rawValue) }
        let hops: [String] =
            switch header {
            case .xForwardedFor:
                fields.flatMap { $0.value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            case .forwarded: fields.flatMap { Self.forwardedFor($0.value) }
            }
        var leftmost = peer
        for hop in hops.reversed() {
            guard let address = Self.address(of: hop).map(AddressRange.canonical) else { return peer }
            guard trusts(address) else { return address }
            leftmost = address
        }
        return leftmost
    }

    /// The `for=` values of a `Forwarded` field, element by element.
    static func forwardedFor(_ value: String) -> [String] {
        value.split(separator: ",").compactMap { element in
            for pair in element.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "for" else {
                    continue
                }
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
            return "unknown"
        }
    }

    /// The IP address of a hop: quotes, brackets and a port taken off; `nil` when it is none.
    static func address(of hop: String) -> String? {
        var text = Substring(hop)
        if text.hasPrefix("\"") && text.hasSuffix("\"") && text.count >= 2 { text = text.dropFirst().dropLast() }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            text = text[text.index(after: text.startIndex)..<close]
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            text = text[..<colon]
        }
        let candidate = String(text)
        return AddressRange.bytes(of: candidate) == nil ? nil : candidate
    }
}
