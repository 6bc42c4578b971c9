import Foundation
import HomeportAPNs
import Synchronization

/// Sends a batch over HTTP in parallel lanes, each with a libcurl session of its own kept
/// between batches: for push services reached one request per push (Web Push, FCM), where one
/// slow answer must hold only its own lane until the timeout.
final class CurlLanes: Sendable {
    /// How many requests are in flight at once.
    let lanes: Int
    private let timeoutSeconds: Int
    private let idle = Mutex<[CurlSession]>([])

    init(lanes: Int = 8, timeoutSeconds: Int) {
        self.lanes = lanes
        self.timeoutSeconds = timeoutSeconds
    }

    /// `send` for each item, `lanes` at a time; the answers in the items' order.
    func map(_ items: [OutboxItem], _ send: @Sendable (OutboxItem, CurlSession) -> APNsResponse) -> [APNsResponse] {
        let lanes = min(lanes, items.count)
        let results = Results(count: items.count)
        DispatchQueue.concurrentPerform(iterations: lanes) { lane in
            let session =
                idle.withLock { $0.popLast() } ?? CurlSession(timeoutSeconds: timeoutSeconds, byteLimit: 64 << 10)
            defer { idle.withLock { $0.append(session) } }
            for index in stride(from: lane, to: items.count, by: lanes) {
                results.set(index, send(items[index], session))
            }
        }
        return results.all
    }

    /// The lanes' answers, by item.
    private final class Results: @unchecked Sendable {
        private let lock = NSLock()
        private var responses: [APNsResponse]

        init(count: Int) {
            responses = Array(repeating: APNsResponse(status: 0, transportError: "not sent"), count: count)
        }

        func set(_ index: Int, _ response: APNsResponse) {
            lock.withLock { responses[index] = response }
        }

        var all: [APNsResponse] { lock.withLock { responses } }
    }
}
