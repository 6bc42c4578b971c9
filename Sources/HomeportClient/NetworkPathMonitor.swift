#if canImport(Network)
    import Foundation
    import Network

    /// Feeds network-path changes from `NWPathMonitor` into a ``HomeportClient``.
    ///
    /// The path id is built from the interfaces in use (type and name) and whether the path is
    /// expensive: joining another Wi-Fi, or moving to cellular, gives a new id, and the client then
    /// probes again before any credential is sent on the new path.
    public final class NetworkPathMonitor: @unchecked Sendable {
        private let monitor = NWPathMonitor()
        private let queue = DispatchQueue(label: "homeport.network-path")

        /// Starts monitoring and tells `client` about every change.
        public init(client: HomeportClient) {
            monitor.pathUpdateHandler = { path in
                client.networkPathChanged(to: Self.identifier(of: path))
            }
            monitor.start(queue: queue)
        }

        deinit {
            monitor.cancel()
        }

        /// A stable id for a path: its status, its interfaces, its gateways and whether it is expensive.
        /// Two Wi-Fi networks on the same interface differ by their gateways (and the client drops its
        /// choices on every update anyway).
        public static func identifier(of path: NWPath) -> String {
            let interfaces = path.availableInterfaces.map { "\($0.type):\($0.name)" }.joined(separator: ",")
            let gateways = path.gateways.map { "\($0)" }.joined(separator: ",")
            return "\(path.status):\(interfaces):\(gateways):\(path.isExpensive ? "expensive" : "free")"
        }
    }
#endif
