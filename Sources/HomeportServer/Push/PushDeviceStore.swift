import HomeportStorage
import HomeportWire

/// One device registered for pushes on this server.
public struct PushDevice: Sendable, Hashable {
    /// The APNs device token, lowercase hex.
    public var token: String
    /// Which APNs environment issued it.
    public var environment: PushEnvironment
    /// The app's bundle id the token belongs to.
    public var topic: String
    /// The account it pushes to.
    public var userID: Int64
    /// When it was registered (or registered again), in Unix seconds.
    public var updatedAt: Int64
    /// The key hash of the session that registered it (`nil` for a row written without one).
    var sessionKeyHash: String?
}

/// The `push_devices` table: one row per device token on this server.
struct PushDeviceStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// Registers a token for an account through a session; a token another account registered
    /// moves to this one (one phone, one row per server).
    func register(
        token: String, environment: PushEnvironment, topic: String, userID: Int64, session keyHash: String, now: Int64
    ) throws {
        try db.execute(
            """
            INSERT INTO push_devices (token, environment, topic, user_id, session_key_hash, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $6)
            ON CONFLICT (token) DO UPDATE SET environment = $2, topic = $3, user_id = $4, session_key_hash = $5,
                updated_at = $6
            """,
            [.text(token), .text(environment.rawValue), .text(topic), .integer(userID), .text(keyHash), .integer(now)])
    }

    /// Keeps `token` and the account's `newest - 1` other most recently registered devices, and
    /// removes the rest. (Registrations in the same second tie; the one just made is never the
    /// one to go.)
    func keepNewest(_ newest: Int, keeping token: String, userID: Int64) throws {
        try db.execute(
            """
            DELETE FROM push_devices WHERE user_id = $1 AND token <> $2 AND token NOT IN (
                SELECT token FROM push_devices WHERE user_id = $1 AND token <> $2
                ORDER BY updated_at DESC, token DESC LIMIT $3)
            """, [.integer(userID), .text(token), .integer(Int64(max(0, newest - 1)))])
    }

    /// Removes a token, if the account holds it.
    func remove(token: String, userID: Int64) throws {
        try db.execute("DELETE FROM push_devices WHERE token = $1 AND user_id = $2", [.text(token), .integer(userID)])
    }

    /// Removes a token Apple refused; after a `410 Unregistered`, only if nobody registered it
    /// again after Apple's timestamp (`unless`, in Unix seconds). Returns whether a registration
    /// was removed.
    @discardableResult
    func prune(token: String, unlessUpdatedAfter unless: Int64? = nil) throws -> Bool {
        if let unless {
            return
                !(try db.execute(
                    "DELETE FROM push_devices WHERE token = $1 AND updated_at <= $2 RETURNING token",
                    [.text(token), .integer(unless)]
                ).isEmpty)
        }
        return !(try db.execute("DELETE FROM push_devices WHERE token = $1 RETURNING token", [.text(token)]).isEmpty)
    }

    /// An account's devices; with `newest`, only that many of the most recently registered.
    func devices(userID: Int64, newest: Int? = nil) throws -> [PushDevice] {
        guard let newest else {
            return try db.execute(
                "SELECT token, environment, topic, user_id, updated_at FROM push_devices WHERE user_id = $1 ORDER BY token",
                [.integer(userID)]
            ).compactMap(Self.device)
        }
        return try db.execute(
            """
            SELECT token, environment, topic, user_id, updated_at, session_key_hash FROM push_devices
            WHERE user_id = $1 ORDER BY updated_at DESC, token DESC LIMIT $2
            """, [.integer(userID), .integer(Int64(newest))]
        ).compactMap(Self.device)
    }

    /// Every device, with its account's address, for operators.
    func all() throws -> [(device: PushDevice, email: String)] {
        try db.execute(
            """
            SELECT d.token, d.environment, d.topic, d.user_id, d.updated_at, u.email AS email
            FROM push_devices d JOIN users u ON u.id = d.user_id ORDER BY u.email, d.token
            """
        ).compactMap { row in Self.device(row).map { ($0, row.string("email") ?? "") } }
    }

    private static func device(_ row: Row) -> PushDevice? {
        guard let token = row.string("token"),
            let environment = row.string("environment").flatMap(PushEnvironment.init),
            let topic = row.string("topic"), let userID = row.int("user_id"), let updated = row.int("updated_at")
        else { return nil }
        return PushDevice(
            token: token, environment: environment, topic: topic, userID: userID, updatedAt: updated,
            sessionKeyHash: row.string("session_key_hash"))
    }
}
