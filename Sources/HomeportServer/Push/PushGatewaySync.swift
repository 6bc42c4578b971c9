import HomeportCrypto
import HomeportStorage
import HomeportWire

/// The `push_gateway_changes` table: device registrations and removals the push gateway has not
/// heard of yet, one row per device token (its latest change), with a version that moves on every
/// change so that a change made while the row was being sent is not lost.
///
/// Triggers on `push_devices` (migration 11) fill it, whatever removed a device (the app, a
/// sign-out, a session's end, the account's deletion, the per-account cap, Apple's refusal), but
/// only while a serving process is configured with a gateway (the `push-gateway` row of
/// `serving_settings`). One replica at a time sends it to the gateway, before each batch of
/// pushes and whenever nothing is due.
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
    }

    /// The row of `serving_settings` that switches the triggers on.
    static let settingName = "push-gateway"

    /// Records that this database's pushes go to `gateway`. A gateway (or a credential) that is
    /// new, or another than the one recorded, hears of every registered device.
    func serve(gateway: PushGatewaySettings, now: Int64) throws {
        let serving = gateway.url + " " + SecretToken.storedForm(of: gateway.credential)
        let recorded = try db.execute(
            "SELECT value FROM serving_settings WHERE name = $1", [.text(Self.settingName)]
        ).first?.string("value")
        guard recorded != serving else { return }
        try db.execute(
            """
            INSERT INTO serving_settings (name, value, updated_at) VALUES ($1, $2, $3)
            ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
            """, [.text(Self.settingName), .text(serving), .integer(now)])
        try db.execute(
            """
            INSERT INTO push_gateway_changes (token, environment, registered, version)
            SELECT token, environment, 1, 1 FROM push_devices WHERE provider = 'apns'
            ON CONFLICT (token) DO UPDATE SET environment = excluded.environment, registered = 1,
                version = push_gateway_changes.version + 1
            """)
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

    /// Up to `limit` changes, in token order (APNs devices only: the gateway carries nothing
    /// else, and the triggers note nothing else).
    func pending(limit: Int) throws -> [Change] {
        try db.execute(
            "SELECT token, environment, registered, version FROM push_gateway_changes ORDER BY token LIMIT $1",
            [.integer(Int64(limit))]
        ).compactMap { row in
            guard let token = row.string("token"),
                let environment = row.string("environment").flatMap(PushEnvironment.init),
                let registered = row.int("registered"), let version = row.int("version")
            else { return nil }
            return Change(token: token, environment: environment, registered: registered == 1, version: version)
        }
    }

    /// Forgets changes the gateway acknowledged, unless one changed again since.
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
            SELECT token, environment, 1, 1 FROM push_devices WHERE token = $1 AND provider = 'apns'
            ON CONFLICT (token) DO UPDATE SET environment = excluded.environment, registered = 1,
                version = push_gateway_changes.version + 1
            RETURNING token
            """, [.text(token)]
        ).isEmpty)
    }
}
