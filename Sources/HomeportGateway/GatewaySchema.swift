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
        // A count of each server's device changes, raised by every write of `gateway_devices`
        // whatever makes it: a process's cache of a server's devices holds while the count is
        // the one it was filled at (GatewayDeviceCache).
        Migration(version: 3, name: "devices_version") { dialect in
            let add = "ALTER TABLE gateway_servers ADD COLUMN devices_version BIGINT NOT NULL DEFAULT 0"
            func bump(_ row: String) -> String {
                "UPDATE gateway_servers SET devices_version = devices_version + 1 WHERE id = \(row).server_id;"
            }
            guard dialect == .postgres else {
                return [add]
                    + [
                        ("insert", "INSERT", ["NEW"]), ("update", "UPDATE", ["OLD", "NEW"]),
                        ("delete", "DELETE", ["OLD"]),
                    ]
                    .map { name, event, rows in
                        // An update that moved a device to another server changes both.
                        let bumps =
                            rows.count == 1
                            ? bump(rows[0])
                            : """
                            UPDATE gateway_servers SET devices_version = devices_version + 1
                            WHERE id IN (OLD.server_id, NEW.server_id);
                            """
                        return """
                            CREATE TRIGGER IF NOT EXISTS gateway_devices_version_\(name) AFTER \(event) ON gateway_devices
                            BEGIN
                            \(bumps)
                            END
                            """
                    }
            }
            return [
                add,
                """
                CREATE OR REPLACE FUNCTION gateway_devices_version() RETURNS trigger LANGUAGE plpgsql AS $body$
                BEGIN
                    IF TG_OP = 'INSERT' THEN
                        \(bump("NEW"))
                    ELSIF TG_OP = 'DELETE' THEN
                        \(bump("OLD"))
                    ELSE
                        UPDATE gateway_servers SET devices_version = devices_version + 1
                        WHERE id IN (OLD.server_id, NEW.server_id);
                    END IF;
                    RETURN NULL;
                END
                $body$
                """,
                """
                CREATE TRIGGER gateway_devices_version AFTER INSERT OR UPDATE OR DELETE ON gateway_devices
                FOR EACH ROW EXECUTE FUNCTION gateway_devices_version()
                """,
            ]
        },
    ]

    /// The component's name.
    package static let component = "push-gateway"

    /// A migrator over ``migrations``.
    package static var migrator: Migrator { Migrator(component: component, migrations: migrations) }
}
