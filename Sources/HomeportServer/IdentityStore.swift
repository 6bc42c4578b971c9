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
///
/// With the secrets key (``SecretsKey``), the row also holds the installation key: a P-256 key
/// (Ed25519 in rows made before P-256, which keep theirs) made with the identifier (or on the
/// first read of a row from before keys), its public
/// half as it is and its private half sealed for that identifier. Every replica reads the same
/// key; a reset makes a new one with the new identifier.
package final class IdentityStore: Sendable {
    private let database: any Database
    private let secrets: SecretsKey?
    private let random: any RandomSource
    private let now: @Sendable () -> Date
    private let state = Mutex(CacheState())

    private struct CacheState {
        var current: InstallationIdentity?
        /// Until when the cache may be answered; `nil` outside a serving replica (no heartbeat).
        var lease: ContinuousClock.Instant?
    }

    /// Creates a store over `database`; with `secrets`, the identity carries an installation
    /// key. `random` and `now` are injectable for tests.
    package init(
        database: any Database, secrets: SecretsKey? = nil, random: any RandomSource = SystemRandom(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.database = database
        self.secrets = secrets
        self.random = random
        self.now = now
    }

    /// The installation's identifier, creating it on first use. Throws when it cannot be read or stored.
    package func instanceID() throws -> InstanceID { try current().instanceID }

    /// The installation's identifier as known, or read (made, on first use) through `db`: a
    /// connection in the caller's transaction, which a second connection would wait for. What it
    /// reads or makes there is not kept in memory: it stands or falls with that transaction.
    func instanceID(readingThrough db: any SQLExecutor) throws -> InstanceID {
        try held()?.instanceID ?? readOrCreate(db).instanceID
    }

    /// The installation's identifier and key, creating them on first use. Throws when they cannot
    /// be read or stored.
    package func current() throws -> InstallationIdentity {
        if let known = try held() { return known }
        let identity = try readOrCreate()
        state.withLock { $0.current = identity }
        return identity
    }

    /// The identity this process holds, if any; throws once the lease it holds it under lapsed.
    private func held() throws -> InstallationIdentity? {
        let (known, lease) = state.withLock { ($0.current, $0.lease) }
        if let lease, lease < .now { throw IdentityError.leaseLapsed }
        return known
    }

    /// Reads the stored identity anew into the cache and lets it be answered until `deadline`;
    /// true when the database now holds another identifier than the one cached (an `identity
    /// reset` happened). Called by the heartbeat after each write.
    func renewLease(until deadline: ContinuousClock.Instant) throws -> Bool {
        let stored = try storedInstanceID()
        let cached = state.withLock { $0.current }
        let identity: InstallationIdentity? =
            if let stored, let cached, cached.instanceID == stored.instanceID, cached.publicKey == stored.publicKey {
                cached
            } else {
                stored.map(open)
            }
        return state.withLock { state in
            let changed = state.current != nil && state.current?.instanceID != identity?.instanceID
            state.current = identity
            state.lease = deadline
            return changed
        }
    }

    /// The stored identifier without creating one: `nil` when the row does not exist yet.
    package func storedInstanceID() throws -> StoredIdentity? {
        try storedInstanceID(database)
    }

    private func storedInstanceID(_ db: any SQLExecutor) throws -> StoredIdentity? {
        let rows = try db.execute(
            "SELECT instance_id, created_at, public_key, sealed_key FROM server_identity WHERE id = 1")
        guard let row = rows.first else { return nil }
        guard let text = row.string("instance_id"), let id = InstanceID(text) else {
            throw IdentityError.corrupt
        }
        let created = row.int("created_at").map { Date(timeIntervalSince1970: TimeInterval($0)) }
        return StoredIdentity(
            instanceID: id, createdAt: created, publicKey: row.string("public_key"), sealedKey: row.string("sealed_key")
        )
    }

    /// Where the private half is sealed for: its own identifier, so that it opens in no other row.
    static func sealContext(_ id: InstanceID) -> String { "installation-key:\(id)" }

    /// The identity of a stored row, its key opened: withheld (``InstallationIdentity/keyWithheld``)
    /// when this process has no secrets key, or not the one it was sealed with.
    private func open(_ stored: StoredIdentity) -> InstallationIdentity {
        guard let publicKey = stored.publicKey, let sealed = stored.sealedKey else {
            return InstallationIdentity(instanceID: stored.instanceID, key: nil)
        }
        guard let opened = secrets?.unseal(sealed, context: Self.sealContext(stored.instanceID)),
            let raw = IdentityProof.readBase64URL(opened), let publicRaw = IdentityProof.readKey(publicKey),
            let key = try? InstallationKeys.open(privateKey: raw, publicKey: publicRaw)
        else { return InstallationIdentity(instanceID: stored.instanceID, key: nil, keyWithheld: true) }
        return InstallationIdentity(instanceID: stored.instanceID, key: key)
    }

    /// A new key's public half and sealed private half, for `id`.
    private func newKey(for id: InstanceID, secrets: SecretsKey) throws -> (publicKey: String, sealed: String) {
        let key = try InstallationKeys.generate()
        let sealed = try secrets.seal(IdentityProof.base64URL(key.privateKey), context: Self.sealContext(id))
        return (IdentityProof.writeKey(key.publicKey), sealed)
    }

    /// What a reset removed.
    package enum ResetOutcome: Sendable, Equatable {
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
    package func reset(force: Bool = false) throws -> ResetOutcome {
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
        state.withLock { $0.current = nil }
        return outcome
    }

    /// The stored identity, made first when there is none (a new identifier, and with the secrets
    /// key a new key), and given a key when it is a row from before keys. Whatever another replica
    /// wrote first wins: every write is conditional, and the row is read back.
    private func readOrCreate(_ db: (any SQLExecutor)? = nil) throws -> InstallationIdentity {
        let db = db ?? database
        if let stored = try storedInstanceID(db) {
            guard stored.publicKey == nil, let secrets else { return open(stored) }
            let key = try newKey(for: stored.instanceID, secrets: secrets)
            try db.execute(
                """
                UPDATE server_identity SET public_key = $1, sealed_key = $2
                WHERE id = 1 AND instance_id = $3 AND public_key IS NULL
                """, [.text(key.publicKey), .text(key.sealed), .text(stored.instanceID.description)])
        } else {
            let candidate = InstanceID(try random.uuid())
            let key = try secrets.map { try newKey(for: candidate, secrets: $0) }
            try db.execute(
                """
                INSERT INTO server_identity (id, instance_id, created_at, public_key, sealed_key)
                VALUES (1, $1, $2, $3, $4) ON CONFLICT (id) DO NOTHING
                """,
                [
                    .text(candidate.description), .integer(Int64(now().timeIntervalSince1970)),
                    key.map { .text($0.publicKey) } ?? .null, key.map { .text($0.sealed) } ?? .null,
                ])
        }
        guard let stored = try storedInstanceID(db) else { throw IdentityError.notStored }
        return open(stored)
    }
}

/// The installation's identifier and, where it has one, its key.
package struct InstallationIdentity: Sendable {
    /// The identifier.
    package let instanceID: InstanceID
    /// The installation key; `nil` on a server without the secrets key, or a row from before keys
    /// read without it.
    package let key: (any InstallationSigningKey)?
    /// Whether the row holds a key this process cannot open (no secrets key, or another one): it
    /// must not answer the identity route as a server without a key.
    package let keyWithheld: Bool
    /// The public half as written on the wire, if there is a key.
    package let publicKey: String?

    /// The key's fingerprint as people compare it (`SHA256:…`), if there is a key.
    package var keyFingerprint: String? { publicKey.flatMap(StoredIdentity.fingerprint(ofKey:)) }

    init(instanceID: InstanceID, key: (any InstallationSigningKey)?, keyWithheld: Bool = false) {
        self.instanceID = instanceID
        self.key = key
        self.keyWithheld = keyWithheld
        self.publicKey = key.map { IdentityProof.writeKey($0.publicKey) }
    }
}

/// The identity row as stored.
package struct StoredIdentity: Sendable, Equatable {
    /// The installation's identifier.
    package var instanceID: InstanceID
    /// When the row was created, if recorded.
    package var createdAt: Date?
    /// The installation key's public half (``IdentityProof/writeKey(_:)``), if it has one.
    package var publicKey: String?
    /// The private half, sealed with the secrets key.
    var sealedKey: String?

    /// The key's fingerprint as people compare it: `SHA256:` and the SHA-256 of the raw public
    /// key in base64 without padding (as `ssh-keygen -l` writes one).
    package var keyFingerprint: String? { publicKey.flatMap(Self.fingerprint(ofKey:)) }

    /// The fingerprint of a key as written on the wire; `nil` for anything that is not one.
    static func fingerprint(ofKey publicKey: String) -> String? {
        IdentityProof.readKey(publicKey).map { IdentityProof.fingerprint(sha256: Digest.sha256($0)) }
    }
}

/// Why the identity could not be answered.
package enum IdentityError: Error, Equatable, CustomStringConvertible {
    /// The row holds something that is not a UUID.
    case corrupt
    /// The insert succeeded but no row could be read back.
    case notStored
    /// This replica has not written its heartbeat for too long: the identity it cached may have
    /// been reset meanwhile.
    case leaseLapsed

    /// A sentence for logs.
    package var description: String {
        switch self {
        case .corrupt: "the server_identity row does not hold a UUID"
        case .notStored: "the server_identity row could not be read back after creating it"
        case .leaseLapsed: "this replica has not written its heartbeat for too long to trust its cached identity"
        }
    }
}

/// `identity reset` refused: these replicas are serving (their heartbeats are fresh).
package struct ResetRefused: Error, Equatable {
    /// The live replicas.
    package var replicas: [ReplicaInfo]
}
