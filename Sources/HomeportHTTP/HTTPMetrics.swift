import Foundation
import Synchronization

/// What a server counts for Prometheus: answers by route group and status, and a latency
/// histogram. Recorded with each access-log line, rendered by ``render()``.
package final class HTTPMetrics: Sendable {
    /// The latency histogram's bucket bounds, in seconds.
    static let bounds: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    private struct State {
        var answers: [String: [Int: Int]] = [:]
        var buckets = [Int](repeating: 0, count: HTTPMetrics.bounds.count + 1)
        var sum = 0.0
        var count = 0
    }

    private let state = Mutex(State())
    private let enabled = Atomic<Bool>(false)

    /// Creates empty counters, not counting until ``enable()`` (counting costs every request a
    /// lock and a route lookup: only a server whose metrics are served pays it).
    package init() {}

    /// Starts counting.
    package func enable() { enabled.store(true, ordering: .relaxed) }

    /// Whether answers are counted.
    var isEnabled: Bool { enabled.load(ordering: .relaxed) }

    /// Counts one answer of `status` under `group`, which took `seconds`.
    func record(group: String, status: Int, seconds: Double) {
        let index = Self.bounds.firstIndex { seconds <= $0 } ?? Self.bounds.count
        state.withLock { state in
            state.answers[group, default: [:]][status, default: 0] += 1
            state.buckets[index] += 1
            state.sum += seconds
            state.count += 1
        }
    }

    /// The counters in Prometheus's text format.
    package func render() -> String {
        let snapshot = state.withLock { $0 }
        var lines = [
            "# HELP homeport_http_requests_total Requests answered, by route group and status.",
            "# TYPE homeport_http_requests_total counter",
        ]
        for group in snapshot.answers.keys.sorted() {
            for (status, count) in snapshot.answers[group, default: [:]].sorted(by: { $0.key < $1.key }) {
                lines.append("homeport_http_requests_total{group=\"\(group)\",status=\"\(status)\"} \(count)")
            }
        }
        lines += [
            "# HELP homeport_http_request_duration_seconds Time from a request's line to its answer.",
            "# TYPE homeport_http_request_duration_seconds histogram",
        ]
        var cumulative = 0
        for (index, bound) in Self.bounds.enumerated() {
            cumulative += snapshot.buckets[index]
            lines.append("homeport_http_request_duration_seconds_bucket{le=\"\(bound)\"} \(cumulative)")
        }
        lines.append("homeport_http_request_duration_seconds_bucket{le=\"+Inf\"} \(snapshot.count)")
        lines.append("homeport_http_request_duration_seconds_sum \(snapshot.sum)")
        lines.append("homeport_http_request_duration_seconds_count \(snapshot.count)")
        return lines.joined(separator: "\n") + "\n"
    }
}
