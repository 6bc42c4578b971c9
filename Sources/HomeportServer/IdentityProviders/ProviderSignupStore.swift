import HomeportStorage

/// The `provider_signups` table: a provider sign-in that waits, on a pre-login session, for an
/// address to make its account with (the provider gave none, or one with an account here), and
/// the `used_id_tokens` table, the ID tokens already spent.
struct ProviderSignupStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// The waiting sign-in: the provider's id here and who the provider says the person is.
    struct Pending: Sendable, Hashable {
        var providerID: String
        var identity: ProviderIdentity
    }

    func insert(keyHash: String, _ pending: Pending) throws {
        let identity = pending.identity
        try db.execute(
            """
            INSERT INTO provider_signups (key_hash, provider_id, issuer, subject, email, email_verified, name)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """,
            [
                .text(keyHash), .text(pending.providerID), .text(identity.issuer), .text(identity.subject),
                identity.email.map(SQLValue.text) ?? .null, .integer(identity.emailVerified ? 1 : 0),
                identity.name.map(SQLValue.text) ?? .null,
            ])
    }

    func pending(keyHash: String) throws -> Pending? {
        guard
            let row = try db.execute(
                """
                SELECT provider_id, issuer, subject, email, email_verified, name FROM provider_signups
                WHERE key_hash = $1
                """, [.text(keyHash)]
            ).first, let provider = row.string("provider_id"), let issuer = row.string("issuer"),
            let subject = row.string("subject")
        else { return nil }
        return Pending(
            providerID: provider,
            identity: ProviderIdentity(
                issuer: issuer, subject: subject, email: row.string("email"),
                emailVerified: row.int("email_verified") == 1, name: row.string("name")))
    }

    /// Spends an ID token; false when it was spent already.
    func spend(tokenID: String, expiresAt: Int64, now: Int64) throws -> Bool {
        try db.execute("DELETE FROM used_id_tokens WHERE expires_at < $1", [.integer(now)])
        return
            !(try db.execute(
                """
                INSERT INTO used_id_tokens (token_id, expires_at) VALUES ($1, $2)
                ON CONFLICT (token_id) DO NOTHING RETURNING token_id
                """, [.text(tokenID), .integer(expiresAt)]
            ).isEmpty)
    }
}
