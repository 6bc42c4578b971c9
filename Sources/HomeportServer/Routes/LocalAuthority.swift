import Foundation
import HomeportHTTP
import Synchronization

/// The authorities only a local network reaches, and who may have an identity challenge signed
/// for one.
///
/// The same private address is somebody else's machine on another network. An impostor there,
/// answering at the address a client dialled, could pass the client's fresh challenge on to this
/// server through its public name, naming that address in `Host`, and hand the signature back:
/// the client would take it for the installation and send a plain-HTTP address its credential.
/// So a local authority is signed for only when the request comes from a local network itself:
/// from a private, shared (100.64/10) or loopback address, an IPv6 address in the /64 of one of
/// this machine's own (a home's IPv6 clients have global addresses), or this host's Unix-domain
/// socket, through no forwarding hop (`X-Forwarded-For`, `Forwarded`, `X-Real-IP`, whoever wrote
/// them) that names anything else.
enum LocalAuthority {
    /// Whether `host` (as ``IdentityProof/host(of:)`` writes it) names a place only a local
    /// network reaches: a private, shared, link-local or loopback address (with or without a
    /// zone, `fe80::1%eth0`), `localhost`, a name without a dot, or a name under one of
    /// ``localSuffixes``. (A public name that resolves to a private address is not told apart.)
    static func isLocal(host: String) -> Bool {
        var name = host.lowercased()
        while name.hasSuffix(".") { name.removeLast() }
        if let zone = name.firstIndex(of: "%") { name = String(name[..<zone]) }
        if NetworkAddress.isPrivate(host: name) { return true }
        if !name.contains(".") && !name.contains(":") { return true }
        return localSuffixes.contains { name.hasSuffix($0) }
    }

    /// The names home and office networks give their machines: mDNS's, RFC 8375's, and the
    /// common routers' and intranets' own.
    static let localSuffixes = [
        ".local", ".lan", ".home", ".home.arpa", ".internal", ".localdomain", ".intranet", ".private", ".corp",
        ".fritz.box", ".speedport.ip",
    ]

    /// Whether `request` may have a challenge signed for `host`: any request for a public
    /// authority; for a local one, only a request from a local network (see the type), as
    /// `prefixes` (the /64s of this machine's IPv6 addresses) tell for IPv6.
    static func mayProve(host: String, for request: HTTPRequest, prefixes: Set<UInt64> = localPrefixes()) -> Bool {
        guard isLocal(host: host) else { return true }
        func local(_ address: String) -> Bool {
            NetworkAddress.isPrivate(host: address) || prefix(of: address).map(prefixes.contains) == true
        }
        guard request.remoteAddress == TrustedProxies.unixPeer || local(request.remoteAddress) else { return false }
        return TrustedProxies.forwardedHops(request.headers).allSatisfy { hop in hop.map(local) ?? false }
    }

    /// The first 64 bits of an IPv6 address as text; `nil` for anything else, and for an address
    /// whose first 64 bits are zero (`::1`, and `::ffff:a.b.c.d`, an IPv4 client of a dual-stack
    /// socket, which is no home's /64).
    static func prefix(of address: String) -> UInt64? {
        guard let parsed = IPAddress(address), !parsed.isV4, parsed.high != 0 else { return nil }
        return parsed.high
    }

    /// The /64s of this machine's global IPv6 addresses (loopback, link-local and unique-local
    /// ones are private anyway), read again at most once a minute.
    static func localPrefixes() -> Set<UInt64> {
        let now = ContinuousClock.now
        if let cached = cache.withLock({ $0 }), now - cached.read < .seconds(60) { return cached.prefixes }
        let prefixes = Set(
            CertificateNames.interfaceAddresses().filter { !NetworkAddress.isPrivate(host: $0) }.compactMap(
                prefix(of:)))
        cache.withLock { $0 = (now, prefixes) }
        return prefixes
    }

    private static let cache = Mutex<(read: ContinuousClock.Instant, prefixes: Set<UInt64>)?>(nil)
}
