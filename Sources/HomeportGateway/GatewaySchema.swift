import HomeportStorage

/// The push gateway's schema, as the migrations of its own component (`push-gateway`), so a
/// gateway's database never mixes with a server's. Append only.
package enum GatewaySchema {
    /// Every migration, oldest first.
    package static let migrations: [Migration] = [
        Migration(version: 1, name: "servers_devices") { dialect in
            let id = dialect == .postgres ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"
            return [
                // One enrolled server: its installation id, the address it was enrolled from, the
                // credential's SHA-256, its rate window, and what it sent.
                """
                CREATE TABLE IF NOT EXISTS gateway_servers (
                    id \(id),
                    name TEXT NOT NULL UNIQUE,
                    instance_id TEXT NOT NULL,
                    url TEXT NOT NULL,
                    credential_hash TEXT NOT NULL UNIQUE,
                    created_at BIGINT NOT NULL,
                    revoked_at BIGINT,
                    window_start BIGINT NOT NULL DEFAULT 0,
                    window_pushes BIGINT NOT NULL DEFAULT 0,
                    delivered BIGINT NOT NULL DEFAULT 0,
                    refused BIGINT NOT NULL DEFAULT 0,
                    failed BIGINT NOT NULL DEFAULT 0,
                    last_push_at BIGINT
                )
                """,
                // One working enrollment per installation: a second claimant of an id is refused
                // until the first is revoked.
                """
                CREATE UNIQUE INDEX IF NOT EXISTS gateway_servers_live_instance ON gateway_servers (instance_id)
                WHERE revoked_at IS NULL
                """,
                // The devices each server registered: a server pushes to these only.
                """
                CREATE TABLE IF NOT EXISTS gateway_devices (
                    server_id BIGINT NOT NULL REFERENCES gateway_servers (id) ON DELETE CASCADE,
                    token TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    updated_at BIGINT NOT NULL,
                    PRIMARY KEY (server_id, token)
                )
                """,
                // The provider token, shared by every gateway replica (ProviderTokenSource).
                """
                CREATE TABLE IF NOT EXISTS apns_provider_token (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    key_id TEXT NOT NULL,
                    team_id TEXT NOT NULL,
                    token TEXT NOT NULL,
                    issued_at BIGINT NOT NULL
                )
                """,
            ]
        },
        // FCM and Web Push devices beside APNs ones: an FCM device is named `fcm:` and its token's
        // SHA-256, the token kept in `endpoint`; a Web Push subscription `webpush:` and its
        // endpoint's SHA-256, with its keys. FCM's access token, shared by every replica.
        Migration(
            version: 2, name: "push_providers",
            statements: [
                "ALTER TABLE gateway_devices ADD COLUMN provider TEXT NOT NULL DEFAULT 'apns'",
                "ALTER TABLE gateway_devices ADD COLUMN endpoint TEXT",
                "ALTER TABLE gateway_devices ADD COLUMN p256dh TEXT",
                "ALTER TABLE gateway_devices ADD COLUMN auth TEXT",
                """
                CREATE TABLE IF NOT EXISTS fcm_access_tokens (
                    project_id TEXT PRIMARY KEY,
                    client_email TEXT NOT NULL,
                    token TEXT NOT NULL,
                    expires_at BIGINT NOT NULL
                )
                """,
            ]),
        // A mark of each server's devices (a random number, drawn anew by every write of
        // `gateway_devices`, whatever makes it, on any replica, so a restored or failed-over
        // database never reaches an old mark with other devices): a process's cache of a
        // server's devices holds while the mark is the one it was filled at
        // (GatewayDeviceCache). PostgreSQL draws once a transaction (`devices_txid`: each update
        // of the server's row in one leaves a row version the next must step over), SQLite
        // once a row.
        Migration(version: 3, name: "devices_version") { dialect in
            let add = "ALTER TABLE gateway_servers ADD COLUMN devices_version BIGINT NOT NULL DEFAULT 0"
            guard dialect == .postgres else {
                return [add]
                    + [
                        ("insert", "INSERT", "NEW.server_id"), ("update", "UPDATE", "OLD.server_id, NEW.server_id"),
                        ("delete", "DELETE", "OLD.server_id"),
                    ]
                    .map { name, event, servers in
                        """
                        CREATE TRIGGER IF NOT EXISTS gateway_devices_version_\(name) AFTER \(event) ON gateway_devices
                        BEGIN
                        UPDATE gateway_servers SET devices_version = random() WHERE id IN (\(servers));
                        END
                        """
                    }
            }
            // A trigger with transition tables has one event.
            return [add, "ALTER TABLE gateway_servers ADD COLUMN devices_txid BIGINT"]
                + [
                    ("insert", "INSERT", "NEW TABLE AS new_rows", "SELECT server_id FROM new_rows"),
                    ("delete", "DELETE", "OLD TABLE AS old_rows", "SELECT server_id FROM old_rows"),
                    (
                        "update", "UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows",
                        "SELECT server_id FROM old_rows UNION SELECT server_id FROM new_rows"
                    ),
                ].flatMap { name, event, tables, servers in
                    [
                        """
                        CREATE OR REPLACE FUNCTION gateway_devices_\(name)() RETURNS trigger LANGUAGE plpgsql AS $body$
                        BEGIN
                            UPDATE gateway_servers
                            SET devices_version = (random() * 9.2e18)::bigint, devices_txid = txid_current()
                            WHERE id IN (\(servers)) AND devices_txid IS DISTINCT FROM txid_current();
                            RETURN NULL;
                        END
                        $body$
                        """,
                        // Run again when its record is lost, as every migration may be.
                        "DROP TRIGGER IF EXISTS gateway_devices_\(name) ON gateway_devices",
                        """
                        CREATE TRIGGER gateway_devices_\(name) AFTER \(event) ON gateway_devices
                        REFERENCING \(tables) FOR EACH STATEMENT EXECUTE FUNCTION gateway_devices_\(name)()
                        """,
                    ]
                }
        },
    ]

    /// The component's name.
    package static let component = "push-gateway"

    /// A migrator over ``migrations``.
    package static var migrator: Migrator { Migrator(component: component, migrations: migrations) }
}
