import Dispatch
import Foundation
import HomeportCrypto
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
final class ReplicaHeartbeat: Sendable {
    private let database: any Database
    private let identity: IdentityStore
    private let timing: HeartbeatTiming
    private let id: String
    private let listen: String
    private let logger: Logger
    private let task = RepeatingTask(label: "homeport.replicas.heartbeat")

    init(database: any Database, identity: IdentityStore, timing: HeartbeatTiming, listen: String, logger: Logger)
        throws
    {
        self.database = database
        self.identity = identity
        self.timing = timing
        self.listen = listen
        self.logger = logger.withLabel("homeport.replicas")
        id = try SystemRandom().uuid().uuidString.lowercased()
    }

    /// Registers this replica and starts the heartbeat.
    func start() throws {
        try beat()
        try? ReplicaStore(database, dialect: database.dialect).pruneDead()
        let interval = DispatchTimeInterval.milliseconds(Int(timing.interval / .milliseconds(1)))
        task.start(after: interval, every: interval, logger: logger, failure: "heartbeat not written") { [self] in
            try beat()
        }
    }

    /// Writes the row, then renews the identity's lease from the moment the write began.
    private func beat() throws {
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
        guard task.stop() else { return }
        do {
            try ReplicaStore(database, dialect: database.dialect).remove(id: id)
        } catch {
            logger.warning("replica row not removed", metadata: ["error": String(describing: error)])
        }
    }
}
