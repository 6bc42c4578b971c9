import Foundation
import HomeportCrypto
import HomeportLifecycle
import HomeportLogging
import HomeportStorage

/// How often a replica writes its heartbeat, and how long after the last one written it trusts
/// the identity it has cached.
struct HeartbeatTiming: Sendable {
    /// Between two heartbeats.
    var interval: Duration = .seconds(ReplicaStore.interval)
    /// From the start of the last heartbeat written until the replica stops answering its cached
    /// identity: shorter than ``ReplicaStore/freshness`` by a whole interval, so that the replica
    /// has stopped before anyone else may take it for dead.
    var lease: Duration = .seconds(ReplicaStore.freshness) - .seconds(ReplicaStore.interval)
}

/// This process's row in `replicas`: written before the server listens, refreshed every
/// ``HeartbeatTiming/interval``, deleted at a graceful stop. `identity reset` refuses while any
/// replica's row is fresh.
///
/// Each heartbeat written renews the identity's lease (``IdentityStore/renewLease(until:)``):
/// a replica that cannot write its heartbeat soon stops answering its identity, before
/// `identity reset` may take it for dead; one that writes again reads the identity anew, and so
/// answers the new one if a reset happened meanwhile.
final class ReplicaHeartbeat: Service {
    private let database: any Database
    private let identity: IdentityStore
    private let timing: HeartbeatTiming
    private let id: String
    private let listen: String
    private let logger: Logger
    private let task: RepeatingTask
    let name = "homeport.replicas.heartbeat"

    init(database: any Database, identity: IdentityStore, timing: HeartbeatTiming, listen: String, logger: Logger)
        throws
    {
        self.database = database
        self.identity = identity
        self.timing = timing
        self.listen = listen
        let logger = logger.withLabel("homeport.replicas")
        self.logger = logger
        let id = try SystemRandom().uuid().uuidString.lowercased()
        self.id = id
        // The body is the same as beat(), without `self`, which is not whole yet.
        task = RepeatingTask(
            name, after: timing.interval, every: timing.interval,
            failed: { logger.warning("heartbeat not written", metadata: ["error": String(describing: $0)]) }
        ) {
            try Self.beat(
                database: database, identity: identity, timing: timing, id: id, listen: listen, logger: logger)
        }
    }

    /// Registers this replica and starts the heartbeat.
    func start() throws {
        try Self.beat(database: database, identity: identity, timing: timing, id: id, listen: listen, logger: logger)
        try? ReplicaStore(database, dialect: database.dialect).pruneDead()
        task.start()
    }

    /// Writes the row, then renews the identity's lease from the moment the write began.
    private static func beat(
        database: any Database, identity: IdentityStore, timing: HeartbeatTiming, id: String, listen: String,
        logger: Logger
    ) throws {
        let began = ContinuousClock.now
        try ReplicaStore(database, dialect: database.dialect).beat(
            id: id, host: ProcessInfo.processInfo.hostName, pid: Int64(ProcessInfo.processInfo.processIdentifier),
            listen: listen)
        do {
            if try identity.renewLease(until: began + timing.lease) {
                logger.warning(
                    "the installation identity changed in the database (identity reset); answering the new one")
            }
        } catch {
            // The identity route answers 503 and says why; the heartbeat itself was written.
            logger.debug("identity not renewed", metadata: ["error": String(describing: error)])
        }
    }

    /// Stops the heartbeat and removes this replica's row.
    func stop() {
        guard task.isRunning else { return }
        task.stop()
        do {
            try ReplicaStore(database, dialect: database.dialect).remove(id: id)
        } catch {
            logger.warning("replica row not removed", metadata: ["error": String(describing: error)])
        }
    }
}
