import HomeportStorage

/// The `email_verifications` table, the code waiting on a pre-login session (stored as a hash,
/// never as itself), and `verified_emails`, the accounts whose address is verified.
struct EmailVerificationStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// A verification waiting for its code.
    struct Pending: Sendable, Equatable {
        /// The account whose address it verifies.
        var userID: Int64
        /// The hash of the code (see ``VerificationCode/storedForm(_:session:)``).
        var codeHash: String
        /// When the account authenticated, for a verification begun by a sign-in with its
        /// password (a sign-up records none, as django-allauth).
        var authenticatedAt: Double?
    }

    /// Stores the verification waiting on the pre-login session `keyHash`.
    func insert(keyHash: String, _ pending: Pending, now: Int64, expiresAt: Int64) throws {
        try db.execute(
            """
            INSERT INTO email_verifications (key_hash, user_id, code_hash, authenticated_at, created_at, expires_at)
            VALUES ($1, $2, $3, $4, $5, $6)
            """,
            [
                .text(keyHash), .integer(pending.userID), .text(pending.codeHash),
                pending.authenticatedAt.map(SQLValue.real) ?? .null, .integer(now), .integer(expiresAt),
            ])
    }

    /// The live verification waiting on `keyHash`.
    func pending(keyHash: String, now: Int64) throws -> Pending? {
        try db.execute(
            "SELECT user_id, code_hash, authenticated_at FROM email_verifications WHERE key_hash = $1 AND expires_at > $2",
            [.text(keyHash), .integer(now)]
        ).first.flatMap(Self.pending)
    }

    /// Replaces the code of a live verification (a resend), which keeps its end; false when none
    /// is waiting.
    func replaceCode(keyHash: String, codeHash: String, now: Int64) throws -> Bool {
        !(try db.execute(
            """
            UPDATE email_verifications SET code_hash = $1
            WHERE key_hash = $2 AND expires_at > $3 RETURNING key_hash
            """, [.text(codeHash), .text(keyHash), .integer(now)]
        ).isEmpty)
    }

    /// Uses the live verification on `keyHash` up if its code is `codeHash`, and returns it; of
    /// two requests with the right code, one gets it.
    func claim(keyHash: String, codeHash: String, now: Int64) throws -> Pending? {
        try db.execute(
            """
            DELETE FROM email_verifications WHERE key_hash = $1 AND code_hash = $2 AND expires_at > $3
            RETURNING user_id, code_hash, authenticated_at
            """, [.text(keyHash), .text(codeHash), .integer(now)]
        ).first.flatMap(Self.pending)
    }

    /// Gives the verification on `keyHash` up.
    func delete(keyHash: String) throws {
        try db.execute("DELETE FROM email_verifications WHERE key_hash = $1", [.text(keyHash)])
    }

    /// Gives up every verification waiting for the account's address; returns the pre-login
    /// sessions they waited on.
    func deleteAll(userID: Int64) throws -> [String] {
        try db.execute("DELETE FROM email_verifications WHERE user_id = $1 RETURNING key_hash", [.integer(userID)])
            .compactMap { $0.string("key_hash") }
    }

    /// Whether the account's address has been verified.
    func isVerified(userID: Int64) throws -> Bool {
        !(try db.execute("SELECT user_id FROM verified_emails WHERE user_id = $1", [.integer(userID)]).isEmpty)
    }

    /// The ids of the accounts whose address is verified.
    func verifiedUserIDs() throws -> Set<Int64> {
        Set(try db.execute("SELECT user_id FROM verified_emails").compactMap { $0.int("user_id") })
    }

    /// Records that the account's address is verified.
    func markVerified(userID: Int64, now: Int64) throws {
        try db.execute(
            "INSERT INTO verified_emails (user_id, verified_at) VALUES ($1, $2) ON CONFLICT (user_id) DO NOTHING",
            [.integer(userID), .integer(now)])
    }

    /// Deletes expired verifications.
    func pruneExpired(now: Int64) throws {
        try db.execute("DELETE FROM email_verifications WHERE expires_at <= $1", [.integer(now)])
    }

    private static func pending(_ row: Row) -> Pending? {
        guard let user = row.int("user_id"), let code = row.string("code_hash") else { return nil }
        let authenticatedAt = row.double("authenticated_at")
        return Pending(userID: user, codeHash: code, authenticatedAt: authenticatedAt)
    }
}
