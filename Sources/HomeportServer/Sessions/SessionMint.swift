import HomeportCrypto

/// Makes new sessions: a fresh token, shown once and never stored, and the session that stores
/// its hash, living `lifetime` seconds.
struct SessionMint: Sendable {
    let random: any RandomSource
    let lifetime: Int64

    /// A new session (not stored yet) and its token.
    func make(kind: SessionKind, userID: Int64?, authenticatedAt: Double? = nil, now: Int64) throws
        -> (token: String, session: Session)
    {
        let token = try SecretToken.generate(random)
        let expires = now.addingReportingOverflow(lifetime).overflow ? Int64.max : now + lifetime
        return (
            token,
            Session(
                keyHash: SecretToken.storedForm(of: token), userID: userID, kind: kind, expiresAt: expires,
                authenticatedAt: authenticatedAt, standing: nil)
        )
    }
}
