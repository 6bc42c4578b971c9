import Dispatch
import HomeportLogging
import Synchronization

/// Work run on a queue of its own, first after `delay`, then every `interval`, until stopped;
/// a failure is logged as a warning and the next run comes as planned.
final class RepeatingTask: Sendable {
    private let label: String
    private let timer = Mutex<(any DispatchSourceTimer)?>(nil)

    /// Creates a stopped task; `label` names its queue.
    init(label: String) {
        self.label = label
    }

    /// Starts running `work`; a failure is logged to `logger` with `failure` as the message.
    func start(
        after delay: DispatchTimeInterval, every interval: DispatchTimeInterval, logger: Logger, failure: String,
        _ work: @escaping @Sendable () throws -> Void
    ) {
        timer.withLock { slot in
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: label))
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

    /// Stops it; true when it was running.
    @discardableResult
    func stop() -> Bool {
        guard let timer = timer.withLock({ $0.take() }) else { return false }
        timer.cancel()
        return true
    }
}
