import HomeportCrypto
import HomeportStorage
import HomeportWire

/// The `push_gateway_changes` table: device registrations and removals the push gateway has not
/// heard of yet, one row per device token (its latest change), with a version that moves on every
/// change so that a change made while the row was being sent is not lost.
///
/// Triggers on `push_devices` (migrations 11 and 22) fill it, whatever removed a device (the
/// app, a sign-out, a session's end, the account's deletion, the per-account cap, the push
/// service's refusal), but only while a serving process is configured with a gateway (the
/// `push-gateway` row of `serving_settings`). One replica at a time sends the changes of the
/// kinds the gateway carries to it, before each batch of pushes and whenever nothing is due.
struct PushGatewaySync {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// One device's change.
    struct Change: Hashable {
        var token: String
        var environment: PushEnvironment
        var registered: Bool
        var version: Int64
        /// For a registration of an FCM device or a Web Push subscription: the FCM token, or the
        /// endpoint, and the subscription's keys (read from `push_devices` as it is now).
        var endpoint: String?
        var p256dh: String?
        var auth: String?

        /// Which push service the device is of, by its name.
        var provider: PushProvider {
            if token.hasPrefix(WebPushSubscription.tokenPrefix) { return .webpush }
            if token.hasPrefix(FCMRegistration.tokenPrefix) { return .fcm }
            return .apns
        }

        /// The registration the gateway is sent, or `nil` for a removal (or a device whose row
        /// lacks what its kind needs).
        var registration: PushDeviceRegistration? {
            guard registered else { return nil }
            switch provider {
            case .apns: return PushDeviceRegistration(token: token, environment: environment)
            case .fcm: return endpoint.map { PushDeviceRegistration(fcmToken: $0) }
            case .webpush:
                guard let endpoint, let p256dh, let auth else { return nil }
                return PushDeviceRegistration(webPushEndpoint: endpoint, keys: WebPushKeys(p256dh: p256dh, auth: auth))
            }
        }
    }

    /// The row of `serving_settings` that switches the triggers on.
    static let settingName = "push-gateway"

    /// Records that this database's pushes of `providers` go to `gateway`. A gateway (or a
    /// credential, or a kind it carries) that is new, or another than the one recorded, hears of
    /// every registered device of those kinds.
    func serve(gateway: PushGatewaySettings, providers: Set<PushProvider>, now: Int64) throws {
        let kinds = providers.map(\.rawValue).sorted()
        let serving =
            gateway.url + " " + SecretToken.storedForm(of: gateway.credential) + " "
            + kinds.joined(separator: ",")
        let recorded = try db.execute(
            "SELECT value FROM serving_settings WHERE name = $1", [.text(Self.settingName)]
        ).first?.string("value")
        guard recorded != serving else { return }
        try db.execute(
            """
            INSERT INTO serving_settings (name, value, updated_at) VALUES ($1, $2, $3)
            ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
            """, [.text(Self.settingName), .text(serving), .integer(now)])
        let placeholders = kinds.indices.map { "$\($0 + 1)" }.joined(separator: ", ")
        try db.execute(
            """
            INSERT INTO push_gateway_changes (token, environment, registered, version)
            SELECT token, environment, 1, 1 FROM push_devices WHERE provider IN (\(placeholders))
            ON CONFLICT (token) DO UPDATE SET environment = excluded.environment, registered = 1,
                version = push_gateway_changes.version + 1
            """, kinds.map(SQLValue.text))
    }

    /// The row of `serving_settings` that says which replica forwards device changes.
    static let forwarderName = "push-gateway-forwarder"

    /// Claims the forwarding of device changes for `claimant` until `now + lease` (or renews its
    /// claim): one replica at a time forwards them, so a removal never reaches the gateway
    /// before the registration it undoes. False while another replica's claim holds.
    func claimForwarding(_ claimant: String, now: Int64, lease: Int64) throws -> Bool {
        !(try db.execute(
            """
            INSERT INTO serving_settings (name, value, updated_at) VALUES ($1, $2, $3)
            ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
            WHERE serving_settings.value = excluded.value OR serving_settings.updated_at < $4
            RETURNING name
            """, [.text(Self.forwarderName), .text(claimant), .integer(now + lease), .integer(now)]
        ).isEmpty)
    }

    /// Records that this database's pushes go to APNs directly: the triggers stop, and what they
    /// recorded goes.
    func serveWithoutGateway() throws {
        try db.execute("DELETE FROM serving_settings WHERE name = $1", [.text(Self.settingName)])
        try db.execute("DELETE FROM push_gateway_changes")
    }

    /// Up to `limit` changes, in token order, each registration with its device as it is now.
    func pending(limit: Int) throws -> [Change] {
        try db.execute(
            """
            SELECT c.token AS token, c.environment AS environment, c.registered AS registered,
                c.version AS version, d.endpoint AS endpoint, d.p256dh AS p256dh, d.auth AS auth
            FROM push_gateway_changes c LEFT JOIN push_devices d ON d.token = c.token
            ORDER BY c.token LIMIT $1
            """,
            [.integer(Int64(limit))]
        ).compactMap { row in
            guard let token = row.string("token"),
                let environment = row.string("environment").flatMap(PushEnvironment.init),
                let registered = row.int("registered"), let version = row.int("version")
            else { return nil }
            return Change(
                token: token, environment: environment, registered: registered == 1, version: version,
                endpoint: row.string("endpoint"), p256dh: row.string("p256dh"), auth: row.string("auth"))
        }
    }

    /// Forgets changes the gateway acknowledged (or that are of kinds it does not carry), unless
    /// one changed again since.
    func acknowledge(_ changes: [Change]) throws {
        for change in changes {
            try db.execute(
                "DELETE FROM push_gateway_changes WHERE token = $1 AND version = $2",
                [.text(change.token), .integer(change.version)])
        }
    }

    /// Registers `token` with the gateway again, if it is still registered here; false if not.
    func requeue(token: String) throws -> Bool {
        !(try db.execute(
            """
            INSERT INTO push_gateway_changes (token, environment, registered, version)
            SELECT token, environment, 1, 1 FROM push_devices WHERE token = $1
            ON CONFLICT (token) DO UPDATE SET environment = excluded.environment, registered = 1,
                version = push_gateway_changes.version + 1
            RETURNING token
            """, [.text(token)]
        ).isEmpty)
    }
}
