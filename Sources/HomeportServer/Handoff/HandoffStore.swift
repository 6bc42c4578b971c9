import HomeportStorage

/// The `handoffs` table: browser sign-ins an app asked for (`auth/handoff`), each known by the
/// hash of the id in its URL, and, once someone signed in at the web door confirmed it, by the
/// hash of the single-use code the app exchanges.
struct HandoffStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// What the app asked for.
    struct Request: Sendable, Hashable {
        /// `BASE64URL(SHA-256(code_verifier))`.
        var codeChallenge: String
        var redirectURI: String
        var state: String
        var deviceName: String
        /// Until when it can be confirmed, in Unix seconds.
        var expiresAt: Int64
    }

    func insert(idHash: String, _ request: Request) throws {
        try db.execute(
            """
            INSERT INTO handoffs (id_hash, code_challenge, redirect_uri, state, device_name, expires_at)
            VALUES ($1, $2, $3, $4, $5, $6)
            """,
            [
                .text(idHash), .text(request.codeChallenge), .text(request.redirectURI), .text(request.state),
                .text(request.deviceName), .integer(request.expiresAt),
            ])
    }

    /// The handoff that waits for a confirmation, if it is still in time.
    func waiting(idHash: String, now: Int64) throws -> Request? {
        guard
            let row = try db.execute(
                """
                SELECT code_challenge, redirect_uri, state, device_name, expires_at FROM handoffs
                WHERE id_hash = $1 AND expires_at > $2 AND user_id IS NULL
                """, [.text(idHash), .integer(now)]
            ).first
        else { return nil }
        return Self.request(row)
    }

    /// Confirms a waiting handoff for `userID`, approved by the browser session `approver` (a key
    /// hash), with the hash of its code; false when it is no longer waiting (confirmed or refused
    /// meanwhile, or expired).
    func confirm(
        idHash: String, userID: Int64, approver: String, authenticatedAt: Double?, codeHash: String,
        codeExpiresAt: Int64, now: Int64
    ) throws -> Request? {
        try db.execute(
            """
            UPDATE handoffs SET user_id = $2, authenticated_at = $3, code_hash = $4, code_expires_at = $5,
                approved_by = $7
            WHERE id_hash = $1 AND expires_at > $6 AND user_id IS NULL
            RETURNING code_challenge, redirect_uri, state, device_name, expires_at
            """,
            [
                .text(idHash), .integer(userID), authenticatedAt.map(SQLValue.real) ?? .null, .text(codeHash),
                .integer(codeExpiresAt), .integer(now), .text(approver),
            ]
        ).first.map(Self.request)
    }

    /// Ends a handoff (refused, or used); returns what it was, when it was still there.
    @discardableResult
    func delete(idHash: String) throws -> Request? {
        try db.execute(
            """
            DELETE FROM handoffs WHERE id_hash = $1
            RETURNING code_challenge, redirect_uri, state, device_name, expires_at
            """, [.text(idHash)]
        ).first.map(Self.request)
    }

    /// A confirmed handoff, claimed by its code: deleted as it is read, so that of two exchanges
    /// of one code (two replicas at the same instant) exactly one finds it. One whose approving
    /// browser session has ended (signed out, expired) is not found.
    func claim(codeHash: String, now: Int64) throws -> (request: Request, userID: Int64, authenticatedAt: Double?)? {
        guard
            let row = try db.execute(
                """
                DELETE FROM handoffs WHERE code_hash = $1 AND EXISTS (
                    SELECT 1 FROM sessions s WHERE s.key_hash = handoffs.approved_by AND s.expires_at > $2)
                RETURNING code_challenge, redirect_uri, state, device_name, expires_at, user_id, authenticated_at,
                    code_expires_at
                """, [.text(codeHash), .integer(now)]
            ).first, let userID = row.int("user_id"), let expires = row.int("code_expires_at"), expires > now
        else { return nil }
        return (Self.request(row), userID, row.double("authenticated_at"))
    }

    /// Ends every handoff the account approved and its app has not exchanged yet: an approval
    /// given before a password change, a reset or a hold brings no session after it.
    func deleteApproved(userID: Int64) throws {
        try db.execute("DELETE FROM handoffs WHERE user_id = $1", [.integer(userID)])
    }

    /// Forgets handoffs past their time.
    func pruneExpired(now: Int64) throws {
        try db.execute(
            "DELETE FROM handoffs WHERE expires_at < $1 AND (code_expires_at IS NULL OR code_expires_at < $1)",
            [.integer(now)])
    }

    private static func request(_ row: Row) -> Request {
        Request(
            codeChallenge: row.string("code_challenge") ?? "", redirectURI: row.string("redirect_uri") ?? "",
            state: row.string("state") ?? "", deviceName: row.string("device_name") ?? "",
            expiresAt: row.int("expires_at") ?? 0)
    }
}
