import HomeportStorage

/// The `gateway_devices` table: which devices each server registered.
struct GatewayDeviceStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// Registers `token` for `server` (again).
    func register(server: Int64, token: String, environment: String, now: Int64) throws {
        try db.execute(
            """
            INSERT INTO gateway_devices (server_id, token, environment, updated_at) VALUES ($1, $2, $3, $4)
            ON CONFLICT (server_id, token) DO UPDATE SET environment = excluded.environment,
                updated_at = excluded.updated_at
            """, [.integer(server), .text(token), .text(environment), .integer(now)])
    }

    /// Removes `token` from `server`'s devices; after a 410, only if it was not registered again
    /// after Apple's timestamp.
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

    /// Which of `tokens` `server` registered.
    func registered(server: Int64, among tokens: [String]) throws -> Set<String> {
        var found: Set<String> = []
        let unique = Array(Set(tokens))
        for start in stride(from: 0, to: unique.count, by: 500) {
            let chunk = Array(unique[start..<min(start + 500, unique.count)])
            let placeholders = (2...chunk.count + 1).map { "$\($0)" }.joined(separator: ", ")
            for row in try db.execute(
                "SELECT token FROM gateway_devices WHERE server_id = $1 AND token IN (\(placeholders))",
                [.integer(server)] + chunk.map(SQLValue.text))
            {
                if let token = row.string("token") { found.insert(token) }
            }
        }
        return found
    }

    /// How many devices `server` registered.
    func count(server: Int64) throws -> Int64 {
        try db.execute("SELECT COUNT(*) AS count FROM gateway_devices WHERE server_id = $1", [.integer(server)])
            .first?.int("count") ?? 0
    }
}
