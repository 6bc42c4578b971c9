import Dispatch
import HomeportLogging
import Synchronization

/// Work run on a queue of its own, first after `delay`, then every `interval`, until stopped;
/// a failure is logged as a warning and the next run comes as planned. The one idiom of the
/// server's periodic background work (the replica heartbeat, retention, the mail sender, a
/// product's tasks); the work reads the time from the injected clock, never from the timer.
final class RepeatingTask: Sendable {
    private let queue: DispatchQueue
    private let timer = Mutex<(any DispatchSourceTimer)?>(nil)

    /// Creates a stopped task; `label` names its queue.
    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// Starts running `work`; a failure is logged to `logger` with `failure` as the message.
    func start(
        after delay: DispatchTimeInterval, every interval: DispatchTimeInterval, logger: Logger, failure: String,
        _ work: @escaping @Sendable () throws -> Void
    ) {
        timer.withLock { slot in
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + delay, repeating: interval)
            timer.setEventHandler {
                do {
                    try work()
                } catch {
                    logger.warning(failure, metadata: ["error": String(describing: error)])
                }
            }
            timer.resume()
            slot?.cancel()
            slot = timer
        }
    }

    /// Stops it, and waits for a run in progress to end (so that what it uses, such as the
    /// database, can be closed next); true when it was running. Never call it from the work.
    @discardableResult
    func stop() -> Bool {
        guard let timer = timer.withLock({ $0.take() }) else { return false }
        timer.cancel()
        queue.sync {}
        return true
    }
}
