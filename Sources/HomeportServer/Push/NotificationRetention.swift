import Dispatch
import Foundation
import HomeportLogging
import HomeportStorage
import Synchronization

/// Deletes what the server keeps only for a while: notifications older than
/// ``PushSettings/logRetention`` from the accounts' logs, and pushes given up on (`failed`, kept
/// for operators to read) as old. Runs at start and every hour, on every replica: the deletes
/// are idempotent, so replicas doing the same work change nothing.
final class NotificationRetention: Sendable {
    private let database: any Database
    private let retention: Int64
    private let clock: any WallClock
    private let logger: Logger
    private let timer = Mutex<(any DispatchSourceTimer)?>(nil)

    /// How often the sweep runs.
    static let interval: DispatchTimeInterval = .seconds(3600)

    init(database: any Database, settings: PushSettings, clock: any WallClock, logger: Logger) {
        self.database = database
        self.retention = settings.logRetention
        self.clock = clock
        self.logger = logger.withLabel("homeport.push")
    }

    /// Sweeps at once, then every ``interval``.
    func start() {
        timer.withLock { slot in
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "homeport.push.retention"))
            timer.schedule(deadline: .now(), repeating: Self.interval)
            timer.setEventHandler { [self] in
                do {
                    try sweep()
                } catch {
                    logger.warning("old notifications not deleted", metadata: ["error": String(describing: error)])
                }
            }
            timer.resume()
            slot = timer
        }
    }

    /// Stops the timer.
    func stop() {
        timer.withLock { $0.take() }?.cancel()
    }

    /// Deletes notifications and failed pushes older than the retention.
    func sweep() throws {
        let cutoff = clock.unixSeconds - retention
        try NotificationLog(database).prune(before: cutoff)
        try PushOutbox(database).pruneFailed(before: cutoff)
    }
}
