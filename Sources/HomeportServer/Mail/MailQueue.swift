import HomeportStorage

/// One mail waiting in the `mail_queue` table.
struct QueuedMail: Sendable {
    var id: Int64
    var mail: Mail
    /// The pre-login session whose standing becomes `mail_failed` should the mail fail.
    var standingKeyHash: String?
    var attempts: Int
}

/// The `mail_queue` table: mail for the SMTP relay, claimed by one replica's sender at a time.
struct MailQueue {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// Queues a mail, due now.
    func enqueue(_ mail: Mail, standingKeyHash: String?, now: Int64) throws {
        try db.execute(
            """
            INSERT INTO mail_queue (kind, recipient, subject, body, standing_key_hash, attempts, next_attempt_at,
                                    claimed_until, created_at)
            VALUES ($1, $2, $3, $4, $5, 0, $6, 0, $6)
            """,
            [
                .text(mail.kind), .text(mail.to), .text(mail.subject), .text(mail.body),
                standingKeyHash.map(SQLValue.text) ?? .null, .integer(now),
            ])
    }

    /// Claims the oldest due mail for `seconds` (another replica's sender skips it meanwhile).
    func claimNext(now: Int64, for seconds: Int64) throws -> QueuedMail? {
        let rows = try db.execute(
            """
            UPDATE mail_queue SET claimed_until = $2
            WHERE id = (SELECT id FROM mail_queue WHERE next_attempt_at <= $1 AND claimed_until <= $1
                        ORDER BY id LIMIT 1)
              AND claimed_until <= $1
            RETURNING id, kind, recipient, subject, body, standing_key_hash, attempts
            """, [.integer(now), .integer(now + seconds)])
        guard let row = rows.first, let id = row.int("id") else { return nil }
        return QueuedMail(
            id: id,
            mail: Mail(
                to: row.string("recipient") ?? "", subject: row.string("subject") ?? "", body: row.string("body") ?? "",
                kind: row.string("kind") ?? ""),
            standingKeyHash: row.string("standing_key_hash"), attempts: Int(row.int("attempts") ?? 0))
    }

    /// Removes a mail (sent, or given up).
    func remove(_ id: Int64) throws {
        try db.execute("DELETE FROM mail_queue WHERE id = $1", [.integer(id)])
    }

    /// Removes every mail waiting for `recipient` (an account that is deleted).
    func remove(recipient: String) throws {
        try db.execute("DELETE FROM mail_queue WHERE recipient = $1", [.text(recipient)])
    }

    /// Puts a mail back, due at `at`, after one more attempt.
    func retry(_ id: Int64, attempts: Int, at: Int64) throws {
        try db.execute(
            "UPDATE mail_queue SET attempts = $2, next_attempt_at = $3, claimed_until = 0 WHERE id = $1",
            [.integer(id), .integer(Int64(attempts)), .integer(at)])
    }

    /// Mails waiting, for tests and operators.
    func count() throws -> Int {
        Int(try db.execute("SELECT count(*) AS n FROM mail_queue").first?.int("n") ?? 0)
    }
}
