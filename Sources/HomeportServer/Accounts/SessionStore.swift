import Foundation
import HomeportCrypto
import HomeportStorage
import HomeportWire

/// Which door a session belongs to. A session only works at its own door: an app token is
/// never a web cookie and a web cookie never opens the API.
public enum SessionKind: String, Sendable {
    /// A native app's session, carried in `X-Session-Token`.
    case app
    /// A browser's session, carried in the `homeport_session` cookie.
    case web
}

/// One row of the `sessions` table.
public struct Session: Sendable, Hashable {
    /// The SHA-256 of the token (the token itself is never stored).
    public var keyHash: String
    /// The signed-in account; `nil` for a pre-login session.
    public var userID: Int64?
    /// The door it belongs to.
    public var kind: SessionKind
    /// When it expires (fixed at creation: sessions do not slide).
    public var expiresAt: Int64
    /// When the account authenticated, in Unix seconds.
    public var authenticatedAt: Double?
    /// What a pre-login session earned on its last attempt to get in.
    public var standing: Standing?
}

/// Sessions: one row per login, addressed by the hash of a random 256-bit token.
public struct SessionStore: Sendable {
    let database: any Database
    let random: any RandomSource
    /// How long a session lives, in seconds.
    public let lifetime: Int64

    /// Creates a store.
    public init(database: any Database, random: any RandomSource = SystemRandom(), lifetime: Int64) {
        self.database = database
        self.random = random
        self.lifetime = lifetime
    }

    /// How long a pre-login session (one with nobody in it, kept only for its standing) lives.
    public static let preLoginLifetime: Int64 = 86400

    /// Creates a session and returns its token (shown once, never stored) and its row.
    ///
    /// With `passwordHash`, the session is created only if the account's password hash is still
    /// that one: a login whose password check raced a password change or reset gets `nil`
    /// instead of a session the change would have ended.
    public func create(
        kind: SessionKind, userID: Int64?, standing: Standing? = nil, authenticatedAt: Double? = nil, now: Int64,
        passwordHash: String? = nil
    ) throws -> (token: String, session: Session)? {
        let token = try SecretToken.generate(random)
        let life = userID == nil ? min(lifetime, Self.preLoginLifetime) : lifetime
        let expires = now.addingReportingOverflow(life).overflow ? Int64.max : now + life
        let session = Session(
            keyHash: SecretToken.storedForm(of: token), userID: userID, kind: kind, expiresAt: expires,
            authenticatedAt: authenticatedAt, standing: standing)
        let values: [SQLValue] = [
            .text(session.keyHash), userID.map(SQLValue.integer) ?? .null, .text(kind.rawValue), .integer(now),
            .integer(session.expiresAt), authenticatedAt.map(SQLValue.real) ?? .null,
            standing.map { .text($0.rawValue) } ?? .null,
        ]
        if let passwordHash, let userID {
            let inserted = try database.execute(
                """
                INSERT INTO sessions (key_hash, user_id, kind, created_at, expires_at, authenticated_at, standing)
                SELECT $1, $2, $3, $4, $5, $6, $7 FROM users WHERE id = $8 AND password_hash = $9
                RETURNING key_hash
                """, values + [.integer(userID), .text(passwordHash)])
            return inserted.isEmpty ? nil : (token, session)
        }
        try database.execute(
            """
            INSERT INTO sessions (key_hash, user_id, kind, created_at, expires_at, authenticated_at, standing)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """, values)
        return (token, session)
    }

    /// The live session of `kind` that `token` names; `nil` when it is malformed, unknown,
    /// expired, signed out or of the other kind (callers cannot and must not tell which).
    public func find(token: String, kind: SessionKind, now: Int64) throws -> Session? {
        guard SecretToken.isWellFormed(token) else { return nil }
        let rows = try database.execute(
            """
            SELECT key_hash, user_id, expires_at, authenticated_at, standing FROM sessions
            WHERE key_hash = $1 AND kind = $2 AND expires_at > $3
            """, [.text(SecretToken.storedForm(of: token)), .text(kind.rawValue), .integer(now)])
        guard let row = rows.first, let keyHash = row.string("key_hash"), let expires = row.int("expires_at") else {
            return nil
        }
        let authenticatedAt: Double? =
            switch row["authenticated_at"] {
            case .real(let value): value
            case .integer(let value): Double(value)
            default: nil
            }
        return Session(
            keyHash: keyHash, userID: row.int("user_id"), kind: kind, expiresAt: expires,
            authenticatedAt: authenticatedAt, standing: row.string("standing").flatMap(Standing.init(rawValue:)))
    }

    /// Deletes one session.
    public func delete(keyHash: String) throws {
        try database.execute("DELETE FROM sessions WHERE key_hash = $1", [.text(keyHash)])
    }

    /// Deletes every session of an account, except `keeping` when given.
    public func deleteAll(userID: Int64, keeping: String? = nil) throws {
        try database.execute(
            "DELETE FROM sessions WHERE user_id = $1 AND key_hash <> $2", [.integer(userID), .text(keeping ?? "")])
    }

    /// Records what a pre-login session earned.
    public func setStanding(_ standing: Standing?, keyHash: String) throws {
        try database.execute(
            "UPDATE sessions SET standing = $1 WHERE key_hash = $2",
            [standing.map { .text($0.rawValue) } ?? .null, .text(keyHash)])
    }

    /// Deletes expired sessions and reset keys, and mail-failure records older than 30 days.
    public func pruneExpired(now: Int64) throws {
        try database.execute("DELETE FROM sessions WHERE expires_at <= $1", [.integer(now)])
        try database.execute("DELETE FROM password_resets WHERE expires_at <= $1", [.integer(now)])
        try database.execute("DELETE FROM mail_failures WHERE created_at < $1", [.integer(now - 30 * 86400)])
    }
}
