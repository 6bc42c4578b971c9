import HomeportStorage

/// The `passkey_signups` table: a sign-up with a passkey and no password, waiting on its
/// pre-login session (first for its address's code, then for the passkey itself). The row goes
/// with the session.
struct PasskeySignupStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// Marks the pre-login session `keyHash` as the sign-up of account `userID`, waiting for the
    /// address's code.
    func insert(keyHash: String, userID: Int64) throws {
        try db.execute(
            "INSERT INTO passkey_signups (key_hash, user_id, verified) VALUES ($1, $2, 0)",
            [.text(keyHash), .integer(userID)])
    }

    /// The account whose sign-up the pre-login session `keyHash` is, waiting for the address's
    /// code or (`verified`) for the passkey, if it is one.
    func pending(keyHash: String, verified: Bool) throws -> Int64? {
        try db.execute(
            "SELECT user_id FROM passkey_signups WHERE key_hash = $1 AND verified = $2",
            [.text(keyHash), .integer(verified ? 1 : 0)]
        ).first?.int("user_id")
    }

    /// The sign-up waiting on `keyHash` has its address verified: it waits for the passkey now.
    func markVerified(keyHash: String) throws {
        try db.execute("UPDATE passkey_signups SET verified = 1 WHERE key_hash = $1", [.text(keyHash)])
    }

    /// Ends the sign-up waiting on `keyHash` for its passkey; false when none waited (another
    /// request ended it).
    func finish(keyHash: String) throws -> Bool {
        !(try db.execute(
            "DELETE FROM passkey_signups WHERE key_hash = $1 AND verified = 1 RETURNING user_id", [.text(keyHash)]
        ).isEmpty)
    }
}
