import HomeportStorage

/// An invitation as the operator (or, later, an inviter) sees it: never its code, which is
/// stored only hashed, as session tokens are.
package struct Invitation: Sendable, Hashable {
    /// Its id (`invites revoke ID`).
    package var id: Int64
    /// The one address it signs up, if it is bound to one.
    package var email: String?
    /// The groups the account it makes is put in.
    package var groups: [String]
    /// Sign-ups it still allows.
    package var usesLeft: Int64
    /// When it stops working, in Unix seconds.
    package var expiresAt: Int64
    /// When it was made.
    package var createdAt: Int64
    /// When it was revoked, if it was.
    package var revokedAt: Int64?
    /// The account that made it from the app; `nil`: the operator (or an account since deleted).
    package var createdBy: Int64? = nil
}

/// The `invitations` table.
struct InvitationStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    private static let columns = "id, email, group_names, uses_left, expires_at, created_at, revoked_at, created_by"

    /// Stores an invitation whose code hashes to `codeHash`; returns it.
    func create(
        codeHash: String, email: String?, groups: [String], uses: Int64, expiresAt: Int64, createdBy: Int64?,
        now: Int64
    ) throws -> Invitation? {
        try db.execute(
            """
            INSERT INTO invitations (code_hash, email, group_names, uses_left, expires_at, created_by, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING \(Self.columns)
            """,
            [
                .text(codeHash), email.map { .text($0) } ?? .null, .text(groups.joined(separator: ",")),
                .integer(uses), .integer(expiresAt), createdBy.map { .integer($0) } ?? .null, .integer(now),
            ]
        ).first.flatMap(Self.invitation)
    }

    /// Every invitation, newest first.
    func all() throws -> [Invitation] {
        try db.execute("SELECT \(Self.columns) FROM invitations ORDER BY id DESC").compactMap(Self.invitation)
    }

    /// The invitations `account` made, newest first, at most `limit`.
    func all(createdBy account: Int64, limit: Int = 200) throws -> [Invitation] {
        try db.execute(
            "SELECT \(Self.columns) FROM invitations WHERE created_by = $1 ORDER BY id DESC LIMIT $2",
            [.integer(account), .integer(Int64(limit))]
        ).compactMap(Self.invitation)
    }

    /// Revokes invitation `id` if `account` made it (revoked already, it stays as it was); false
    /// when `account` made none with this id.
    func revoke(id: Int64, createdBy account: Int64, now: Int64) throws -> Bool {
        !(try db.execute(
            """
            UPDATE invitations SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2 AND created_by = $3
            RETURNING id
            """,
            [.integer(now), .integer(id), .integer(account)]
        ).isEmpty)
    }

    /// Revokes every invitation `account` made that still works: they go with its account.
    func revokeAll(createdBy account: Int64, now: Int64) throws {
        try db.execute(
            "UPDATE invitations SET revoked_at = $1 WHERE created_by = $2 AND revoked_at IS NULL",
            [.integer(now), .integer(account)])
    }

    /// Revokes invitation `id`; false when there is none, or it was revoked already.
    func revoke(id: Int64, now: Int64) throws -> Bool {
        !(try db.execute(
            "UPDATE invitations SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING id",
            [.integer(now), .integer(id)]
        ).isEmpty)
    }

    /// Whether the invitation whose code hashes to `codeHash` could sign up `email` now (`nil`: an
    /// address that is none, which only an invitation bound to no address could sign up).
    func isUsable(codeHash: String, email: String?, now: Int64) throws -> Bool {
        !(try db.execute(
            "SELECT id FROM invitations WHERE \(Self.usable)",
            [.text(codeHash), .integer(now), email.map { .text($0) } ?? .null]
        ).isEmpty)
    }

    /// What makes the invitation whose code hashes to `$1` usable at `$2` for the address `$3`:
    /// the one condition ``isUsable(codeHash:email:now:)`` reads and ``claim(codeHash:email:now:)``
    /// spends by. An invitation made from the app works while its maker is approved.
    private static let usable = """
        code_hash = $1 AND uses_left > 0 AND revoked_at IS NULL AND expires_at > $2 AND (email IS NULL OR email = $3)
        AND (created_by IS NULL OR EXISTS (
            SELECT 1 FROM users WHERE users.id = invitations.created_by AND users.approval = 'approved'))
        """

    /// Spends one use of the invitation whose code hashes to `codeHash` for a sign-up of `email`,
    /// in one statement (two sign-ups racing for the last use: the second finds none left); the
    /// invitation, or `nil` when it is unknown, used up, expired, revoked, or bound to another
    /// address. Call it inside the sign-up's transaction.
    func claim(codeHash: String, email: String, now: Int64) throws -> Invitation? {
        try db.execute(
            """
            UPDATE invitations SET uses_left = uses_left - 1 WHERE \(Self.usable)
            RETURNING \(Self.columns)
            """, [.text(codeHash), .integer(now), .text(email)]
        ).first.flatMap(Self.invitation)
    }

    /// The groups a sign-up with `invitation` joins, as its maker stands now: the operator's (no
    /// maker) all of them; an admin's all of them; a member's only those it is still in; `nil`
    /// when the maker is no longer approved (held or rejected since), and the invitation signs
    /// nobody up. Groups taken from the maker are taken from its invitations (an invitation it
    /// made as an admin still lets its people past the approval queue: revoke it to stop that).
    func groupsToGive(_ invitation: Invitation) throws -> [String]? {
        guard let maker = invitation.createdBy else { return invitation.groups }
        guard try AccountStore(db).find(id: maker)?.approval == .approved else { return nil }
        let held = try AccountGroups(db).groups(userID: maker)
        return held.contains(AccountGroups.admin) ? invitation.groups : invitation.groups.filter(held.contains)
    }

    private static func invitation(_ row: Row) -> Invitation? {
        guard let id = row.int("id"), let uses = row.int("uses_left"), let expires = row.int("expires_at"),
            let created = row.int("created_at")
        else { return nil }
        return Invitation(
            id: id, email: row.string("email"), groups: AccountGroups.parse(row.string("group_names")), usesLeft: uses,
            expiresAt: expires, createdAt: created, revokedAt: row.int("revoked_at"), createdBy: row.int("created_by"))
    }
}
