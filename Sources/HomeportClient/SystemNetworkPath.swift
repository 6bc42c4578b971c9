import Foundation

#if canImport(Network)
    import Network
#endif

/// The network path the machine is on now, as an id for ``HomeportClient/networkPathChanged(to:)``
/// and ``HomeportClient/init(directory:vault:transport:configuration:networkPath:onEvent:)``.
///
/// Like `NWPathMonitor` on Apple platforms, it is derived from how the machine reaches the world:
/// on Linux, the default route's interface and gateway (from `/proc/net/route` and
/// `/proc/net/ipv6_route`) and the gateway's hardware address (from the neighbour table,
/// `/proc/net/arp`). Two networks that hand out the same gateway address (`192.168.1.1` at home
/// and in a café) differ by the gateway's hardware address.
public enum SystemNetworkPath {
    /// The id of the path the machine is on now.
    public static func current() -> String {
        #if os(Linux)
            identifier(
                routes: read("/proc/net/route"), ipv6Routes: read("/proc/net/ipv6_route"),
                neighbours: read("/proc/net/arp"))
        #elseif canImport(Network)
            currentFromMonitor()
        #else
            "unknown"
        #endif
    }

    /// The id for these contents of `/proc/net/route`, `/proc/net/ipv6_route` and `/proc/net/arp`.
    public static func identifier(routes: String, ipv6Routes: String, neighbours: String) -> String {
        var parts: [String] = []
        if let route = defaultIPv4Route(routes) {
            var part = "ipv4 dev \(route.interface) via \(route.gateway)"
            if let hardware = hardwareAddress(of: route.gateway, on: route.interface, in: neighbours) {
                part += " lladdr \(hardware)"
            }
            parts.append(part)
        }
        if let route = defaultIPv6Route(ipv6Routes) {
            parts.append("ipv6 dev \(route.interface) via \(route.gateway)")
        }
        return parts.isEmpty ? "linux: no default route" : "linux: " + parts.joined(separator: "; ")
    }

    /// The usable IPv4 default route with the lowest metric: interface and gateway.
    static func defaultIPv4Route(_ table: String) -> (interface: String, gateway: String)? {
        // Iface Destination Gateway Flags RefCnt Use Metric Mask …; addresses in host-order hex.
        let routes = table.split(separator: "\n").dropFirst().compactMap { line -> (String, String, Int)? in
            let fields = line.split(whereSeparator: \.isWhitespace).map(String.init)
            guard fields.count >= 8, fields[1] == "00000000", fields[7] == "00000000",
                let flags = Int(fields[3], radix: 16), flags & routeUp != 0, flags & routeReject == 0,
                let gateway = UInt32(fields[2], radix: 16), let metric = Int(fields[6])
            else { return nil }
            let bytes = (0..<4).map { String((gateway >> (8 * $0)) & 0xFF) }
            return (fields[0], bytes.joined(separator: "."), metric)
        }
        return routes.min { $0.2 < $1.2 }.map { ($0.0, $0.1) }
    }

    /// The usable IPv6 default route with the lowest metric: interface and next hop.
    static func defaultIPv6Route(_ table: String) -> (interface: String, gateway: String)? {
        // destination prefix-length source source-length next-hop metric refcount use flags interface
        let routes = table.split(separator: "\n").compactMap { line -> (String, String, UInt32)? in
            let fields = line.split(whereSeparator: \.isWhitespace).map(String.init)
            guard fields.count >= 10, fields[0] == String(repeating: "0", count: 32), fields[1] == "00",
                let flags = Int(fields[8], radix: 16), flags & routeUp != 0, flags & routeReject == 0,
                let metric = UInt32(fields[5], radix: 16), fields[9] != "lo"
            else { return nil }
            let hop = fields[4]
            let groups = stride(from: 0, to: 32, by: 4).map {
                String(Int(hop.dropFirst($0).prefix(4), radix: 16) ?? 0, radix: 16)
            }
            return (fields[9], groups.joined(separator: ":"), metric)
        }
        return routes.min { $0.2 < $1.2 }.map { ($0.0, $0.1) }
    }

    /// The hardware address of `address` on `interface` in the neighbour table, when resolved.
    static func hardwareAddress(of address: String, on interface: String, in table: String) -> String? {
        // IP address, HW type, Flags, HW address, Mask, Device
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(whereSeparator: \.isWhitespace).map(String.init)
            guard fields.count >= 6, fields[0] == address, fields[5] == interface,
                let flags = Int(fields[2].dropFirst(2), radix: 16), flags & neighbourComplete != 0
            else { continue }
            return fields[3].lowercased()
        }
        return nil
    }

    private static let routeUp = 0x0001
    private static let routeReject = 0x0200
    private static let neighbourComplete = 0x2

    private static func read(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    #if canImport(Network) && !os(Linux)
        /// One answer from `NWPathMonitor` (waiting at most a second for it).
        private static func currentFromMonitor() -> String {
            final class Box: @unchecked Sendable {
                let lock = NSLock()
                var identifier = "unknown"
            }
            let box = Box()
            let ready = DispatchSemaphore(value: 0)
            let monitor = NWPathMonitor()
            monitor.pathUpdateHandler = { path in
                let identifier = NetworkPathMonitor.identifier(of: path)
                box.lock.withLock { box.identifier = identifier }
                ready.signal()
            }
            monitor.start(queue: DispatchQueue(label: "homeport.network-path.once"))
            _ = ready.wait(timeout: .now() + 1)
            monitor.cancel()
            return box.lock.withLock { box.identifier }
        }
    #endif
}
