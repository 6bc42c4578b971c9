import HomeportStorage
import HomeportWire

/// One row of `authenticators`: a second factor of an account.
struct Authenticator: Sendable, Hashable {
    /// `totp` or `recovery_codes`.
    var type: String
    /// TOTP: its secret; recovery codes: the codes, until they are shown once. Sealed with the
    /// ``SecretsKey`` for this account.
    var sealed: String?
    /// TOTP: the last step whose code was accepted (a code is good once).
    var lastStep: Int64
    var createdAt: Double
    var lastUsedAt: Double?

    static let totp = "totp"
    static let recoveryCodes = "recovery_codes"
}

/// The `authenticators` and `recovery_codes` tables. Every use of a code is one conditional
/// update, so two replicas given the same code at the same instant let it in once.
struct AuthenticatorStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// The account's authenticators in the order they were made (TOTP before the recovery codes
    /// made with it), as django-allauth lists them.
    func all(userID: Int64) throws -> [Authenticator] {
        try db.execute(
            """
            SELECT type, sealed, last_step, created_at, last_used_at FROM authenticators
            WHERE user_id = $1 ORDER BY created_at, CASE WHEN type = 'totp' THEN 0 ELSE 1 END
            """, [.integer(userID)]
        ).compactMap { row in
            guard let type = row.string("type"), let created = row.double("created_at") else { return nil }
            return Authenticator(
                type: type, sealed: row.string("sealed"), lastStep: row.int("last_step") ?? 0, createdAt: created,
                lastUsedAt: row.double("last_used_at"))
        }
    }

    /// The account's authenticator of `type`.
    func find(userID: Int64, type: String) throws -> Authenticator? {
        try all(userID: userID).first { $0.type == type }
    }

    /// Whether the account has a TOTP authenticator (and so signs in with a second factor).
    func hasTOTP(userID: Int64) throws -> Bool {
        !(try db.execute(
            "SELECT 1 AS one FROM authenticators WHERE user_id = $1 AND type = 'totp'", [.integer(userID)]
        ).isEmpty)
    }

    /// Whether any account has a second factor.
    func any() throws -> Bool {
        !(try db.execute("SELECT 1 AS one FROM authenticators LIMIT 1").isEmpty)
    }

    /// Adds a TOTP authenticator; false if the account has one already.
    func insertTOTP(userID: Int64, sealed: String, step: Int64, at now: Double) throws -> Bool {
        !(try db.execute(
            """
            INSERT INTO authenticators (user_id, type, sealed, last_step, created_at) VALUES ($1, 'totp', $2, $3, $4)
            ON CONFLICT (user_id, type) DO NOTHING RETURNING user_id
            """, [.integer(userID), .text(sealed), .integer(step), .real(now)]
        ).isEmpty)
    }

    /// Accepts a TOTP code of `step`: only if no code of this step or a later one was accepted
    /// before. False for a replay (here or on another replica).
    func useStep(userID: Int64, step: Int64, at now: Double) throws -> Bool {
        !(try db.execute(
            """
            UPDATE authenticators SET last_step = $2, last_used_at = $3
            WHERE user_id = $1 AND type = 'totp' AND last_step < $2 RETURNING user_id
            """, [.integer(userID), .integer(step), .real(now)]
        ).isEmpty)
    }

    /// Replaces the account's recovery codes: their keyed hashes, and the codes themselves sealed
    /// until they are shown.
    func replaceRecoveryCodes(userID: Int64, hashes: [String], sealed: String, at now: Double) throws {
        try db.execute("DELETE FROM recovery_codes WHERE user_id = $1", [.integer(userID)])
        try db.execute(
            "DELETE FROM authenticators WHERE user_id = $1 AND type = 'recovery_codes'", [.integer(userID)])
        for hash in hashes {
            try db.execute(
                "INSERT INTO recovery_codes (user_id, code_hash) VALUES ($1, $2)", [.integer(userID), .text(hash)])
        }
        try db.execute(
            "INSERT INTO authenticators (user_id, type, sealed, created_at) VALUES ($1, 'recovery_codes', $2, $3)",
            [.integer(userID), .text(sealed), .real(now)])
    }

    /// Uses a recovery code, once: false if it is not one of the account's, or was used before.
    func useRecoveryCode(userID: Int64, hash: String, at now: Double) throws -> Bool {
        guard
            !(try db.execute(
                """
                UPDATE recovery_codes SET used_at = $3
                WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL RETURNING user_id
                """, [.integer(userID), .text(hash), .integer(Int64(now))]
            ).isEmpty)
        else { return false }
        try db.execute(
            "UPDATE authenticators SET last_used_at = $2 WHERE user_id = $1 AND type = 'recovery_codes'",
            [.integer(userID), .real(now)])
        return true
    }

    /// Which of the account's recovery codes are unused, by hash, and how many there are.
    func recoveryCodeCounts(userID: Int64) throws -> (unused: Set<String>, total: Int) {
        let rows = try db.execute(
            "SELECT code_hash, used_at FROM recovery_codes WHERE user_id = $1", [.integer(userID)])
        let unused = rows.filter { $0.int("used_at") == nil }.compactMap { $0.string("code_hash") }
        return (Set(unused), rows.count)
    }

    /// Forgets the plain codes once shown; false if they were shown already (by another request).
    func markRecoveryCodesShown(userID: Int64) throws -> Bool {
        !(try db.execute(
            """
            UPDATE authenticators SET sealed = NULL
            WHERE user_id = $1 AND type = 'recovery_codes' AND sealed IS NOT NULL RETURNING user_id
            """, [.integer(userID)]
        ).isEmpty)
    }

    /// Removes the account's TOTP authenticator (its recovery codes stay).
    func deleteTOTP(userID: Int64) throws {
        try db.execute("DELETE FROM authenticators WHERE user_id = $1 AND type = 'totp'", [.integer(userID)])
    }

    /// Removes every second factor of the account (TOTP off: recovery codes recover nothing).
    func deleteAll(userID: Int64) throws {
        try db.execute("DELETE FROM recovery_codes WHERE user_id = $1", [.integer(userID)])
        try db.execute("DELETE FROM authenticators WHERE user_id = $1", [.integer(userID)])
    }
}

/// The `session_factors` table: what one session knows of second factors.
struct SessionFactorStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// A sign-in that waits for its second factor, on a pre-login session.
    struct Pending: Sendable, Hashable {
        var userID: Int64
        /// The password hash checked: a change since then voids the sign-in.
        var passwordHash: String
        var authenticatedAt: Double
        /// The provider account the sign-in came through, when it was not a password.
        var provider: ProviderLogin? = nil
    }

    /// The provider account a session signed in through (its id here, and the person's `sub`).
    struct ProviderLogin: Sendable, Hashable {
        var providerID: String
        var subject: String
    }

    /// What a signed-in session did beyond its password.
    struct Record: Sendable, Hashable {
        var factor: String?
        var factorAt: Double?
        var reauthenticatedBy: String?
        var reauthenticatedAt: Double?
        var totpSetup: String?
        var provider: ProviderLogin?
    }

    func beginPending(keyHash: String, _ pending: Pending) throws {
        try db.execute(
            """
            INSERT INTO session_factors (key_hash, pending_user_id, pending_password_hash, pending_authenticated_at)
            VALUES ($1, $2, $3, $4)
            """,
            [.text(keyHash), .integer(pending.userID), .text(pending.passwordHash), .real(pending.authenticatedAt)])
        if let provider = pending.provider { try recordProvider(keyHash: keyHash, provider) }
    }

    func pending(keyHash: String) throws -> Pending? {
        guard
            let row = try db.execute(
                """
                SELECT f.pending_user_id, f.pending_password_hash, f.pending_authenticated_at, p.provider_id,
                    p.provider_subject
                FROM session_factors f LEFT JOIN session_providers p ON p.key_hash = f.key_hash
                WHERE f.key_hash = $1 AND f.pending_user_id IS NOT NULL
                """, [.text(keyHash)]
            ).first,
            let userID = row.int("pending_user_id"), let hash = row.string("pending_password_hash"),
            let at = row.double("pending_authenticated_at")
        else { return nil }
        return Pending(userID: userID, passwordHash: hash, authenticatedAt: at, provider: Self.provider(row))
    }

    /// The provider account the session signed in (or waits to be verified) through, if any.
    func provider(keyHash: String) throws -> ProviderLogin? {
        try db.execute(
            "SELECT provider_id, provider_subject FROM session_providers WHERE key_hash = $1", [.text(keyHash)]
        ).first.flatMap(Self.provider)
    }

    func record(keyHash: String) throws -> Record {
        let provider = try provider(keyHash: keyHash)
        guard
            let row = try db.execute(
                """
                SELECT factor, factor_at, reauthenticated_by, reauthenticated_at, totp_setup FROM session_factors
                WHERE key_hash = $1
                """, [.text(keyHash)]
            ).first
        else { return Record(provider: provider) }
        return Record(
            factor: row.string("factor"), factorAt: row.double("factor_at"),
            reauthenticatedBy: row.string("reauthenticated_by"), reauthenticatedAt: row.double("reauthenticated_at"),
            totpSetup: row.string("totp_setup"), provider: provider)
    }

    private static func provider(_ row: Row) -> ProviderLogin? {
        guard let id = row.string("provider_id"), let subject = row.string("provider_subject") else { return nil }
        return ProviderLogin(providerID: id, subject: subject)
    }

    /// Records the provider account a new session signed in through.
    func recordProvider(keyHash: String, _ provider: ProviderLogin) throws {
        try db.execute(
            """
            INSERT INTO session_providers (key_hash, provider_id, provider_subject) VALUES ($1, $2, $3)
            ON CONFLICT (key_hash) DO UPDATE SET provider_id = $2, provider_subject = $3
            """, [.text(keyHash), .text(provider.providerID), .text(provider.subject)])
    }

    /// Records the second factor a new session signed in with.
    func recordFactor(keyHash: String, factor: String, at: Double) throws {
        try db.execute(
            """
            INSERT INTO session_factors (key_hash, factor, factor_at) VALUES ($1, $2, $3)
            ON CONFLICT (key_hash) DO UPDATE SET factor = $2, factor_at = $3
            """, [.text(keyHash), .text(factor), .real(at)])
    }

    /// Records a confirmation (`password` or `mfa`) of a signed-in session.
    func recordReauthentication(keyHash: String, by method: String, at: Double) throws {
        try db.execute(
            """
            INSERT INTO session_factors (key_hash, reauthenticated_by, reauthenticated_at) VALUES ($1, $2, $3)
            ON CONFLICT (key_hash) DO UPDATE SET reauthenticated_by = $2, reauthenticated_at = $3
            """, [.text(keyHash), .text(method), .real(at)])
    }

    /// Keeps the TOTP secret offered to this session for set-up (sealed), replacing an older one.
    func offerTOTP(keyHash: String, sealed: String?) throws {
        try db.execute(
            """
            INSERT INTO session_factors (key_hash, totp_setup) VALUES ($1, $2)
            ON CONFLICT (key_hash) DO UPDATE SET totp_setup = $2
            """, [.text(keyHash), sealed.map(SQLValue.text) ?? .null])
    }
}
