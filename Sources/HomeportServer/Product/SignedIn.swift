import HomeportCrypto

/// The caller of a product's signed-in route, as the one session reader found it: a product's
/// handler never sees the token and never checks it again.
public struct SignedIn: Sendable, Hashable {
    /// The account's id (stable; use it as the owner of the product's rows).
    public var accountID: Int64
    /// The account's sign-in address (verified, when the server verifies addresses).
    public var email: String
    /// A name for this session that is not a secret: the same for every request of the session,
    /// different for another session, and useless as a credential (log it, key a cache on it).
    public var sessionHandle: String
    /// When the session expires, in Unix seconds.
    public var sessionExpiresAt: Int64
    /// The client's address (the forwarded one behind a trusted proxy).
    public var clientAddress: String

    init(session: Session, account: Account, clientAddress: String) {
        accountID = account.id
        email = account.email
        sessionHandle = Self.handle(of: session)
        sessionExpiresAt = session.expiresAt
        self.clientAddress = clientAddress
    }

    /// A non-secret name for a session: a digest of its stored form (itself a digest of the token).
    static func handle(of session: Session) -> String {
        String(Digest.sha256Hex("homeport-session-handle\u{0}" + session.keyHash).prefix(32))
    }
}
