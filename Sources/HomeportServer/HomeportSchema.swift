import HomeportStorage

/// The server's schema, as numbered migrations. Append only: never edit a released migration.
public enum HomeportSchema {
    /// Every migration, oldest first.
    public static let migrations: [Migration] = [
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
    ]

    /// A migrator over ``migrations``.
    public static var migrator: Migrator { Migrator(migrations: migrations) }
}
