import HomeportStorage
import HomeportWire

/// One device registered for pushes on this server.
package struct PushDevice: Sendable, Hashable {
    /// The APNs device token, lowercase hex; for Web Push, the subscription's name here
    /// (`webpush:` and the SHA-256 of its endpoint).
    package var token: String
    /// Which APNs environment issued it.
    package var environment: PushEnvironment
    /// The app's bundle id the token belongs to.
    package var topic: String
    /// The account it pushes to.
    package var userID: Int64
    /// When it was registered (or registered again), in Unix seconds.
    package var updatedAt: Int64
    /// The key hash of the session that registered it (`nil` for a row written without one).
    var sessionKeyHash: String?
    /// Which push service carries its pushes.
    package var provider: PushProvider = .apns
    /// For Web Push: where its pushes go and the keys that encrypt them.
    package var webPush: WebPushTarget?
    /// For FCM: the app's registration token (``token`` is the server's name for it).
    package var fcmToken: String?
}

/// Where a Web Push goes and the subscription's keys that encrypt it.
package struct WebPushTarget: Sendable, Hashable {
    /// The push service's URL for this subscription.
    package var endpoint: String
    /// The subscription's P-256 public key, base64url (65 bytes).
    package var p256dh: String
    /// The subscription's authentication secret, base64url (16 bytes).
    package var auth: String

    /// Creates a target.
    package init(endpoint: String, p256dh: String, auth: String) {
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
    }
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
        token: String, environment: PushEnvironment, topic: String, userID: Int64, session keyHash: String, now: Int64,
        provider: PushProvider = .apns, webPush: WebPushTarget? = nil, fcmToken: String? = nil
    ) throws {
        // The endpoint column holds where the push service takes the device's pushes: a Web Push
        // endpoint, or an FCM registration token.
        let address = webPush?.endpoint ?? fcmToken
        try db.execute(
            """
            INSERT INTO push_devices (token, environment, topic, user_id, session_key_hash, created_at, updated_at,
                provider, endpoint, p256dh, auth)
            VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8, $9, $10)
            ON CONFLICT (token) DO UPDATE SET environment = $2, topic = $3, user_id = $4, session_key_hash = $5,
                updated_at = $6, provider = $7, endpoint = $8, p256dh = $9, auth = $10
            """,
            [
                .text(token), .text(environment.rawValue), .text(topic), .integer(userID), .text(keyHash),
                .integer(now), .text(provider.rawValue), address.map(SQLValue.text) ?? .null,
                webPush.map { .text($0.p256dh) } ?? .null, webPush.map { .text($0.auth) } ?? .null,
            ])
    }

    /// Keeps `token` and the account's `newest - 1` other most recently registered devices, and
    /// removes the rest. (Registrations in the same second tie; the one just made is never the
    /// one to go.)
    /// Returns the tokens removed.
    @discardableResult
    func keepNewest(_ newest: Int, keeping token: String, userID: Int64) throws -> [String] {
        try db.execute(
            """
            DELETE FROM push_devices WHERE user_id = $1 AND token <> $2 AND token NOT IN (
                SELECT token FROM push_devices WHERE user_id = $1 AND token <> $2
                ORDER BY updated_at DESC, token DESC LIMIT $3)
            RETURNING token
            """, [.integer(userID), .text(token), .integer(Int64(max(0, newest - 1)))]
        ).compactMap { $0.string("token") }
    }

    /// Removes a token, if the account holds it; whether it did.
    @discardableResult
    func remove(token: String, userID: Int64) throws -> Bool {
        !(try db.execute(
            "DELETE FROM push_devices WHERE token = $1 AND user_id = $2 RETURNING token",
            [.text(token), .integer(userID)]
        ).isEmpty)
    }

    /// The devices registered through a session (which go when it ends).
    func tokens(session keyHash: String) throws -> [String] {
        try db.execute("SELECT token FROM push_devices WHERE session_key_hash = $1", [.text(keyHash)])
            .compactMap { $0.string("token") }
    }

    /// The devices registered through sessions that expired by `now`.
    func tokens(sessionsExpiredBy now: Int64) throws -> [String] {
        try db.execute(
            """
            SELECT d.token FROM sessions s JOIN push_devices d ON d.session_key_hash = s.key_hash
            WHERE s.expires_at <= $1
            """, [.integer(now)]
        ).compactMap { $0.string("token") }
    }

    /// The account's devices registered through one of its sessions.
    func tokens(signedInUserID userID: Int64) throws -> [String] {
        try db.execute(
            "SELECT token FROM push_devices WHERE user_id = $1 AND session_key_hash IS NOT NULL", [.integer(userID)]
        ).compactMap { $0.string("token") }
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

    /// The registration of `token`, whoever holds it.
    func holder(token: String) throws -> PushDevice? {
        try db.execute(
            """
            SELECT token, environment, topic, user_id, updated_at, provider, endpoint, p256dh, auth
            FROM push_devices WHERE token = $1
            """, [.text(token)]
        ).compactMap(Self.device).first
    }

    /// An account's devices; with `newest`, only that many of the most recently registered.
    func devices(userID: Int64, newest: Int? = nil) throws -> [PushDevice] {
        guard let newest else {
            return try db.execute(
                """
                SELECT token, environment, topic, user_id, updated_at, provider, endpoint, p256dh, auth
                FROM push_devices WHERE user_id = $1 ORDER BY token
                """,
                [.integer(userID)]
            ).compactMap(Self.device)
        }
        return try db.execute(
            """
            SELECT token, environment, topic, user_id, updated_at, session_key_hash, provider, endpoint, p256dh, auth
            FROM push_devices WHERE user_id = $1 ORDER BY updated_at DESC, token DESC LIMIT $2
            """, [.integer(userID), .integer(Int64(newest))]
        ).compactMap(Self.device)
    }

    /// Every device, with its account's address, for operators.
    func all() throws -> [(device: PushDevice, email: String)] {
        try db.execute(
            """
            SELECT d.token, d.environment, d.topic, d.user_id, d.updated_at, d.provider, d.endpoint, d.p256dh, d.auth,
                u.email AS email
            FROM push_devices d JOIN users u ON u.id = d.user_id ORDER BY u.email, d.token
            """
        ).compactMap { row in Self.device(row).map { ($0, row.string("email") ?? "") } }
    }

    private static func device(_ row: Row) -> PushDevice? {
        guard let token = row.string("token"),
            let environment = row.string("environment").flatMap(PushEnvironment.init),
            let topic = row.string("topic"), let userID = row.int("user_id"), let updated = row.int("updated_at")
        else { return nil }
        let provider = row.string("provider").flatMap(PushProvider.init(rawValue:)) ?? .apns
        var webPush: WebPushTarget?
        var fcmToken: String?
        switch provider {
        case .apns: break
        case .webpush:
            guard let endpoint = row.string("endpoint"), let p256dh = row.string("p256dh"),
                let auth = row.string("auth")
            else { return nil }
            webPush = WebPushTarget(endpoint: endpoint, p256dh: p256dh, auth: auth)
        case .fcm:
            guard let address = row.string("endpoint") else { return nil }
            fcmToken = address
        }
        return PushDevice(
            token: token, environment: environment, topic: topic, userID: userID, updatedAt: updated,
            sessionKeyHash: row.string("session_key_hash"), provider: provider, webPush: webPush, fcmToken: fcmToken)
    }
}
