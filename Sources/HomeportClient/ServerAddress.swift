import Foundation

/// One base URL of a server (`https://books.example.net`, `http://192.168.1.20:8080`), with the
/// transport the user chose for it.
public struct ServerAddress: Codable, Hashable, Sendable, CustomStringConvertible {
    /// The base URL, normalised: scheme and host lowercase, no trailing slash, no query.
    public let url: String
    /// Whether plain HTTP was explicitly allowed for this address.
    public let allowsHTTP: Bool

    /// Parses and checks an address; plain HTTP only with `allowHTTP`.
    public init(parsing text: String, allowHTTP: Bool = false) throws {
        guard let components = URLComponents(string: text.trimmingCharacters(in: .whitespaces)),
            let scheme = components.scheme?.lowercased(), scheme == "https" || scheme == "http",
            let host = components.host, !host.isEmpty, components.user == nil, components.password == nil,
            components.query == nil, components.fragment == nil
        else { throw ClientError.invalidAddress(text) }
        if scheme == "http" && !allowHTTP { throw ClientError.plainHTTPNotAllowed(text) }
        var path = components.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        // Built by hand: URLComponents drops the brackets of an IPv6 literal when its host is set.
        let bare = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let shownHost = bare.contains(":") ? "[\(bare)]" : bare
        let normalized = "\(scheme)://\(shownHost)\(components.port.map { ":\($0)" } ?? "")\(path)"
        guard URL(string: normalized) != nil else { throw ClientError.invalidAddress(text) }
        self.url = normalized
        self.allowsHTTP = scheme == "http"
    }

    /// The URL of `path` (which starts with `/`) under this address.
    public func url(_ path: String) -> URL? { URL(string: url + path) }

    /// `scheme://host:port`, for comparing where a redirect goes.
    public var origin: String { Self.origin(of: URL(string: url)) ?? url }

    /// The origin of a URL, with the default port made explicit and an IPv6 literal in brackets
    /// (`http://[::1]:8080`), as it is written in a URL; with `canonical`, its host as
    /// ``canonicalHost(_:)`` writes it.
    static func origin(of url: URL?, canonical: Bool = false) -> String? {
        guard let url, let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        var bare = ServerText.clean(host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")))
        if canonical { bare = canonicalHost(bare) }
        return bare.contains(":") ? "\(scheme)://[\(bare)]:\(port)" : "\(scheme)://\(bare):\(port)"
    }

    /// Where this address leads, however it is spelled: its origin with the host in one
    /// spelling (a name's final dot dropped, an IP address as `inet_ntop` writes it: `127.1` is
    /// `127.0.0.1`, `[fe80:0::1]` is `[fe80::1]`, `[::ffff:10.0.0.1]` is `10.0.0.1`). For
    /// telling whether an address is one a record knows, where a proof is owed: there two
    /// spellings that might lead to one place count as one. Where a credential may go (a
    /// redirect, a request's URL), ``origin`` is compared as written.
    var place: String { Self.origin(of: URL(string: url), canonical: true) ?? url }

    /// `host` (lowercase, without brackets) in one spelling of its place: an IPv6 address as
    /// `inet_ntop` writes it (one that carries an IPv4 address, `::ffff:a.b.c.d`, as that
    /// address), an IPv4 one read as `inet_aton` and curl read it, a name without its final dot.
    static func canonicalHost(_ host: String) -> String {
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            let bytes = withUnsafeBytes(of: &v6) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
                return bytes[12..<16].map(String.init).joined(separator: ".")
            }
            if let text = written(AF_INET6, &v6, length: INET6_ADDRSTRLEN) { return text }
        }
        var v4 = in_addr()
        if !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == "." || $0 == "x" }), inet_aton(host, &v4) != 0,
            let text = written(AF_INET, &v4, length: INET_ADDRSTRLEN)
        {
            return text
        }
        var name = host
        while name.hasSuffix(".") { name.removeLast() }
        return name
    }

    /// An address as `inet_ntop` writes it.
    private static func written(_ family: Int32, _ address: UnsafeRawPointer, length: Int32) -> String? {
        var text = [CChar](repeating: 0, count: Int(length))
        guard inet_ntop(family, address, &text, socklen_t(text.count)) != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The URL.
    public var description: String { url }
}
