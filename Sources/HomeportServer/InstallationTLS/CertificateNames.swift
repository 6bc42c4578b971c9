import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The names and addresses an installation certificate lists. A pinning client checks none of
/// them (the key is the proof); they are there for people and tools that look.
struct CertificateNames: Sendable, Equatable {
    /// DNS names, sorted.
    var dns: [String]
    /// IP addresses as text, sorted.
    var ips: [String]

    /// The names of hosts a listener is reached by: each of `hosts` (listen addresses, the public
    /// URL's host), the machine's name and its `.local` name, `localhost` and the loopback
    /// addresses; and, when a host is a wildcard (`0.0.0.0`, `::`), every address of the
    /// machine's interfaces (`interfaces`), link-local ones with a zone left out.
    static func gather(hosts: [String], interfaces: () -> [String] = CertificateNames.interfaceAddresses)
        -> CertificateNames
    {
        var dns: Set<String> = ["localhost"]
        var ips: Set<String> = ["127.0.0.1", "::1"]
        if let name = hostName() {
            dns.insert(name)
            if !name.contains(".") { dns.insert(name + ".local") }
        }
        var wildcard = false
        for host in hosts {
            let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
            if ["0.0.0.0", "::", "*", ""].contains(bare) {
                wildcard = true
            } else if isIPAddress(bare) {
                ips.insert(bare)
            } else if isDNSName(bare) {
                dns.insert(bare.lowercased())
            }
        }
        if wildcard { ips.formUnion(interfaces().filter(isIPAddress)) }
        return CertificateNames(dns: dns.sorted(), ips: ips.sorted())
    }

    /// Whether `text` is an IPv4 or IPv6 address with no zone.
    static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    /// Whether `text` is a host name a certificate may list.
    static func isDNSName(_ text: String) -> Bool {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")
        return !text.isEmpty && text.count <= 253 && text.allSatisfy(allowed.contains) && !text.hasPrefix(".")
            && !text.hasPrefix("-")
    }

    /// This machine's host name, when it is one a certificate may list.
    private static func hostName() -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return nil }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .lowercased()
        return isDNSName(name) ? name : nil
    }

    /// The IPv4 and IPv6 addresses of the machine's interfaces (`getifaddrs`).
    static func interfaceAddresses() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var addresses: [String] = []
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            guard let address = entry.pointee.ifa_addr else { continue }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                var bytes = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                guard inet_ntop(AF_INET, &bytes, &text, socklen_t(text.count)) != nil else { continue }
            case AF_INET6:
                var bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                guard inet_ntop(AF_INET6, &bytes, &text, socklen_t(text.count)) != nil else { continue }
            default: continue
            }
            let written = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // A link-local IPv6 address means nothing without its zone, which no certificate holds.
            if !written.lowercased().hasPrefix("fe80:") { addresses.append(written) }
        }
        return addresses
    }
}
