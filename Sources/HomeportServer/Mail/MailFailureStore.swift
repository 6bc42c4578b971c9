import HomeportStorage

/// The `mail_failures` table: mail that could not be sent, for operators (never the address).
struct MailFailureStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// Records one failure.
    func record(kind: String, reason: String, at now: Int64) throws {
        try db.execute(
            "INSERT INTO mail_failures (kind, reason, created_at) VALUES ($1, $2, $3)",
            [.text(kind), .text(String(reason.prefix(500))), .integer(now)])
    }

    /// Deletes records older than `cutoff`.
    func prune(before cutoff: Int64) throws {
        try db.execute("DELETE FROM mail_failures WHERE created_at < $1", [.integer(cutoff)])
    }
}
