import Foundation
import HomeportCrypto
import HomeportStorage
import HomeportWire
import Synchronization

/// The installation's identity: one UUID in the singleton `server_identity` row.
///
/// Created on first use, race-free across replicas (`INSERT … ON CONFLICT DO NOTHING`, then read
/// back whatever won), cached in this process after the first successful read. It never answers
/// an identifier it has not read from the database.
///
/// In a serving replica the cache holds on a lease that each heartbeat written renews
/// (`renewLease(until:)`): past it, ``instanceID()`` throws ``IdentityError/leaseLapsed``, so a
/// replica that cannot reach its database stops answering an identity that `identity reset` may
/// have replaced meanwhile.
public final class IdentityStore: Sendable {
    private let database: any Database
    private let random: any RandomSource
    private let now: @Sendable () -> Date
    private let state = Mutex(CacheState())

    private struct CacheState {
        var id: InstanceID?
        /// Until when the cache may be answered; `nil` outside a serving replica (no heartbeat).
        var lease: ContinuousClock.Instant?
    }

    /// Creates a store over `database`; `random` and `now` are injectable for tests.
    public init(
        database: any Database, random: any RandomSource = SystemRandom(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.database = database
        self.random = random
        self.now = now
    }

    /// The installation's identifier, creating it on first use. Throws when it cannot be read or stored.
    public func instanceID() throws -> InstanceID {
        let (known, lease) = state.withLock { ($0.id, $0.lease) }
        if let lease, lease < .now { throw IdentityError.leaseLapsed }
        if let known { return known }
        let id = try readOrCreate()
        state.withLock { $0.id = id }
        return id
    }

    /// Reads the stored identifier anew into the cache and lets it be answered until `deadline`;
    /// true when the database now holds another identifier than the one cached (an `identity
    /// reset` happened). Called by the heartbeat after each write.
    func renewLease(until deadline: ContinuousClock.Instant) throws -> Bool {
        let stored = try storedInstanceID()?.instanceID
        return state.withLock { state in
            let changed = state.id != nil && state.id != stored
            state.id = stored
            state.lease = deadline
            return changed
        }
    }

    /// The stored identifier without creating one: `nil` when the row does not exist yet.
    public func storedInstanceID() throws -> StoredIdentity? {
        let rows = try database.execute("SELECT instance_id, created_at FROM server_identity WHERE id = 1")
        guard let row = rows.first else { return nil }
        guard let text = row.string("instance_id"), let id = InstanceID(text) else {
            throw IdentityError.corrupt
        }
        let created = row.int("created_at").map { Date(timeIntervalSince1970: TimeInterval($0)) }
        return StoredIdentity(instanceID: id, createdAt: created)
    }

    /// What a reset removed.
    public enum ResetOutcome: Sendable, Equatable {
        /// The stored identifier.
        case removed(InstanceID)
        /// A row that did not hold a UUID (shown cut to 64 characters).
        case removedDamaged(String)
        /// Nothing was stored.
        case nothingStored
    }

    /// Deletes the singleton row, damaged or not, so that the next request creates a new identifier.
    ///
    /// Only for an independent clone of an installation, with every replica stopped: a live
    /// replica would keep answering the old identifier from its cache. So it refuses, changing
    /// nothing, while any replica's heartbeat is fresh (``ResetRefused``), unless `force` says
    /// that those replicas are dead (a process killed less than a heartbeat's freshness ago).
    @discardableResult
    public func reset(force: Bool = false) throws -> ResetOutcome {
        let dialect = database.dialect
        let outcome = try database.transaction { db -> ResetOutcome in
            let live = try ReplicaStore(db, dialect: dialect).live()
            if !force && !live.isEmpty { throw ResetRefused(replicas: live) }
            let raw = try db.execute("SELECT instance_id FROM server_identity WHERE id = 1").first
            try db.execute("DELETE FROM server_identity WHERE id = 1")
            guard let raw else { return .nothingStored }
            let text = raw.string("instance_id") ?? ""
            return InstanceID(text).map(ResetOutcome.removed) ?? .removedDamaged(String(text.prefix(64)))
        }
        state.withLock { $0.id = nil }
        return outcome
    }

    private func readOrCreate() throws -> InstanceID {
        if let stored = try storedInstanceID() { return stored.instanceID }
        let candidate = InstanceID(try random.uuid())
        try database.execute(
            "INSERT INTO server_identity (id, instance_id, created_at) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING",
            [.text(candidate.description), .integer(Int64(now().timeIntervalSince1970))])
        guard let stored = try storedInstanceID() else { throw IdentityError.notStored }
        return stored.instanceID
    }
}

/// The identity row as stored.
public struct StoredIdentity: Sendable, Equatable {
    /// The installation's identifier.
    public var instanceID: InstanceID
    /// When the row was created, if recorded.
    public var createdAt: Date?
}

/// Why the identity could not be answered.
public enum IdentityError: Error, Equatable, CustomStringConvertible {
    /// The row holds something that is not a UUID.
    case corrupt
    /// The insert succeeded but no row could be read back.
    case notStored
    /// This replica has not written its heartbeat for too long: the identity it cached may have
    /// been reset meanwhile.
    case leaseLapsed

    /// A sentence for logs.
    public var description: String {
        switch self {
        case .corrupt: "the server_identity row does not hold a UUID"
        case .notStored: "the server_identity row could not be read back after creating it"
        case .leaseLapsed: "this replica has not written its heartbeat for too long to trust its cached identity"
        }
    }
}

/// `identity reset` refused: these replicas are serving (their heartbeats are fresh).
public struct ResetRefused: Error, Equatable {
    /// The live replicas.
    public var replicas: [ReplicaInfo]
}
