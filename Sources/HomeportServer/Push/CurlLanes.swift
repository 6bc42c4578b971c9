import Foundation
import HomeportAPNs
import Synchronization

/// Sends a batch over HTTP in parallel lanes, each a thread with a libcurl session of its own
/// kept between batches: for push services reached one request per push (Web Push, FCM). Every
/// lane takes the next item when it is free, so one slow answer holds only its own lane until
/// the timeout; and no item starts once the batch has run for ``budget``, so a batch ends well
/// within the sender's claim on its rows (an item not started comes back unsent, to go again).
final class CurlLanes: Sendable {
    /// How many requests are in flight at once.
    let lanes: Int
    /// How long a batch may start new requests.
    let budget: Duration
    private let timeoutSeconds: Int
    /// Whether the lanes connect to public addresses only (``CurlSession/publicOnly``).
    private let publicOnly: Bool
    private let idle = Mutex<[CurlSession]>([])

    init(lanes: Int = 8, timeoutSeconds: Int, budget: Duration = .seconds(40), publicOnly: Bool = false) {
        self.lanes = lanes
        self.timeoutSeconds = timeoutSeconds
        self.budget = budget
        self.publicOnly = publicOnly
    }

    /// `send` for each item, on up to `lanes` threads; the answers in the items' order.
    func map(_ items: [OutboxItem], _ send: @escaping @Sendable (OutboxItem, CurlSession) -> APNsResponse)
        -> [APNsResponse]
    {
        let work = Work(items: items, deadline: ContinuousClock.now + budget)
        let group = DispatchGroup()
        for _ in 0..<min(lanes, items.count) {
            group.enter()
            let lane = Thread { [self] in
                defer { group.leave() }
                let session =
                    idle.withLock { $0.popLast() }
                    ?? CurlSession(timeoutSeconds: timeoutSeconds, byteLimit: 64 << 10, publicOnly: publicOnly)
                defer { idle.withLock { $0.append(session) } }
                while let (index, item) = work.next() { work.set(index, send(item, session)) }
            }
            lane.name = "homeport.push.lane"
            lane.start()
        }
        group.wait()
        return work.responses
    }

    /// The batch: the next item to send, and the answers so far.
    private final class Work: @unchecked Sendable {
        private let lock = NSLock()
        private let items: [OutboxItem]
        private let deadline: ContinuousClock.Instant
        private var position = 0
        private var answers: [APNsResponse]

        init(items: [OutboxItem], deadline: ContinuousClock.Instant) {
            self.items = items
            self.deadline = deadline
            answers = Array(
                repeating: APNsResponse(status: 0, transportError: "not sent: the batch ran out of time"),
                count: items.count)
        }

        /// The next item, unless they are all taken or the batch is out of time.
        func next() -> (Int, OutboxItem)? {
            lock.withLock {
                guard position < items.count, ContinuousClock.now < deadline else { return nil }
                defer { position += 1 }
                return (position, items[position])
            }
        }

        func set(_ index: Int, _ response: APNsResponse) {
            lock.withLock { answers[index] = response }
        }

        var responses: [APNsResponse] { lock.withLock { answers } }
    }
}
