import HomeportStorage
import HomeportWire

/// A passkey or security key of an account (a WebAuthn credential), as stored.
package struct Passkey: Sendable, Hashable {
    /// Its row id (`account/authenticators/webauthn`'s `id`).
    package var id: Int64
    package var userID: Int64
    /// The credential's id, base64url.
    package var credentialID: String
    /// Its COSE public key, base64url.
    package var publicKey: String
    /// The signature counter last seen.
    package var signCount: Int64
    /// The name its owner gave it.
    package var name: String
    /// Whether it signs in alone (a discoverable credential registered with user verification).
    package var passwordless: Bool
    package var createdAt: Double
    package var lastUsedAt: Double?
}

/// The `webauthn_credentials` and `webauthn_challenges` tables.
struct PasskeyStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    private static let columns =
        "id, user_id, credential_id, public_key, sign_count, name, passwordless, created_at, last_used_at"

    /// The account's passkeys, oldest first.
    func all(userID: Int64) throws -> [Passkey] {
        try db.execute(
            "SELECT \(Self.columns) FROM webauthn_credentials WHERE user_id = $1 ORDER BY id", [.integer(userID)]
        ).compactMap(Self.passkey)
    }

    /// Whether the account has a passkey.
    func exists(userID: Int64) throws -> Bool {
        !(try db.execute(
            "SELECT 1 AS one FROM webauthn_credentials WHERE user_id = $1 LIMIT 1", [.integer(userID)]
        ).isEmpty)
    }

    /// The passkey whose credential id is `credentialID` (base64url), whoever's.
    func find(credentialID: String) throws -> Passkey? {
        try db.execute(
            "SELECT \(Self.columns) FROM webauthn_credentials WHERE credential_id = $1", [.text(credentialID)]
        ).first.flatMap(Self.passkey)
    }

    /// Stores a passkey; `nil` when its credential id is registered already (to anyone).
    func insert(
        userID: Int64, credentialID: String, publicKey: String, signCount: Int64, name: String, passwordless: Bool,
        at now: Double
    ) throws -> Passkey? {
        try db.execute(
            """
            INSERT INTO webauthn_credentials
                (user_id, credential_id, public_key, sign_count, name, passwordless, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (credential_id) DO NOTHING RETURNING \(Self.columns)
            """,
            [
                .integer(userID), .text(credentialID), .text(publicKey), .integer(signCount), .text(name),
                .integer(passwordless ? 1 : 0), .real(now),
            ]
        ).first.flatMap(Self.passkey)
    }

    /// Moves the counter of passkey `id` from `stored` to `presented` and marks it used, in one
    /// statement: two sign-ins with the same counter (a replayed or cloned assertion racing the
    /// real one) move it once. False when it was not at `stored` any more.
    /// With `alone` (a sign-in with the passkey alone), only while it still signs in alone: a
    /// reset that made it a second factor meanwhile wins.
    func use(id: Int64, stored: Int64, presented: Int64, at now: Double, alone: Bool = false) throws -> Bool {
        !(try db.execute(
            """
            UPDATE webauthn_credentials SET sign_count = $3, last_used_at = $4
            WHERE id = $1 AND sign_count = $2 AND ($5 = 0 OR passwordless <> 0) RETURNING id
            """, [.integer(id), .integer(stored), .integer(presented), .real(now), .integer(alone ? 1 : 0)]
        ).isEmpty)
    }

    /// Renames the account's passkey `id`; false when the account has none with this id.
    func rename(id: Int64, userID: Int64, to name: String) throws -> Bool {
        !(try db.execute(
            "UPDATE webauthn_credentials SET name = $3 WHERE id = $1 AND user_id = $2 RETURNING id",
            [.integer(id), .integer(userID), .text(name)]
        ).isEmpty)
    }

    /// Removes the account's passkeys `ids`; how many went.
    func remove(ids: [Int64], userID: Int64) throws -> Int {
        var removed = 0
        for id in Set(ids) {
            removed += try db.execute(
                "DELETE FROM webauthn_credentials WHERE id = $1 AND user_id = $2 RETURNING id",
                [.integer(id), .integer(userID)]
            ).count
        }
        return removed
    }

    /// Makes the account's passkeys added before its address was proven (as `verified_emails`
    /// records it) second factors only, as a password reset by mailed key does; how many were
    /// passkeys that signed in alone.
    func demoteUnproven(userID: Int64) throws -> Int {
        try db.execute(
            """
            UPDATE webauthn_credentials SET passwordless = 0
            WHERE user_id = $1 AND passwordless <> 0 AND NOT EXISTS (
                SELECT 1 FROM verified_emails v
                WHERE v.user_id = webauthn_credentials.user_id AND v.verified_at <= webauthn_credentials.created_at)
            RETURNING id
            """, [.integer(userID)]
        ).count
    }

    /// Removes every passkey of the account (the operator's `users reset-2fa`).
    func removeAll(userID: Int64) throws {
        try db.execute("DELETE FROM webauthn_credentials WHERE user_id = $1", [.integer(userID)])
    }

    private static func passkey(_ row: Row) -> Passkey? {
        guard let id = row.int("id"), let user = row.int("user_id"), let credential = row.string("credential_id"),
            let key = row.string("public_key"), let count = row.int("sign_count"), let name = row.string("name"),
            let created = row.double("created_at")
        else { return nil }
        return Passkey(
            id: id, userID: user, credentialID: credential, publicKey: key, signCount: count, name: name,
            passwordless: row.int("passwordless") == 1, createdAt: created, lastUsedAt: row.double("last_used_at"))
    }

    // MARK: Challenges

    /// What a ceremony waits on: its challenge, for whom.
    struct Challenge: Sendable, Hashable {
        /// `register`, `register-passwordless`, `login`.
        var purpose: String
        var challenge: [UInt8]
        /// The account it is for (`nil` at a passkey sign-in, where the credential says).
        var userID: Int64?
    }

    /// Keeps `challenge` for `owner` (a session, `session:KEY_HASH`), replacing what it waited on.
    func issue(_ challenge: Challenge, owner: String, expiresAt: Int64) throws {
        try db.execute(
            """
            INSERT INTO webauthn_challenges (owner, purpose, challenge, user_id, expires_at) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (owner) DO UPDATE SET purpose = $2, challenge = $3, user_id = $4, expires_at = $5
            """,
            [
                .text(owner), .text(challenge.purpose), .text(IdentityProof.base64URL(challenge.challenge)),
                challenge.userID.map { .integer($0) } ?? .null, .integer(expiresAt),
            ])
    }

    /// Takes the challenge `owner` waits on for `purpose`, once: whatever the answer to it comes to,
    /// it is gone (a replayed answer finds none). `nil` when there is none, or it expired.
    func take(owner: String, purposes: [String], now: Int64) throws -> Challenge? {
        guard
            let row = try db.execute(
                "DELETE FROM webauthn_challenges WHERE owner = $1 RETURNING purpose, challenge, user_id, expires_at",
                [.text(owner)]
            ).first,
            let purpose = row.string("purpose"), purposes.contains(purpose),
            let expires = row.int("expires_at"), expires > now,
            let challenge = row.string("challenge").flatMap(IdentityProof.readBase64URL)
        else { return nil }
        return Challenge(purpose: purpose, challenge: challenge, userID: row.int("user_id"))
    }

    /// Forgets the challenges that expired before `now`.
    func sweep(now: Int64) throws {
        try db.execute("DELETE FROM webauthn_challenges WHERE expires_at <= $1", [.integer(now)])
    }
}
