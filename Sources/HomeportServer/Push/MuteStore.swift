import HomeportStorage

/// The `notification_mutes` table: threads an account muted on this server.
struct MuteStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    func mute(_ thread: String, userID: Int64, now: Int64) throws {
        try db.execute(
            """
            INSERT INTO notification_mutes (user_id, thread, created_at) VALUES ($1, $2, $3)
            ON CONFLICT (user_id, thread) DO NOTHING
            """, [.integer(userID), .text(thread), .integer(now)])
    }

    /// How many threads the account muted.
    func count(userID: Int64) throws -> Int {
        Int(
            try db.execute("SELECT COUNT(*) AS n FROM notification_mutes WHERE user_id = $1", [.integer(userID)])
                .first?.int("n") ?? 0)
    }

    func unmute(_ thread: String, userID: Int64) throws {
        try db.execute(
            "DELETE FROM notification_mutes WHERE user_id = $1 AND thread = $2", [.integer(userID), .text(thread)])
    }

    func threads(userID: Int64) throws -> [String] {
        try db.execute(
            "SELECT thread FROM notification_mutes WHERE user_id = $1 ORDER BY thread", [.integer(userID)]
        ).compactMap { $0.string("thread") }
    }

    func isMuted(_ thread: String, userID: Int64) throws -> Bool {
        !(try db.execute(
            "SELECT 1 AS muted FROM notification_mutes WHERE user_id = $1 AND thread = $2",
            [.integer(userID), .text(thread)]
        ).isEmpty)
    }
}
