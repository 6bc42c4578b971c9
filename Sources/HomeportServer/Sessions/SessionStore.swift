import Foundation
import HomeportStorage
import HomeportWire

/// Which door a session belongs to. A session only works at its own door: an app token is
/// never a web cookie and a web cookie never opens the API.
package enum SessionKind: String, Sendable {
    /// A native app's session, carried in the session-token header.
    case app
    /// A browser's session, carried in the session cookie.
    case web
}

/// One row of the `sessions` table.
package struct Session: Sendable, Hashable {
    /// The SHA-256 of the token (the token itself is never stored).
    package var keyHash: String
    /// The signed-in account; `nil` for a pre-login session.
    package var userID: Int64?
    /// The door it belongs to.
    package var kind: SessionKind
    /// When it expires (fixed at creation: sessions do not slide).
    package var expiresAt: Int64
    /// When the account authenticated, in Unix seconds.
    package var authenticatedAt: Double?
    /// What a pre-login session earned on its last attempt to get in.
    package var standing: Standing?
}

/// The `sessions` table: one row per login (or pre-login), addressed by the hash of its token.
struct SessionStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// A live session of `kind` and, in the same query, its account (the one session reader's query).
    func lookup(keyHash: String, kind: SessionKind, now: Int64) throws -> (session: Session, account: Account?)? {
        let sql = db.dialect == .postgres ? Self.lookupSQL.postgres : Self.lookupSQL.sqlite
        let rows = try db.execute(sql, [.text(keyHash), .text(kind.rawValue), .integer(now)])
        guard let row = rows.first, let expires = row.int("expires_at") else { return nil }
        let session = Session(
            keyHash: keyHash, userID: row.int("user_id"), kind: kind, expiresAt: expires,
            authenticatedAt: row.double("authenticated_at"),
            standing: row.string("standing").flatMap(Standing.init(rawValue:)))
        return (session, AccountStore.account(row))
    }

    /// The session's columns, then the account's (``AccountStore/columns``, whose names differ)
    /// with its groups, in each dialect.
    private static let lookupSQL = (sqlite: lookupSQL(.sqlite), postgres: lookupSQL(.postgres))

    private static func lookupSQL(_ dialect: SQLDialect) -> String {
        """
        SELECT s.user_id, s.expires_at, s.authenticated_at, s.standing,
               u.id, u.email, u.password_hash, u.approval, u.created_at, \(AccountStore.emailVerifiedColumn),
               \(AccountGroups.column(dialect))
        FROM sessions s LEFT JOIN users u ON u.id = s.user_id
        WHERE s.key_hash = $1 AND s.kind = $2 AND s.expires_at > $3
        """
    }

    /// Inserts a session with nobody in it yet (a pre-login session, kept for its standing).
    func insertPreLogin(_ session: Session, now: Int64) throws {
        try db.execute(
            """
            INSERT INTO sessions (key_hash, user_id, kind, created_at, expires_at, authenticated_at, standing)
            VALUES ($1, NULL, $2, $3, $4, NULL, $5)
            """,
            [
                .text(session.keyHash), .text(session.kind.rawValue), .integer(now), .integer(session.expiresAt),
                session.standing.map { .text($0.rawValue) } ?? .null,
            ])
    }

    /// Inserts a signed-in session, only if its account is approved and its password hash is
    /// still `passwordHash`: a login whose check raced a password change or reset, or an
    /// operator's hold, gets no session. Returns whether the row was inserted. Call it inside a
    /// transaction.
    ///
    /// The account's row is locked first, by an update that changes nothing: on PostgreSQL a plain
    /// `INSERT … SELECT` reads the committed row without waiting, so it could slip a session in
    /// between a concurrent change's deleting the sessions and its commit. The update waits for
    /// that commit and then checks the row as committed. (SQLite has one writer at a time anyway.)
    func insertSignedIn(_ session: Session, now: Int64, passwordHash: String) throws -> Bool {
        guard let userID = session.userID,
            !(try db.execute(
                """
                UPDATE users SET approval = approval
                WHERE id = $1 AND password_hash = $2 AND approval = 'approved' RETURNING id
                """, [.integer(userID), .text(passwordHash)]
            ).isEmpty)
        else { return false }
        try db.execute(
            """
            INSERT INTO sessions (key_hash, user_id, kind, created_at, expires_at, authenticated_at, standing)
            VALUES ($1, $2, $3, $4, $5, $6, NULL)
            """,
            [
                .text(session.keyHash), .integer(userID), .text(session.kind.rawValue), .integer(now),
                .integer(session.expiresAt), session.authenticatedAt.map(SQLValue.real) ?? .null,
            ])
        ServerMetrics.add(ServerMetrics.sessionsCreated)
        return true
    }

    /// Deletes these sessions, and says so (see ``announceEnded()``); returns how many there were.
    @discardableResult
    func delete(keyHashes: [String]) throws -> Int {
        guard !keyHashes.isEmpty else { return 0 }
        var count = 0
        for keyHash in keyHashes {
            count += try db.execute("DELETE FROM sessions WHERE key_hash = $1 RETURNING key_hash", [.text(keyHash)])
                .count
        }
        ServerMetrics.add(ServerMetrics.sessionsEnded, count)
        try announceEnded()
        return count
    }

    /// Deletes every session of an account, and says so (see ``announceEnded()``).
    func deleteAll(userID: Int64) throws {
        let ended = try db.execute("DELETE FROM sessions WHERE user_id = $1 RETURNING key_hash", [.integer(userID)])
        ServerMetrics.add(ServerMetrics.sessionsEnded, ended.count)
        try announceEnded()
    }

    /// Tells every ``SessionCache`` that sessions ended, or that what a session reads of its
    /// account changed (its groups): this process's at once, and on PostgreSQL every replica's,
    /// by a `NOTIFY` that goes out when the transaction commits.
    func announceEnded() throws {
        SessionCache.sessionsEnded()
        if db.dialect == .postgres {
            try db.execute("SELECT pg_notify($1, '')", [.text(SessionCache.channel)])
        }
    }

    /// Records what a pre-login session earned.
    func setStanding(_ standing: Standing?, keyHash: String) throws {
        try db.execute(
            "UPDATE sessions SET standing = $1 WHERE key_hash = $2 AND user_id IS NULL",
            [standing.map { .text($0.rawValue) } ?? .null, .text(keyHash)])
    }

    /// Brings the session's end forward to `end` (never later than it was).
    func shorten(keyHash: String, to end: Int64) throws {
        try db.execute(
            "UPDATE sessions SET expires_at = $2 WHERE key_hash = $1 AND expires_at > $2",
            [.text(keyHash), .integer(end)])
    }

    /// Which of `keyHashes` name a live (present, unexpired) session.
    func live(keyHashes: [String], now: Int64) throws -> Set<String> {
        var live = Set<String>()
        for (chunk, placeholders) in SQLList.chunks(keyHashes, first: 2) {
            for row in try db.execute(
                "SELECT key_hash FROM sessions WHERE expires_at > $1 AND key_hash IN (\(placeholders))",
                [.integer(now)] + chunk.map(SQLValue.text))
            {
                if let key = row.string("key_hash") { live.insert(key) }
            }
        }
        return live
    }

    /// Deletes expired sessions.
    func pruneExpired(now: Int64) throws {
        try db.execute("DELETE FROM sessions WHERE expires_at <= $1", [.integer(now)])
    }
}
