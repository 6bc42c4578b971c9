import Synchronization

/// What each enrolled server sent through this gateway process, for `/metrics`: pushes Apple
/// accepted, pushes refused (by the gateway or by Apple) and pushes Apple did not answer.
final class GatewayCounters: Sendable {
    private let counts = Mutex<[String: (delivered: Int, refused: Int, failed: Int)]>([:])

    /// Adds a batch's outcomes to `server`'s counts.
    func add(server: String, delivered: Int, refused: Int, failed: Int) {
        counts.withLock {
            let now = $0[server] ?? (0, 0, 0)
            $0[server] = (now.delivered + delivered, now.refused + refused, now.failed + failed)
        }
    }

    /// The counts in Prometheus's text format, one series per server and outcome.
    func render() -> String {
        let snapshot = counts.withLock { $0 }.sorted { $0.key < $1.key }
        var text = """
            # HELP homeport_gateway_pushes_total Pushes each enrolled server sent through this process, by outcome.
            # TYPE homeport_gateway_pushes_total counter

            """
        for (server, count) in snapshot {
            // Server names are a-z 0-9 . _ - (checked when enrolled): nothing to escape.
            for (outcome, value) in [
                ("delivered", count.delivered), ("refused", count.refused), ("failed", count.failed),
            ] {
                text += "homeport_gateway_pushes_total{server=\"\(server)\",outcome=\"\(outcome)\"} \(value)\n"
            }
        }
        return text
    }
}
