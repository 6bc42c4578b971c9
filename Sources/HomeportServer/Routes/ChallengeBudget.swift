import HomeportHTTP
import Synchronization

/// How many identity challenges each client may have signed: a bucket per client address
/// (``AddressRange/bucket(_:)``) that holds `burst` signatures and refills `perSecond`, in this
/// process's memory. A signature is cheap, but not free: a flood gets 429 before it gets a
/// signing oracle. Kept in memory, not in the database, so that a challenge costs no write.
final class ChallengeBudget: Sendable {
    let burst: Double
    let perSecond: Double
    /// Most buckets remembered; past it, the full ones are forgotten (a full bucket is what a new
    /// one would be).
    let capacity: Int
    private let buckets = Mutex<[String: (tokens: Double, at: ContinuousClock.Instant)]>([:])

    init(burst: Int, perSecond: Double, capacity: Int = 10_000) {
        self.burst = Double(burst)
        self.perSecond = perSecond
        self.capacity = capacity
    }

    /// The bucket `limit` sets: its whole limit at once, refilled over its window.
    convenience init(_ limit: RateLimit) {
        self.init(burst: limit.limit, perSecond: Double(limit.limit) / Double(max(1, limit.windowSeconds)))
    }

    /// Takes one signature from `client`'s bucket; false, taking nothing, when it is empty.
    func take(client: String, now: ContinuousClock.Instant = .now) -> Bool {
        let key = AddressRange.bucket(client)
        return buckets.withLock { buckets in
            if buckets.count >= capacity && buckets[key] == nil {
                buckets = buckets.filter { level($0.value, now) < burst }
            }
            var tokens = buckets[key].map { level($0, now) } ?? burst
            guard tokens >= 1 else { return false }
            tokens -= 1
            buckets[key] = (tokens, now)
            return true
        }
    }

    private func level(_ bucket: (tokens: Double, at: ContinuousClock.Instant), _ now: ContinuousClock.Instant)
        -> Double
    {
        let elapsed = now - bucket.at
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return min(burst, bucket.tokens + max(0, seconds) * perSecond)
    }
}
