import Synchronization

/// How many batches each server has in flight in this process: a server may hold at most
/// ``limit`` of the threads that send to APNs at once, so one server's flood never holds them
/// all while the others wait.
final class GatewayInFlight: Sendable {
    /// Batches one server may have in flight at once, per process.
    let limit: Int
    private let counts = Mutex<[Int64: Int]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts a batch of `server` in; false, counting nothing, when it has ``limit`` already.
    func enter(_ server: Int64) -> Bool {
        counts.withLock { counts in
            guard counts[server, default: 0] < limit else { return false }
            counts[server, default: 0] += 1
            return true
        }
    }

    /// Counts a batch of `server` out.
    func leave(_ server: Int64) {
        counts.withLock { counts in
            let left = counts[server, default: 1] - 1
            counts[server] = left > 0 ? left : nil
        }
    }
}
