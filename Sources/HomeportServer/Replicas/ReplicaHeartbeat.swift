import Dispatch
import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import Synchronization

/// This process's row in `replicas`: written before the server listens, refreshed every
/// ``ReplicaStore/interval`` seconds, deleted at a graceful stop. `identity reset` refuses while
/// any replica's row is fresh.
final class ReplicaHeartbeat: Sendable {
    private let database: any Database
    private let replica: ReplicaInfo
    private let logger: Logger
    private let timer = Mutex<(any DispatchSourceTimer)?>(nil)

    init(database: any Database, listen: String, logger: Logger) throws {
        self.database = database
        self.logger = logger.withLabel("homeport.replicas")
        let now = Date()
        replica = ReplicaInfo(
            id: try SystemRandom().uuid().uuidString.lowercased(), host: ProcessInfo.processInfo.hostName,
            pid: Int64(ProcessInfo.processInfo.processIdentifier), listen: listen, startedAt: now, seenAt: now)
    }

    /// Registers this replica and starts the heartbeat.
    func start() throws {
        try ReplicaStore(database).register(replica)
        try? ReplicaStore(database).pruneDead(at: replica.startedAt)
        let interval = Int(ReplicaStore.interval * 1000)
        let (database, replica, logger) = (database, replica, logger)
        timer.withLock { slot in
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "homeport.replicas.heartbeat"))
            timer.schedule(deadline: .now() + .milliseconds(interval), repeating: .milliseconds(interval))
            timer.setEventHandler {
                var beat = replica
                beat.seenAt = Date()
                do {
                    try ReplicaStore(database).register(beat)
                } catch {
                    logger.warning("heartbeat not written", metadata: ["error": String(describing: error)])
                }
            }
            timer.resume()
            slot = timer
        }
    }

    /// Stops the heartbeat and removes this replica's row.
    func stop() {
        guard let timer = timer.withLock({ $0.take() }) else { return }
        timer.cancel()
        do {
            try ReplicaStore(database).remove(id: replica.id)
        } catch {
            logger.warning("replica row not removed", metadata: ["error": String(describing: error)])
        }
    }
}
