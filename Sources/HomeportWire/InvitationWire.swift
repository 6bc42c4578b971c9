/// `POST /api/v1/invitations`: an invitation from the app. Every field may be left out.
public struct InvitationRequest: Codable, Hashable, Sendable {
    /// The one address it signs up (it is mailed there); left out, any address.
    public var email: String?
    /// The groups the account it makes is put in (a member gives only groups it is in).
    public var groups: [String]?
    /// How many sign-ups it allows, 1 to 1,000 (1 when left out).
    public var uses: Int64?
    /// How long it works, in seconds, a minute to a year (a week when left out).
    public var expiresIn: Int64?

    /// Creates a request.
    public init(email: String? = nil, groups: [String]? = nil, uses: Int64? = nil, expiresIn: Int64? = nil) {
        self.email = email
        self.groups = groups
        self.uses = uses
        self.expiresIn = expiresIn
    }
}

/// An invitation as its maker sees it. Its `code` and `link` are in the answer that made it
/// (201) and nowhere else: the server keeps only the code's hash.
public struct InvitationAnswer: Codable, Hashable, Sendable {
    /// Its id (`DELETE /api/v1/invitations/{id}` revokes it).
    public var id: Int64
    /// The code a person signs up with (the made answer only).
    public var code: String?
    /// The web door's sign-up page with the code (the made answer only, when the server knows
    /// its public address).
    public var link: String?
    /// Whether it was mailed to `email` (the made answer only).
    public var mailed: Bool?
    /// The one address it signs up, if it is bound to one.
    public var email: String?
    /// The groups the account it makes is put in.
    public var groups: [String]
    /// Sign-ups it still allows.
    public var usesLeft: Int64
    /// When it stops working, in Unix seconds.
    public var expiresAt: Int64
    /// When it was made, in Unix seconds.
    public var createdAt: Int64
    /// When it was revoked, in Unix seconds, if it was.
    public var revokedAt: Int64?

    /// Creates an answer.
    public init(
        id: Int64, code: String? = nil, link: String? = nil, mailed: Bool? = nil, email: String?, groups: [String],
        usesLeft: Int64, expiresAt: Int64, createdAt: Int64, revokedAt: Int64? = nil
    ) {
        self.id = id
        self.code = code
        self.link = link
        self.mailed = mailed
        self.email = email
        self.groups = groups
        self.usesLeft = usesLeft
        self.expiresAt = expiresAt
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// `GET /api/v1/invitations`: the invitations the signed-in account made, newest first.
public struct InvitationListAnswer: Codable, Hashable, Sendable {
    /// The invitations (without their codes).
    public var invitations: [InvitationAnswer]

    /// Creates an answer.
    public init(invitations: [InvitationAnswer]) {
        self.invitations = invitations
    }
}
