import HomeportStorage

/// The server's schema, as numbered migrations. Append only: never edit a released migration.
package enum HomeportSchema {
    /// Every migration, oldest first.
    package static let migrations: [Migration] = [
        Migration(
            version: 1, name: "server_identity",
            statements: [
                """
                CREATE TABLE IF NOT EXISTS server_identity (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    instance_id TEXT NOT NULL,
                    created_at BIGINT NOT NULL
                )
                """
            ]),
        Migration(version: 2, name: "accounts_sessions_rate_limits") { dialect in
            let id = dialect == .postgres ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"
            return [
                """
                CREATE TABLE IF NOT EXISTS users (
                    id \(id),
                    email TEXT NOT NULL UNIQUE,
                    password_hash TEXT NOT NULL,
                    approval TEXT NOT NULL CHECK (approval IN ('approved', 'waiting', 'rejected', 'held')),
                    created_at BIGINT NOT NULL,
                    password_changed_at BIGINT NOT NULL
                )
                """,
                """
                CREATE TABLE IF NOT EXISTS sessions (
                    key_hash TEXT PRIMARY KEY,
                    user_id BIGINT REFERENCES users (id) ON DELETE CASCADE,
                    kind TEXT NOT NULL CHECK (kind IN ('app', 'web')),
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    authenticated_at DOUBLE PRECISION,
                    standing TEXT CHECK (standing IN ('waiting', 'held', 'mail_failed'))
                )
                """,
                "CREATE INDEX IF NOT EXISTS sessions_user ON sessions (user_id)",
                "CREATE INDEX IF NOT EXISTS sessions_expiry ON sessions (expires_at)",
                """
                CREATE TABLE IF NOT EXISTS password_resets (
                    key_hash TEXT PRIMARY KEY,
                    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL
                )
                """,
                """
                CREATE TABLE IF NOT EXISTS rate_limits (
                    bucket TEXT PRIMARY KEY,
                    window_start BIGINT NOT NULL,
                    hits INTEGER NOT NULL
                )
                """,
                """
                CREATE TABLE IF NOT EXISTS mail_failures (
                    id \(id),
                    kind TEXT NOT NULL,
                    reason TEXT NOT NULL,
                    created_at BIGINT NOT NULL
                )
                """,
            ]
        },
        Migration(
            version: 3, name: "server_secrets_replicas",
            statements: [
                """
                CREATE TABLE IF NOT EXISTS server_secrets (
                    name TEXT PRIMARY KEY,
                    value TEXT NOT NULL,
                    created_at BIGINT NOT NULL
                )
                """,
                """
                CREATE TABLE IF NOT EXISTS replicas (
                    id TEXT PRIMARY KEY,
                    host TEXT NOT NULL,
                    pid BIGINT NOT NULL,
                    listen TEXT NOT NULL,
                    started_at BIGINT NOT NULL,
                    seen_at BIGINT NOT NULL
                )
                """,
            ]),
        Migration(version: 4, name: "push_notifications") { dialect in
            let id = dialect == .postgres ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"
            return [
                // One row per device token on this server; a token registered again by another account
                // moves to it. A registration goes with the session that made it (ON DELETE CASCADE):
                // every way a session ends (logout, password change or reset, hold) drops it.
                """
                CREATE TABLE IF NOT EXISTS push_devices (
                    token TEXT PRIMARY KEY,
                    environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
                    topic TEXT NOT NULL,
                    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    session_key_hash TEXT REFERENCES sessions (key_hash) ON DELETE CASCADE,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX IF NOT EXISTS push_devices_user ON push_devices (user_id)",
                "CREATE INDEX IF NOT EXISTS push_devices_session ON push_devices (session_key_hash)",
                """
                CREATE TABLE IF NOT EXISTS notification_mutes (
                    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    thread TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    PRIMARY KEY (user_id, thread)
                )
                """,
                // Each account's notifications in order (seq counts per account): the in-app stream
                // reads it, and Last-Event-ID is a seq.
                """
                CREATE TABLE IF NOT EXISTS notifications (
                    id \(id),
                    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    seq BIGINT NOT NULL,
                    code TEXT NOT NULL,
                    title TEXT NOT NULL,
                    body TEXT,
                    thread TEXT,
                    object_id BIGINT,
                    catalogue_version TEXT,
                    created_at BIGINT NOT NULL,
                    UNIQUE (user_id, seq)
                )
                """,
                """
                CREATE TABLE IF NOT EXISTS push_outbox (
                    id \(id),
                    apns_id TEXT NOT NULL UNIQUE,
                    device_token TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    topic TEXT NOT NULL,
                    payload TEXT NOT NULL,
                    collapse_id TEXT,
                    priority INTEGER NOT NULL,
                    expiration BIGINT NOT NULL,
                    attempts INTEGER NOT NULL,
                    next_attempt_at BIGINT NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'failed')),
                    claimed_by TEXT,
                    claimed_until BIGINT,
                    last_error TEXT,
                    created_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX IF NOT EXISTS push_outbox_due ON push_outbox (state, next_attempt_at)",
                // The APNs provider token every replica shares (Apple refuses a team's token that
                // changes too often).
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
        // Mail waiting for the SMTP relay: sent off the request's thread, and kept across a restart.
        Migration(version: 5, name: "mail_queue") { dialect in
            let id = dialect == .postgres ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"
            return [
                """
                CREATE TABLE IF NOT EXISTS mail_queue (
                    id \(id),
                    kind TEXT NOT NULL,
                    recipient TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    body TEXT NOT NULL,
                    standing_key_hash TEXT,
                    attempts INTEGER NOT NULL,
                    next_attempt_at BIGINT NOT NULL,
                    claimed_until BIGINT NOT NULL,
                    created_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX IF NOT EXISTS mail_queue_due ON mail_queue (next_attempt_at)",
            ]
        },
        // Verification by a mailed code: the accounts whose address was verified (none made
        // before is), and the codes waiting, one per pre-login session. A table of its own rather
        // than a column, so that every statement can run again (IF NOT EXISTS) on both backends.
        Migration(version: 6, name: "email_verification") { _ in
            [
                """
                CREATE TABLE IF NOT EXISTS verified_emails (
                    user_id BIGINT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
                    verified_at BIGINT NOT NULL
                )
                """,
                """
                CREATE TABLE IF NOT EXISTS email_verifications (
                    key_hash TEXT PRIMARY KEY,
                    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    code_hash TEXT NOT NULL,
                    authenticated_at DOUBLE PRECISION,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX IF NOT EXISTS email_verifications_user ON email_verifications (user_id)",
            ]
        },
        // Keys of products in other languages for the product API (stored hashed), and the
        // notifications each sent under an Idempotency-Key, so that a retry delivers once.
        Migration(version: 7, name: "product_keys") { dialect in
            let id = dialect == .postgres ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"
            return [
                """
                CREATE TABLE IF NOT EXISTS product_keys (
                    id \(id),
                    name TEXT NOT NULL UNIQUE,
                    key_hash TEXT NOT NULL UNIQUE,
                    created_at BIGINT NOT NULL,
                    revoked_at BIGINT
                )
                """,
                """
                CREATE TABLE IF NOT EXISTS product_notifications (
                    key_id BIGINT NOT NULL REFERENCES product_keys (id) ON DELETE CASCADE,
                    idempotency_key TEXT NOT NULL,
                    request_hash TEXT NOT NULL,
                    seq BIGINT NOT NULL,
                    queued BIGINT NOT NULL,
                    created_at BIGINT NOT NULL,
                    PRIMARY KEY (key_id, idempotency_key)
                )
                """,
            ]
        },
        // The codes products declare through the product API (PUT /product/v1/catalogue), each
        // owned by one key; and the product's own values a notification carries (`data`).
        Migration(version: 8, name: "product_catalogue") { _ in
            [
                """
                CREATE TABLE IF NOT EXISTS product_codes (
                    code TEXT PRIMARY KEY,
                    key_id BIGINT NOT NULL REFERENCES product_keys (id) ON DELETE CASCADE,
                    title TEXT NOT NULL
                )
                """,
                "CREATE INDEX IF NOT EXISTS product_codes_key ON product_codes (key_id)",
                // A table of its own rather than a column: every statement of a migration runs
                // again cleanly (IF NOT EXISTS), which ADD COLUMN does not on SQLite.
                """
                CREATE TABLE IF NOT EXISTS notification_data (
                    notification_id BIGINT PRIMARY KEY REFERENCES notifications (id) ON DELETE CASCADE,
                    data TEXT NOT NULL
                )
                """,
            ]
        },
        // What a serving process uses that the command line's other commands should too (its push
        // settings, for `push send`).
        Migration(
            version: 9, name: "serving_settings",
            statements: [
                """
                CREATE TABLE IF NOT EXISTS serving_settings (
                    name TEXT PRIMARY KEY,
                    value TEXT NOT NULL,
                    updated_at BIGINT NOT NULL
                )
                """
            ]),
        // Second factors (TOTP and recovery codes), and what a session knows of them: a sign-in
        // waiting for its second factor, a TOTP secret offered for set-up, the factor it signed in
        // with, and when it last confirmed the password or the factor.
        Migration(version: 10, name: "second_factors") { _ in
            [
                """
                CREATE TABLE IF NOT EXISTS authenticators (
                    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    type TEXT NOT NULL CHECK (type IN ('totp', 'recovery_codes')),
                    sealed TEXT,
                    last_step BIGINT NOT NULL DEFAULT 0,
                    created_at DOUBLE PRECISION NOT NULL,
                    last_used_at DOUBLE PRECISION,
                    PRIMARY KEY (user_id, type)
                )
                """,
                """
                CREATE TABLE IF NOT EXISTS recovery_codes (
                    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    code_hash TEXT NOT NULL,
                    used_at BIGINT,
                    PRIMARY KEY (user_id, code_hash)
                )
                """,
                """
                CREATE TABLE IF NOT EXISTS session_factors (
                    key_hash TEXT PRIMARY KEY REFERENCES sessions (key_hash) ON DELETE CASCADE,
                    pending_user_id BIGINT REFERENCES users (id) ON DELETE CASCADE,
                    pending_password_hash TEXT,
                    pending_authenticated_at DOUBLE PRECISION,
                    totp_setup TEXT,
                    factor TEXT,
                    factor_at DOUBLE PRECISION,
                    reauthenticated_by TEXT,
                    reauthenticated_at DOUBLE PRECISION
                )
                """,
                "CREATE INDEX IF NOT EXISTS session_factors_pending ON session_factors (pending_user_id)",
            ]
        },
        // Device changes a push gateway has not heard of yet (`PushGatewaySync`): the triggers
        // record every insert, update and delete of `push_devices`, while a serving process says
        // it sends through a gateway.
        Migration(version: 11, name: "push_gateway_changes") { dialect in
            let table = """
                CREATE TABLE IF NOT EXISTS push_gateway_changes (
                    token TEXT PRIMARY KEY,
                    environment TEXT NOT NULL,
                    registered INTEGER NOT NULL,
                    version BIGINT NOT NULL
                )
                """
            return [table] + gatewayChangeTriggers(dialect, apnsOnly: false)
        },
        // Indexes for statements that read a growing table whole (found by EXPLAIN of every
        // statement a server runs): a reset's cleanup and an account's deletion (and the cascade
        // from users), the mail queue's removal of an address's mail, the log's retention.
        Migration(
            version: 12, name: "growth_indexes",
            statements: [
                "CREATE INDEX IF NOT EXISTS password_resets_user ON password_resets (user_id)",
                "CREATE INDEX IF NOT EXISTS mail_queue_recipient ON mail_queue (recipient)",
                "CREATE INDEX IF NOT EXISTS notifications_created ON notifications (created_at)",
            ]),
        // Which account a product's Idempotency-Key notified: the key is forgotten with the account
        // (a stranger who signs up with the address later is not answered with its notification).
        Migration(
            version: 13, name: "product_notification_accounts",
            statements: [
                """
                CREATE TABLE IF NOT EXISTS product_notification_accounts (
                    key_id BIGINT NOT NULL,
                    idempotency_key TEXT NOT NULL,
                    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    PRIMARY KEY (key_id, idempotency_key),
                    FOREIGN KEY (key_id, idempotency_key)
                        REFERENCES product_notifications (key_id, idempotency_key) ON DELETE CASCADE
                )
                """,
                """
                CREATE INDEX IF NOT EXISTS product_notification_accounts_user
                ON product_notification_accounts (user_id)
                """,
            ]),
        // The accounts whose password hash came from another system (`users import`) and is not
        // remade yet: every sign-in's check is padded to the costliest of them (`CostliestHash`),
        // found without reading every account. Accounts imported before this table are found by
        // their hash: anything but the default PBKDF2 cost (a few native ones too, read and left;
        // `_` stands for `$`, which the SQLite driver would read as a placeholder before a digit).
        Migration(
            version: 14, name: "imported_password_hashes",
            statements: [
                """
                CREATE TABLE IF NOT EXISTS imported_password_hashes (
                    user_id BIGINT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE
                )
                """,
                """
                INSERT INTO imported_password_hashes (user_id)
                SELECT id FROM users
                WHERE password_hash NOT LIKE 'pbkdf2_sha256_600000_%' AND password_hash NOT LIKE '!%'
                ON CONFLICT (user_id) DO NOTHING
                """,
            ]),
        Migration(
            version: 15, name: "installation_key",
            statements: [
                "ALTER TABLE server_identity ADD COLUMN public_key TEXT",
                "ALTER TABLE server_identity ADD COLUMN sealed_key TEXT",
            ]),
        // OpenID Connect providers (`oidc add`), the people linked through them, and which
        // provider a session signed in with (or waits with for its second factor).
        Migration(
            version: 16, name: "oidc_providers",
            statements: [
                """
                CREATE TABLE IF NOT EXISTS oidc_providers (
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    issuer TEXT NOT NULL,
                    client_id TEXT NOT NULL,
                    client_secret_file TEXT,
                    app_client_ids TEXT NOT NULL,
                    scopes TEXT NOT NULL,
                    link_verified_email BIGINT NOT NULL,
                    created_at BIGINT NOT NULL
                )
                """,
                """
                CREATE TABLE IF NOT EXISTS provider_links (
                    issuer TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    provider_id TEXT NOT NULL,
                    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    email TEXT,
                    created_at BIGINT NOT NULL,
                    PRIMARY KEY (issuer, subject)
                )
                """,
                "CREATE INDEX IF NOT EXISTS provider_links_user ON provider_links (user_id)",
                """
                CREATE TABLE IF NOT EXISTS provider_signups (
                    key_hash TEXT PRIMARY KEY REFERENCES sessions (key_hash) ON DELETE CASCADE,
                    provider_id TEXT NOT NULL,
                    issuer TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    email TEXT,
                    email_verified BIGINT NOT NULL,
                    name TEXT
                )
                """,
                """
                CREATE TABLE IF NOT EXISTS used_id_tokens (
                    token_id TEXT PRIMARY KEY,
                    expires_at BIGINT NOT NULL
                )
                """,
                // A table of its own rather than columns of session_factors: every statement of a
                // migration runs again cleanly (IF NOT EXISTS), which ADD COLUMN does not.
                """
                CREATE TABLE IF NOT EXISTS session_providers (
                    key_hash TEXT PRIMARY KEY REFERENCES sessions (key_hash) ON DELETE CASCADE,
                    provider_id TEXT NOT NULL,
                    provider_subject TEXT NOT NULL
                )
                """,
            ]),
        // Browser sign-ins handed to an app (`auth/handoff`): what the app asked for, who
        // confirmed it at the web door, and the single-use code it is exchanged with.
        Migration(
            version: 17, name: "handoffs",
            statements: [
                """
                CREATE TABLE IF NOT EXISTS handoffs (
                    id_hash TEXT PRIMARY KEY,
                    code_challenge TEXT NOT NULL,
                    redirect_uri TEXT NOT NULL,
                    state TEXT NOT NULL,
                    device_name TEXT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    user_id BIGINT REFERENCES users (id) ON DELETE CASCADE,
                    authenticated_at DOUBLE PRECISION,
                    code_hash TEXT UNIQUE,
                    code_expires_at BIGINT
                )
                """
            ]),
        // Sign-ins through a provider's own pages (the web door's buttons): the authorization
        // request's state, bound to the browser that began it, its nonce and PKCE verifier.
        Migration(
            version: 18, name: "provider_flows",
            statements: [
                """
                CREATE TABLE IF NOT EXISTS provider_flows (
                    state_hash TEXT PRIMARY KEY,
                    binding_hash TEXT NOT NULL,
                    provider_id TEXT NOT NULL,
                    nonce TEXT NOT NULL,
                    verifier TEXT NOT NULL,
                    connect_user_id BIGINT REFERENCES users (id) ON DELETE CASCADE,
                    expires_at BIGINT NOT NULL
                )
                """
            ]),
        // Web Push subscriptions beside APNs tokens: a device's push service, and for Web Push the
        // endpoint and the subscription's keys, on the device and on each push waiting for it.
        Migration(
            version: 19, name: "push_providers",
            statements: [
                "ALTER TABLE push_devices ADD COLUMN provider TEXT NOT NULL DEFAULT 'apns'",
                "ALTER TABLE push_devices ADD COLUMN endpoint TEXT",
                "ALTER TABLE push_devices ADD COLUMN p256dh TEXT",
                "ALTER TABLE push_devices ADD COLUMN auth TEXT",
                "ALTER TABLE push_outbox ADD COLUMN provider TEXT NOT NULL DEFAULT 'apns'",
                "ALTER TABLE push_outbox ADD COLUMN endpoint TEXT",
                "ALTER TABLE push_outbox ADD COLUMN p256dh TEXT",
                "ALTER TABLE push_outbox ADD COLUMN auth TEXT",
            ]),
        // FCM's access token, shared by the replicas as the APNs provider token is (sealed).
        Migration(
            version: 20, name: "fcm_access_tokens",
            statements: [
                """
                CREATE TABLE IF NOT EXISTS fcm_access_tokens (
                    project_id TEXT PRIMARY KEY,
                    client_email TEXT NOT NULL,
                    token TEXT NOT NULL,
                    expires_at BIGINT NOT NULL
                )
                """
            ]),
        // The push gateway carries APNs only: a Web Push or FCM device's change is not noted for it.
        Migration(version: 21, name: "push_gateway_changes_apns_only") { dialect in
            replacedGatewayChangeTriggers(dialect, apnsOnly: true) + [
                "DELETE FROM push_gateway_changes WHERE token LIKE 'webpush:%' OR token LIKE 'fcm:%'"
            ]
        },
        // The push gateway carries FCM and Web Push too: every device's change is noted again (the
        // forwarder sends those of the kinds the gateway carries for this server).
        Migration(version: 22, name: "push_gateway_changes_every_kind") { dialect in
            replacedGatewayChangeTriggers(dialect, apnsOnly: false)
        },
        // Revoking a product key frees its codes; keys revoked before that free theirs now.
        Migration(
            version: 23, name: "product_codes_of_revoked_keys",
            statements: [
                "DELETE FROM product_codes WHERE key_id IN (SELECT id FROM product_keys WHERE revoked_at IS NOT NULL)"
            ]),
        // The groups an account belongs to: `admin` (Homeport's own) and any the operator or a
        // product names.
        Migration(
            version: 24, name: "account_groups",
            statements: [
                """
                CREATE TABLE IF NOT EXISTS account_groups (
                    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    name TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    PRIMARY KEY (user_id, name)
                )
                """,
                "CREATE INDEX IF NOT EXISTS account_groups_name ON account_groups (name)",
            ]),
        // Invitations: a code (stored hashed) that signs up whatever the sign-up mode.
        Migration(version: 25, name: "invitations") { dialect in
            let id = dialect == .postgres ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"
            return [
                """
                CREATE TABLE IF NOT EXISTS invitations (
                    id \(id),
                    code_hash TEXT NOT NULL UNIQUE,
                    email TEXT,
                    group_names TEXT NOT NULL,
                    uses_left BIGINT NOT NULL CHECK (uses_left >= 0),
                    expires_at BIGINT NOT NULL,
                    created_by BIGINT REFERENCES users (id) ON DELETE SET NULL,
                    created_at BIGINT NOT NULL,
                    revoked_at BIGINT
                )
                """
            ]
        },
        // Passkeys and security keys (WebAuthn): each credential's public key and counter, and
        // the challenges issued, kept until used once or expired.
        Migration(version: 26, name: "webauthn") { dialect in
            let id = dialect == .postgres ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"
            return [
                """
                CREATE TABLE IF NOT EXISTS webauthn_credentials (
                    id \(id),
                    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    credential_id TEXT NOT NULL UNIQUE,
                    public_key TEXT NOT NULL,
                    sign_count BIGINT NOT NULL CHECK (sign_count >= 0),
                    name TEXT NOT NULL,
                    passwordless BIGINT NOT NULL,
                    created_at DOUBLE PRECISION NOT NULL,
                    last_used_at DOUBLE PRECISION
                )
                """,
                "CREATE INDEX IF NOT EXISTS webauthn_credentials_user ON webauthn_credentials (user_id)",
                """
                CREATE TABLE IF NOT EXISTS webauthn_challenges (
                    owner TEXT PRIMARY KEY,
                    purpose TEXT NOT NULL,
                    challenge TEXT NOT NULL,
                    user_id BIGINT REFERENCES users (id) ON DELETE CASCADE,
                    expires_at BIGINT NOT NULL
                )
                """,
            ]
        },
        // A sign-up with a passkey alone waits on its pre-login session for the address's code,
        // then for the passkey; it goes with the session.
        Migration(version: 27, name: "passkey_signups") { _ in
            [
                """
                CREATE TABLE IF NOT EXISTS passkey_signups (
                    key_hash TEXT PRIMARY KEY REFERENCES sessions (key_hash) ON DELETE CASCADE,
                    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    verified BIGINT NOT NULL
                )
                """
            ]
        },
        // The sender claims due pushes in the order of this index (most overdue first, then
        // oldest), so that a claim reads its batch and stops, instead of sorting every due row.
        Migration(version: 28, name: "push_outbox_claim_order") { _ in
            [
                "DROP INDEX IF EXISTS push_outbox_due",
                "CREATE INDEX IF NOT EXISTS push_outbox_due ON push_outbox (state, next_attempt_at, id)",
            ]
        },
        // A push's apns-id is a random UUID the server makes and never looks up: its unique
        // index only cost writes. Every push claimed and deleted touched a random page of it,
        // more than half of what a drain wrote to disk (on SQLite, about 7 KB a push in all).
        // SQLite cannot drop a column's UNIQUE, so it copies the table into one without it,
        // keeping the rows, their ids and the id sequence.
        Migration(version: 29, name: "push_outbox_apns_id_not_unique") { dialect in
            guard dialect == .sqlite else {
                return ["ALTER TABLE push_outbox DROP CONSTRAINT IF EXISTS push_outbox_apns_id_key"]
            }
            let columns = """
                id, apns_id, device_token, environment, topic, payload, collapse_id, priority, expiration, attempts,
                next_attempt_at, state, claimed_by, claimed_until, last_error, created_at, provider, endpoint, p256dh, auth
                """
            return [
                "DROP TABLE IF EXISTS push_outbox_rebuilt",
                """
                CREATE TABLE push_outbox_rebuilt (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    apns_id TEXT NOT NULL,
                    device_token TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    topic TEXT NOT NULL,
                    payload TEXT NOT NULL,
                    collapse_id TEXT,
                    priority INTEGER NOT NULL,
                    expiration BIGINT NOT NULL,
                    attempts INTEGER NOT NULL,
                    next_attempt_at BIGINT NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'failed')),
                    claimed_by TEXT,
                    claimed_until BIGINT,
                    last_error TEXT,
                    created_at BIGINT NOT NULL,
                    provider TEXT NOT NULL DEFAULT 'apns',
                    endpoint TEXT,
                    p256dh TEXT,
                    auth TEXT
                )
                """,
                "INSERT INTO push_outbox_rebuilt (\(columns)) SELECT \(columns) FROM push_outbox",
                // The copy's ids continue where the table's left off, even past rows deleted.
                "DELETE FROM sqlite_sequence WHERE name = 'push_outbox_rebuilt'",
                """
                INSERT INTO sqlite_sequence (name, seq)
                SELECT 'push_outbox_rebuilt', MAX(seq) FROM (
                    SELECT seq FROM sqlite_sequence WHERE name = 'push_outbox'
                    UNION ALL SELECT MAX(id) FROM push_outbox_rebuilt)
                HAVING MAX(seq) IS NOT NULL
                """,
                "DROP TABLE push_outbox",
                "ALTER TABLE push_outbox_rebuilt RENAME TO push_outbox",
                "CREATE INDEX IF NOT EXISTS push_outbox_due ON push_outbox (state, next_attempt_at, id)",
            ]
        },
        // Whether the account's address was proven when a provider account was linked to it: a
        // link made before (by whoever made the account with that address) ends when the
        // address's owner resets the password. Links made after the address was verified, as
        // recorded, are proven.
        Migration(
            version: 30, name: "provider_links_address_proven",
            statements: [
                "ALTER TABLE provider_links ADD COLUMN address_proven BIGINT NOT NULL DEFAULT 0",
                """
                UPDATE provider_links SET address_proven = 1 WHERE EXISTS (
                    SELECT 1 FROM verified_emails v
                    WHERE v.user_id = provider_links.user_id AND v.verified_at <= provider_links.created_at)
                """,
            ]),
        // The browser session that approved a handoff: its code brings a session only while that
        // one is signed in (signing out in the browser takes back what it approved). Handoffs
        // approved before, none, are refused: they last two minutes.
        Migration(
            version: 31, name: "handoffs_approved_by",
            statements: ["ALTER TABLE handoffs ADD COLUMN approved_by TEXT"]),
    ]

    /// A migrator over ``migrations``.
    package static var migrator: Migrator { Migrator(migrations: migrations) }

    /// ``gatewayChangeTriggers(_:apnsOnly:)`` in place of the ones there are (PostgreSQL replaces
    /// its function and trigger itself; SQLite's are dropped first).
    static func replacedGatewayChangeTriggers(_ dialect: SQLDialect, apnsOnly: Bool) -> [String] {
        let drops =
            dialect == .postgres
            ? [] : ["insert", "update", "delete"].map { "DROP TRIGGER IF EXISTS push_devices_gateway_\($0)" }
        return drops + gatewayChangeTriggers(dialect, apnsOnly: apnsOnly)
    }

    /// The triggers that note each change of `push_devices` in `push_gateway_changes` while the
    /// server sends through a push gateway (migrations 11 and 22; with `apnsOnly`, migration 21:
    /// only an APNs device's).
    static func gatewayChangeTriggers(_ dialect: SQLDialect, apnsOnly: Bool) -> [String] {
        let gatewayOn = "EXISTS (SELECT 1 FROM serving_settings WHERE name = 'push-gateway')"
        func apns(_ row: String) -> String { apnsOnly ? " AND \(row).provider = 'apns'" : "" }
        func only(_ row: String, _ statement: String) -> String {
            apnsOnly ? "IF \(row).provider = 'apns' THEN \(statement) END IF;" : statement
        }
        func upsert(_ row: String, _ registered: Int) -> String {
            """
            INSERT INTO push_gateway_changes (token, environment, registered, version)
            VALUES (\(row).token, \(row).environment, \(registered), 1)
            ON CONFLICT (token) DO UPDATE SET environment = excluded.environment, registered = \(registered),
                version = push_gateway_changes.version + 1;
            """
        }
        guard dialect == .postgres else {
            return [("insert", "INSERT", "NEW", 1), ("update", "UPDATE", "NEW", 1), ("delete", "DELETE", "OLD", 0)]
                .map { name, event, row, registered in
                    """
                    CREATE TRIGGER IF NOT EXISTS push_devices_gateway_\(name) AFTER \(event) ON push_devices
                    WHEN \(gatewayOn)\(apns(row))
                    BEGIN
                    \(upsert(row, registered))
                    END
                    """
                }
        }
        return [
            """
            CREATE OR REPLACE FUNCTION push_devices_gateway_change() RETURNS trigger LANGUAGE plpgsql AS $body$
            BEGIN
                IF \(gatewayOn) THEN
                    IF TG_OP = 'DELETE' THEN
                        \(only("OLD", upsert("OLD", 0)))
                    ELSE
                        \(only("NEW", upsert("NEW", 1)))
                    END IF;
                END IF;
                RETURN NULL;
            END
            $body$
            """,
            "DROP TRIGGER IF EXISTS push_devices_gateway ON push_devices",
            """
            CREATE TRIGGER push_devices_gateway AFTER INSERT OR UPDATE OR DELETE ON push_devices
            FOR EACH ROW EXECUTE FUNCTION push_devices_gateway_change()
            """,
        ]
    }
}
