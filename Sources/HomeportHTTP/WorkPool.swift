import Foundation
import HomeportLifecycle

/// A few threads for handlers that spend CPU (a password hash costs a core a few hundred
/// milliseconds), so that they never run on a worker thread that reads requests and answers
/// everyone else; with a bounded queue in front of them, fair between clients.
///
/// Jobs wait in one line per client bucket (an address; an IPv6 client by its /64), and the
/// threads take the lines in turn, one job each: a client with a hundred sign-ins queued delays
/// another client's one by a job, not by a hundred. When the queue is full, a job of a client
/// holding fewer takes the place of the newest job of the client holding the most, which is
/// refused (its `refused` runs).
final class WorkPool: @unchecked Sendable {
    private struct Job {
        let run: @Sendable () -> Void
        let refused: @Sendable () -> Void
    }

    /// Threads running jobs.
    let threadCount: Int
    /// Jobs that may wait for a thread; past them, ``submit(bucket:_:refused:)`` refuses (or
    /// displaces one of the client holding the most).
    let queueLimit: Int

    private let condition = NSCondition()
    /// Each bucket's jobs, oldest first.
    private var lines: [String: [Job]] = [:]
    /// The buckets with a job waiting, the next to be served first.
    private var turns: [String] = []
    private var waiting = 0
    private var busy = 0
    private var stopping = false
    private var started = false
    /// How long a job takes, averaged over the recent ones (seconds).
    private var averageDuration = 0.0

    init(threads: Int, queueLimit: Int) {
        self.threadCount = max(1, threads)
        self.queueLimit = max(0, queueLimit)
    }

    /// Starts the threads (once).
    func start() {
        condition.withLock {
            guard !started else { return }
            started = true
            for index in 0..<threadCount {
                startThread(named: "homeport.pool.\(index)") { [self] in run() }
            }
        }
    }

    /// Queues `job` in `bucket`'s line; false when the queue is full (and no client holds more
    /// than this one) or the pool is stopping: nothing was queued. A job displaced to make room
    /// is not run: its `refused` is called, here, once the queue's lock is let go.
    func submit(
        bucket: String = "", _ job: @escaping @Sendable () -> Void, refused: @escaping @Sendable () -> Void = {}
    ) -> Bool {
        var displaced: Job?
        let accepted: Bool = condition.withLock {
            guard !stopping else { return false }
            if waiting >= queueLimit + max(0, threadCount - busy) {
                guard let fattest = lines.max(by: { $0.value.count < $1.value.count }),
                    fattest.value.count > lines[bucket, default: []].count
                else { return false }
                displaced = lines[fattest.key]?.removeLast()
                waiting -= 1
                if lines[fattest.key]?.isEmpty == true {
                    lines[fattest.key] = nil
                    turns.removeAll { $0 == fattest.key }
                }
            }
            if lines[bucket] == nil { turns.append(bucket) }
            lines[bucket, default: []].append(Job(run: job, refused: refused))
            waiting += 1
            condition.signal()
            return true
        }
        displaced?.refused()
        return accepted
    }

    /// Seconds a refused client should wait before trying again: the queue's expected wait, at
    /// least one.
    var retryAfterSeconds: Int {
        condition.withLock {
            let ahead = Double(waiting + busy)
            return max(1, min(60, Int((ahead * averageDuration / Double(threadCount)).rounded(.up))))
        }
    }

    /// Jobs queued and running right now.
    var pending: Int { condition.withLock { waiting + busy } }

    /// Lets the threads finish the jobs queued, then end; later submissions are refused.
    func stop() {
        condition.withLock {
            stopping = true
            condition.broadcast()
        }
    }

    private func run() {
        while let job = next() {
            let started = ContinuousClock.now
            job()
            let elapsed = ContinuousClock.now - started
            condition.withLock {
                busy -= 1
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                averageDuration = averageDuration == 0 ? seconds : averageDuration * 0.8 + seconds * 0.2
            }
        }
    }

    /// The next job, from the bucket whose turn it is, waiting for one; `nil` once stopping with
    /// nothing left.
    private func next() -> (@Sendable () -> Void)? {
        condition.withLock {
            while true {
                while turns.isEmpty && !stopping { condition.wait() }
                guard !turns.isEmpty else { return nil }
                let bucket = turns.removeFirst()
                guard var line = lines[bucket], !line.isEmpty else { continue }
                let job = line.removeFirst()
                if line.isEmpty {
                    lines[bucket] = nil
                } else {
                    lines[bucket] = line
                    turns.append(bucket)
                }
                waiting -= 1
                busy += 1
                return job.run
            }
        }
    }
}
