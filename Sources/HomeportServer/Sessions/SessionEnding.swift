import HomeportStorage

/// Ends sessions as every use case must, through the stores that own each table: a session goes
/// with the verification waiting on it; an account's sessions go with every verification waiting
/// for its address and the pre-login sessions those wait on (a password change, a reset or a hold
/// leaves no way in that was opened before it).
struct SessionEnding {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// Ends one session (and the verification waiting on it); returns whether there was one.
    @discardableResult
    func end(keyHash: String) throws -> Bool {
        try EmailVerificationStore(db).delete(keyHash: keyHash)
        // Its devices go with it (the table's cascade), and the pushes waiting for them.
        try PushOutbox(db).deletePending(deviceTokens: try PushDeviceStore(db).tokens(session: keyHash))
        return try SessionStore(db).delete(keyHashes: [keyHash]) > 0
    }

    /// Deletes the sessions that expired by `now`, with the pushes waiting for the devices they
    /// registered (which go with them).
    func pruneExpired(now: Int64) throws {
        try PushOutbox(db).deletePending(deviceTokens: try PushDeviceStore(db).tokens(sessionsExpiredBy: now))
        try SessionStore(db).pruneExpired(now: now)
    }

    /// Ends every session of the account, every verification waiting for its address with
    /// the pre-login session it waits on, every sign-in waiting for its second factor, every
    /// sign-up with a passkey waiting for its passkey, and every app sign-in it approved in a
    /// browser that the app has not exchanged yet.
    func endAll(userID: Int64) throws {
        let waiting = try EmailVerificationStore(db).deleteAll(userID: userID)
        let factorPending = try db.execute(
            "SELECT key_hash FROM session_factors WHERE pending_user_id = $1", [.integer(userID)]
        ).compactMap { $0.string("key_hash") }
        let passkeyPending = try db.execute(
            "SELECT key_hash FROM passkey_signups WHERE user_id = $1", [.integer(userID)]
        ).compactMap { $0.string("key_hash") }
        try SessionStore(db).delete(keyHashes: waiting + factorPending + passkeyPending)
        try PushOutbox(db).deletePending(deviceTokens: try PushDeviceStore(db).tokens(signedInUserID: userID))
        try SessionStore(db).deleteAll(userID: userID)
        try HandoffStore(db).deleteApproved(userID: userID)
    }
}
