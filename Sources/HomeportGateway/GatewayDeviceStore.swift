import HomeportServer
import HomeportStorage
import HomeportWire

/// One device a server registered with the gateway: an APNs token, or an FCM or Web Push
/// device with the address the gateway pushes to (never in a log).
struct GatewayDevice: Hashable {
    /// The APNs token, or the server's name for the device (`fcm:…`, `webpush:…`).
    var token: String
    /// Which push service carries its pushes.
    var provider: PushProvider
    /// Which APNs host (APNs only).
    var environment: PushEnvironment
    /// FCM's registration token, or the Web Push endpoint.
    var endpoint: String?
    /// The Web Push subscription's keys.
    var p256dh: String?
    var auth: String?
}

/// The `gateway_devices` table: which devices each server registered.
struct GatewayDeviceStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// Registers `device` for `server` (again).
    func register(server: Int64, _ device: GatewayDevice, now: Int64) throws {
        try db.execute(
            """
            INSERT INTO gateway_devices (server_id, token, environment, updated_at, provider, endpoint, p256dh, auth)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            ON CONFLICT (server_id, token) DO UPDATE SET environment = excluded.environment,
                updated_at = excluded.updated_at, provider = excluded.provider, endpoint = excluded.endpoint,
                p256dh = excluded.p256dh, auth = excluded.auth
            """,
            [
                .integer(server), .text(device.token), .text(device.environment.rawValue), .integer(now),
                .text(device.provider.rawValue), device.endpoint.map(SQLValue.text) ?? .null,
                device.p256dh.map(SQLValue.text) ?? .null, device.auth.map(SQLValue.text) ?? .null,
            ])
    }

    /// Whether `server` registered `token`.
    func holds(server: Int64, token: String) throws -> Bool {
        !(try db.execute(
            "SELECT 1 AS one FROM gateway_devices WHERE server_id = $1 AND token = $2",
            [.integer(server), .text(token)]
        ).isEmpty)
    }

    /// Removes `token` from `server`'s devices; after a 410, only if it was not registered again
    /// after the service's timestamp.
    func remove(server: Int64, token: String, unlessUpdatedAfter since: Int64? = nil) throws {
        if let since {
            try db.execute(
                "DELETE FROM gateway_devices WHERE server_id = $1 AND token = $2 AND updated_at <= $3",
                [.integer(server), .text(token), .integer(since)])
        } else {
            try db.execute(
                "DELETE FROM gateway_devices WHERE server_id = $1 AND token = $2", [.integer(server), .text(token)])
        }
    }

    /// Which of `tokens` `server` registered, by token.
    func registered(server: Int64, among tokens: [String]) throws -> [String: GatewayDevice] {
        var found: [String: GatewayDevice] = [:]
        found.reserveCapacity(tokens.count)
        // A token named twice is one row: the database's IN list holds it once.
        for (chunk, placeholders) in SQLList.chunks(tokens, first: 2) {
            for row in try db.execute(
                """
                SELECT token, provider, environment, endpoint, p256dh, auth FROM gateway_devices
                WHERE server_id = $1 AND token IN (\(placeholders))
                """,
                [.integer(server)] + chunk.map(SQLValue.text))
            {
                // By position, as selected: a thousand rows a batch.
                guard let token = row.string(at: 0),
                    let provider = row.string(at: 1).flatMap(PushProvider.init(rawValue:)),
                    let environment = row.string(at: 2).flatMap(PushEnvironment.init(rawValue:))
                else { continue }
                found[token] = GatewayDevice(
                    token: token, provider: provider, environment: environment, endpoint: row.string(at: 3),
                    p256dh: row.string(at: 4), auth: row.string(at: 5))
            }
        }
        return found
    }

    /// Runs `writes`, the changes of `server`'s devices in the transaction this store is in, and
    /// returns what they returned with the server's mark before and after them (for
    /// ``GatewayDeviceCache/apply(server:from:to:registered:removed:)``), or `nil`, writing
    /// nothing, when the server was revoked. Its first write holds the server's row (PostgreSQL)
    /// or the database (SQLite) until the transaction ends, so no other change lands between
    /// these, and a revocation (which takes the row first too) never waits for it the other way
    /// round.
    func change<T>(server: Int64, _ writes: () throws -> T) throws -> (result: T, before: Int64, after: Int64)? {
        guard
            let before = try db.execute(
                """
                UPDATE gateway_servers SET devices_version = devices_version WHERE id = $1 AND revoked_at IS NULL
                RETURNING devices_version
                """, [.integer(server)]
            ).first?.int("devices_version")
        else { return nil }
        let result = try writes()
        return (result, before, try version(server: server))
    }

    /// The mark of `server`'s devices (drawn anew by each write of them: `GatewaySchema`'s
    /// migration 3).
    func version(server: Int64) throws -> Int64 {
        guard
            let version = try db.execute(
                "SELECT devices_version FROM gateway_servers WHERE id = $1", [.integer(server)]
            ).first?.int("devices_version")
        else { throw GatewayDeviceStoreError.noSuchServer }
        return version
    }

    /// How many devices `server` registered.
    func count(server: Int64) throws -> Int64 {
        try db.execute("SELECT COUNT(*) AS count FROM gateway_devices WHERE server_id = $1", [.integer(server)])
            .first?.int("count") ?? 0
    }
}

/// A change of devices named a server that is not there.
enum GatewayDeviceStoreError: Error {
    case noSuchServer
}
