import HomeportStorage

/// The `password_resets` table: single-use reset keys, stored as their SHA-256.
struct ResetKeyStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// Stores a new key for an account.
    func insert(keyHash: String, userID: Int64, now: Int64, expiresAt: Int64) throws {
        try db.execute(
            "INSERT INTO password_resets (key_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)",
            [.text(keyHash), .integer(userID), .integer(now), .integer(expiresAt)])
    }

    /// The account a live key belongs to, without using the key up.
    func userID(keyHash: String, now: Int64) throws -> Int64? {
        try db.execute(
            "SELECT user_id FROM password_resets WHERE key_hash = $1 AND expires_at > $2",
            [.text(keyHash), .integer(now)]
        ).first?.int("user_id")
    }

    /// Uses a live key up and returns its account; `nil` when it was unknown, used or expired
    /// (of two requests with the same key, one gets the account).
    func claim(keyHash: String, now: Int64) throws -> Int64? {
        try db.execute(
            "DELETE FROM password_resets WHERE key_hash = $1 AND expires_at > $2 RETURNING user_id",
            [.text(keyHash), .integer(now)]
        ).first?.int("user_id")
    }

    /// Deletes every key of an account.
    func deleteAll(userID: Int64) throws {
        try db.execute("DELETE FROM password_resets WHERE user_id = $1", [.integer(userID)])
    }

    /// Deletes expired keys.
    func pruneExpired(now: Int64) throws {
        try db.execute("DELETE FROM password_resets WHERE expires_at <= $1", [.integer(now)])
    }
}
