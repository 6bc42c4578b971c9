/// Pool and locking settings shared by both backends.
package struct DatabaseOptions: Sendable, Equatable {
    /// Connections open at most; requests beyond wait for one.
    package var maximumConnections: Int
    /// How long a statement waits for a lock before failing (SQLite busy timeout,
    /// PostgreSQL `lock_timeout`).
    package var lockTimeout: Duration
    /// How long a caller waits for a free pooled connection.
    package var poolWaitTimeout: Duration
    /// How long opening a PostgreSQL connection may take.
    package var connectTimeoutSeconds: Int

    /// Creates options with defaults fit for a small server.
    package init(
        maximumConnections: Int = 8, lockTimeout: Duration = .seconds(5), poolWaitTimeout: Duration = .seconds(10),
        connectTimeoutSeconds: Int = 5
    ) {
        self.maximumConnections = maximumConnections
        self.lockTimeout = lockTimeout
        self.poolWaitTimeout = poolWaitTimeout
        self.connectTimeoutSeconds = connectTimeoutSeconds
    }
}
