import Dispatch
import Foundation
import Synchronization

// The timer and the thread every background service of Homeport runs on, and the two
// primitives under them that other code uses directly: a deadline that comes once, and a thread.

/// Runs `work` once on `queue`, `delay` from now (at least a millisecond): for a deadline that
/// comes once (a batch of log lines to write, retired listeners to look at again), where a
/// ``RepeatingTask`` would have to stop itself.
package func runOnce(
    after delay: Duration, on queue: DispatchQueue = .global(), _ work: @escaping @Sendable () -> Void
) {
    queue.asyncAfter(deadline: .now() + RepeatingTask.dispatch(delay), execute: work)
}

/// Starts a thread named `name` that runs `body` and ends: the one place Homeport makes threads
/// (each ``ServiceThread``'s, the HTTP work pool's).
package func startThread(named name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread(block: body)
    thread.name = name
    thread.start()
}

/// Work run on a queue, first after a delay, then at every interval, until stopped. A run that
/// throws is reported, and the next comes as planned. The work reads the time from the clock it
/// is given, never from the timer.
package final class RepeatingTask: Service {
    package let name: String
    private let queue: DispatchQueue
    private let delay: Duration
    private let interval: Duration
    private let work: @Sendable () throws -> Void
    private let failed: @Sendable (any Error) -> Void
    private let timer = Mutex<(any DispatchSourceTimer)?>(nil)

    /// A stopped task named `name` that runs `work` on `queue` (by default, a queue of its own),
    /// first `delay` after ``start()``, then every `interval` (both at least a millisecond);
    /// `failed` hears what a run throws.
    package init(
        _ name: String, on queue: DispatchQueue? = nil, after delay: Duration, every interval: Duration,
        failed: @escaping @Sendable (any Error) -> Void, _ work: @escaping @Sendable () throws -> Void
    ) {
        self.name = name
        self.queue = queue ?? DispatchQueue(label: name)
        self.delay = delay
        self.interval = interval
        self.work = work
        self.failed = failed
    }

    /// Whether it runs: started, not stopped since.
    package var isRunning: Bool { timer.withLock { $0 != nil } }

    /// Starts the timer (a task already running starts over, its next run `delay` from now).
    package func start() {
        let (queue, delay, interval, work, failed) = (queue, delay, interval, work, failed)
        timer.withLock { slot in
            let source = DispatchSource.makeTimerSource(queue: queue)
            source.schedule(deadline: .now() + Self.dispatch(delay), repeating: Self.dispatch(interval))
            source.setEventHandler {
                do {
                    try work()
                } catch {
                    failed(error)
                }
            }
            source.resume()
            slot?.cancel()
            slot = source
        }
    }

    /// Stops the timer, and waits for a run in progress to end. Never call it from the work, nor
    /// from its queue.
    package func stop() {
        guard let source = timer.withLock({ $0.take() }) else { return }
        source.cancel()
        queue.sync {}
    }

    /// `duration` as a timer takes it: at least a millisecond.
    static func dispatch(_ duration: Duration) -> DispatchTimeInterval {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanoseconds.overflow else { return .never }
        return .nanoseconds(max(1_000_000, Int(nanoseconds.partialValue + attoseconds / 1_000_000_000)))
    }
}

/// A thread of its own that runs a body until stopped: the body loops while ``isStopping`` is
/// false, resting between passes with ``rest(upTo:)``, which ``wake()`` and ``stop()`` cut short.
/// For work that blocks (a socket it waits on, a batch it sends), which would hold a timer's
/// queue or a cooperative thread.
package final class ServiceThread: Service, @unchecked Sendable {
    // @unchecked: the semaphores are thread-safe; the rest is atomic or immutable.
    package let name: String
    private let body: @Sendable (ServiceThread) -> Void
    private let stopTimeout: Duration?
    private let running = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    private let wakeUp = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// A stopped thread named `name` that will run `body`. ``stop()`` waits for the body to
    /// return: at most `stopTimeout` when one is given.
    package init(_ name: String, stopTimeout: Duration? = nil, _ body: @escaping @Sendable (ServiceThread) -> Void) {
        self.name = name
        self.stopTimeout = stopTimeout
        self.body = body
    }

    /// True once ``stop()`` was called: the body should return soon.
    package var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Waits until `duration` has passed, ``wake()`` is called, or the thread is stopped.
    package func rest(upTo duration: Duration) {
        guard !isStopping else { return }
        _ = wakeUp.wait(timeout: .now() + RepeatingTask.dispatch(duration))
    }

    /// Ends the body's rest now (or its next one, when it is not resting).
    package func wake() {
        wakeUp.signal()
    }

    /// Starts the thread; nothing when it runs already.
    package func start() {
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        stopping.store(false, ordering: .releasing)
        startThread(named: name) { [self] in
            body(self)
            finished.signal()
        }
    }

    /// Asks the body to stop, and waits for it to return (at most the stop timeout).
    package func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        stopping.store(true, ordering: .releasing)
        wakeUp.signal()
        if let stopTimeout {
            _ = finished.wait(timeout: .now() + RepeatingTask.dispatch(stopTimeout))
        } else {
            finished.wait()
        }
    }
}
