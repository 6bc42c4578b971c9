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
            ])
    ]

    /// A migrator over ``migrations``.
    public static var migrator: Migrator { Migrator(migrations: migrations) }
}
