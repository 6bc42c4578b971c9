/// The caller of a product's signed-in route, as the one session reader found it: a product's
/// handler never sees the token and never checks it again.
public struct SignedIn: Sendable, Hashable {
    /// The account's id (stable; use it as the owner of the product's rows).
    public var accountID: Int64
    /// The account's sign-in address (verified, when the server verifies addresses).
    public var email: String
    /// A name for this session that is not a secret: the same for every request of the session,
    /// different for another session, and useless as a credential (log it, key a cache on it).
    /// Derived when first asked (a digest) and kept, so a handler that does not ask does not pay
    /// for it, and one that asks on every request pays once per session.
    public var sessionHandle: String {
        SessionHandles.handle(forKeyHash: sessionKeyHash)
    }
    /// The session's stored form (a digest of the token), which the handle is derived from.
    private let sessionKeyHash: String
    /// When the session expires, in Unix seconds.
    public var sessionExpiresAt: Int64
    /// The client's address (the forwarded one behind a trusted proxy).
    public var clientAddress: String
    /// The groups the account belongs to (`admin`, and any the operator gave: `family`,
    /// `bookorbit:librarian`), by name, sorted; as fresh as the session cache (a second by default).
    public var groups: [String]

    /// Whether the account is in `group`.
    public func isMember(of group: String) -> Bool {
        groups.contains(group.lowercased())
    }

    init(session: Session, account: Account, clientAddress: String) {
        accountID = account.id
        email = account.email
        sessionKeyHash = session.keyHash
        sessionExpiresAt = session.expiresAt
        self.clientAddress = clientAddress
        groups = account.groups ?? []
    }
}
