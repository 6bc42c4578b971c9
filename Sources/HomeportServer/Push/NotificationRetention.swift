import Foundation
import HomeportLifecycle
import HomeportLogging
import HomeportStorage

/// Deletes what the server keeps only for a while: notifications older than
/// ``PushSettings/logRetention`` from the accounts' logs, and pushes given up on (`failed`, kept
/// for operators to read) as old. Runs at start and every hour, on every replica: the deletes
/// are idempotent, so replicas doing the same work change nothing.
struct NotificationRetention: Sendable {
    private let database: any Database
    private let retention: Int64
    private let clock: any WallClock
    private let logger: Logger
    /// How often the sweep runs.
    static let interval: Duration = .seconds(3600)

    init(database: any Database, settings: PushSettings, clock: any WallClock, logger: Logger) {
        self.database = database
        self.retention = settings.logRetention
        self.clock = clock
        self.logger = logger.withLabel("homeport.push")
    }

    /// The service that sweeps at once, then every ``interval``.
    func service() -> RepeatingTask {
        RepeatingTask(
            "homeport.push.retention", after: .zero, every: Self.interval,
            failed: { [logger] in
                logger.warning("old notifications not deleted", metadata: ["error": String(describing: $0)])
            }
        ) { try sweep() }
    }

    /// Deletes notifications and failed pushes older than the retention.
    func sweep() throws {
        let cutoff = clock.unixSeconds - retention
        try NotificationLog(database).prune(before: cutoff)
        try PushOutbox(database).pruneFailed(before: cutoff)
    }
}
