import Dispatch
import Foundation
import HomeportLogging
import HomeportStorage

/// Deletes what the server keeps only for a while: notifications older than
/// ``PushSettings/logRetention`` from the accounts' logs, and pushes given up on (`failed`, kept
/// for operators to read) as old. Runs at start and every hour, on every replica: the deletes
/// are idempotent, so replicas doing the same work change nothing.
final class NotificationRetention: Sendable {
    private let database: any Database
    private let retention: Int64
    private let clock: any WallClock
    private let logger: Logger
    private let task = RepeatingTask(label: "homeport.push.retention")

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
        task.start(after: .seconds(0), every: Self.interval, logger: logger, failure: "old notifications not deleted") {
            [self] in try sweep()
        }
    }

    /// Stops the timer.
    func stop() {
        task.stop()
    }

    /// Deletes notifications and failed pushes older than the retention.
    func sweep() throws {
        let cutoff = clock.unixSeconds - retention
        try NotificationLog(database).prune(before: cutoff)
        try PushOutbox(database).pruneFailed(before: cutoff)
    }
}
