import Foundation

/// A few threads for handlers that spend CPU (a password hash costs a core a few hundred
/// milliseconds), so that they never run on a worker thread that reads requests and answers
/// everyone else; with a bounded queue in front of them.
final class WorkPool: @unchecked Sendable {
    /// Threads running jobs.
    let threadCount: Int
    /// Jobs that may wait for a thread; past them, ``submit(_:)`` refuses.
    let queueLimit: Int

    private let condition = NSCondition()
    private var queue: [@Sendable () -> Void] = []
    private var head = 0
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
                let thread = Thread { [self] in run() }
                thread.name = "homeport.pool.\(index)"
                thread.start()
            }
        }
    }

    /// Queues `job`; false when the queue is full or the pool is stopping (nothing was queued).
    func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        condition.withLock {
            guard !stopping, queue.count - head < queueLimit + max(0, threadCount - busy) else { return false }
            queue.append(job)
            condition.signal()
            return true
        }
    }

    /// Seconds a refused client should wait before trying again: the queue's expected wait, at
    /// least one.
    var retryAfterSeconds: Int {
        condition.withLock {
            let waiting = Double(queue.count - head + busy)
            return max(1, min(60, Int((waiting * averageDuration / Double(threadCount)).rounded(.up))))
        }
    }

    /// Jobs queued and running right now.
    var pending: Int { condition.withLock { queue.count - head + busy } }

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

    /// The next job, waiting for one; `nil` once stopping with nothing left.
    private func next() -> (@Sendable () -> Void)? {
        condition.withLock {
            while head == queue.count && !stopping { condition.wait() }
            guard head < queue.count else { return nil }
            let job = queue[head]
            head += 1
            if head > 64 && head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
            busy += 1
            return job
        }
    }
}
