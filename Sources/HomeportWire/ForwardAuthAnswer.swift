/// `GET /api/v1/auth/forward`'s body, for a signed-in session token: who it is, without the
/// token. The same three values come as `X-Homeport-*` header fields, which is what a reverse
/// proxy copies onto the request it passes on.
public struct ForwardAuthAnswer: Codable, Hashable, Sendable {
    /// The account's id (``HomeportHeader/accountID``).
    public var accountId: Int64
    /// The account's sign-in address (``HomeportHeader/accountEmail``).
    public var email: String
    /// A name for the session that is not a secret (``HomeportHeader/sessionHandle``).
    public var session: String
    /// Whether the address is verified (``HomeportHeader/accountEmailVerified``); `nil` from a
    /// server older than the field.
    public var emailVerified: Bool?
    /// The account's groups, sorted (``HomeportHeader/accountGroups``); `nil` from a server older
    /// than the field.
    public var groups: [String]?

    /// Creates an answer.
    public init(accountId: Int64, email: String, session: String, emailVerified: Bool? = nil, groups: [String]? = nil) {
        self.accountId = accountId
        self.email = email
        self.session = session
        self.emailVerified = emailVerified
        self.groups = groups
    }
}
