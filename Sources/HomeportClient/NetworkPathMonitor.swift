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

        /// Starts monitoring and tells `client` about every change. The first report is the path
        /// the app started on, not a move: an HTTPS address another launch verified on it within
        /// the winner's lifetime is still taken without a probe.
        public init(client: HomeportClient) {
            let first = FirstReport()
            monitor.pathUpdateHandler = { path in
                client.pathReported(Self.identifier(of: path), initial: first.take())
            }
            monitor.start(queue: queue)
        }

        deinit {
            monitor.cancel()
        }

        /// Whether a report is the monitor's first (the handler runs on one serial queue).
        private final class FirstReport: @unchecked Sendable {
            private let lock = NSLock()
            private var seen = false

            func take() -> Bool {
                lock.withLock {
                    defer { seen = true }
                    return !seen
                }
            }
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
