import HomeportStorage

/// A person at an identity provider, linked to an account here (allauth's `SocialAccount`).
package struct ProviderLink: Sendable, Hashable {
    /// The provider's issuer.
    package var issuer: String
    /// The person's id there (`sub`).
    package var subject: String
    /// The provider it was last used through (its id here).
    package var providerID: String
    /// The account.
    package var userID: Int64
    /// The address the provider gave, if any.
    package var email: String?
    /// When it was linked, in Unix seconds.
    package var createdAt: Int64
    /// Whether the account's address was proven when it was linked: verified here, or vouched
    /// for by this provider as the address the account was made with. An unproven link may
    /// have been made by anyone who typed the address, and ends when its owner resets the
    /// password.
    package var addressProven: Bool = true
}

/// The `provider_links` table: who is who at which provider. One person at one issuer is linked
/// to one account at most (the primary key), whichever provider id names that issuer.
struct ProviderLinkStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// The link of `subject` at `issuer`, if any.
    func find(issuer: String, subject: String) throws -> ProviderLink? {
        try db.execute(
            """
            SELECT issuer, subject, provider_id, user_id, email, created_at, address_proven FROM provider_links
            WHERE issuer = $1 AND subject = $2
            """, [.text(issuer), .text(subject)]
        ).first.flatMap(Self.link)
    }

    /// The account's links, oldest first.
    func all(userID: Int64) throws -> [ProviderLink] {
        try db.execute(
            """
            SELECT issuer, subject, provider_id, user_id, email, created_at, address_proven FROM provider_links
            WHERE user_id = $1 ORDER BY created_at, issuer, subject
            """, [.integer(userID)]
        ).compactMap(Self.link)
    }

    /// Links a person to an account; false when they are linked already (to this account or
    /// another: the caller reads which).
    func link(_ link: ProviderLink) throws -> Bool {
        !(try db.execute(
            """
            INSERT INTO provider_links (issuer, subject, provider_id, user_id, email, created_at, address_proven)
            VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (issuer, subject) DO NOTHING RETURNING user_id
            """,
            [
                .text(link.issuer), .text(link.subject), .text(link.providerID), .integer(link.userID),
                link.email.map(SQLValue.text) ?? .null, .integer(link.createdAt),
                .integer(link.addressProven ? 1 : 0),
            ]
        ).isEmpty)
    }

    /// Removes one of an account's links; false when it has no such link.
    func unlink(userID: Int64, issuer: String, subject: String) throws -> Bool {
        !(try db.execute(
            "DELETE FROM provider_links WHERE user_id = $1 AND issuer = $2 AND subject = $3 RETURNING user_id",
            [.integer(userID), .text(issuer), .text(subject)]
        ).isEmpty)
    }

    /// Marks the account's link to `subject` at provider `providerID` as made by the address's
    /// owner (who proved it on a session that link signed in).
    func markProven(userID: Int64, providerID: String, subject: String) throws {
        try db.execute(
            "UPDATE provider_links SET address_proven = 1 WHERE user_id = $1 AND provider_id = $2 AND subject = $3",
            [.integer(userID), .text(providerID), .text(subject)])
    }

    /// Removes the account's links made before its address was proven; how many.
    func removeUnproven(userID: Int64) throws -> Int {
        try db.execute(
            "DELETE FROM provider_links WHERE user_id = $1 AND address_proven = 0 RETURNING user_id",
            [.integer(userID)]
        ).count
    }

    private static func link(_ row: Row) -> ProviderLink? {
        guard let issuer = row.string("issuer"), let subject = row.string("subject"),
            let provider = row.string("provider_id"), let user = row.int("user_id"), let at = row.int("created_at")
        else { return nil }
        return ProviderLink(
            issuer: issuer, subject: subject, providerID: provider, userID: user, email: row.string("email"),
            createdAt: at, addressProven: row.int("address_proven") != 0)
    }
}
