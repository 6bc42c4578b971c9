/// The paths of the product API, on its own listener (`homeport-server serve --product-listen`).
public enum ProductAPIPath {
    /// `POST`: notify one account (``ProductNotificationRequest``; 202 ``ProductNotificationAnswer``).
    public static let notifications = "/product/v1/notifications"
    /// `GET accounts/{id}`: one account (``ProductAccount``); `GET accounts?email=ADDRESS`: the
    /// account that signs in with the address, now.
    public static let accounts = "/product/v1/accounts"
    /// `PUT`: the product's notification codes (``ProductCatalogueRequest``; 200
    /// ``NotificationCatalogue``, the server's whole catalogue with its new version).
    public static let catalogue = "/product/v1/catalogue"
}

/// `POST /product/v1/notifications`: one notification to one account, named by `email` or by
/// `accountId` (one of them).
public struct ProductNotificationRequest: Codable, Hashable, Sendable {
    /// The account's sign-in address.
    public var email: String?
    /// The account's id (as forward auth's `X-Homeport-Account-Id` says it).
    public var accountId: Int64?
    /// A code of the server's catalogue (the product's own, declared with `--catalogue`).
    public var code: String
    /// The title, 1–200 characters.
    public var title: String
    /// The body, at most 2,000 characters.
    public var body: String?
    /// The product's thread id (`journal:42`): mutes act on it.
    public var thread: String?
    /// The product's object id the notification is about.
    public var id: Int64?
    /// The product's own string values for the app (``NotificationData``): `d` in the push's app
    /// data, `data` on the stream.
    public var data: [String: String]?

    /// Creates a request.
    public init(
        email: String? = nil, accountId: Int64? = nil, code: String, title: String, body: String? = nil,
        thread: String? = nil, id: Int64? = nil, data: [String: String]? = nil
    ) {
        self.data = data
        self.email = email
        self.accountId = accountId
        self.code = code
        self.title = title
        self.body = body
        self.thread = thread
        self.id = id
    }
}

/// 202 to a notification: its number in the account's log (the stream's event id) and the
/// pushes it queued (none when the thread is muted or pushes are off).
public struct ProductNotificationAnswer: Codable, Hashable, Sendable {
    /// The notification's number.
    public var id: Int64
    /// Pushes queued.
    public var queued: Int

    /// Creates an answer.
    public init(id: Int64, queued: Int) {
        self.id = id
        self.queued = queued
    }
}

/// `GET /product/v1/accounts/{id}`.
public struct ProductAccount: Codable, Hashable, Sendable {
    /// The account's id.
    public var id: Int64
    /// Its sign-in address.
    public var email: String
    /// Whether the address was verified by a mailed code.
    public var verified: Bool
    /// Its approval stage: `approved`, `waiting`, `rejected` or `held`.
    public var standing: String
    /// The groups it belongs to, sorted; `nil` from a server older than groups.
    public var groups: [String]?

    /// Creates an answer.
    public init(id: Int64, email: String, verified: Bool, standing: String, groups: [String]? = nil) {
        self.id = id
        self.email = email
        self.verified = verified
        self.standing = standing
        self.groups = groups
    }
}

/// `PUT /product/v1/catalogue`: every notification code the product sends, with its title. It
/// replaces what the same key declared before; the server's catalogue version (`mv`) changes
/// when the codes do.
public struct ProductCatalogueRequest: Codable, Hashable, Sendable {
    /// The most codes one key declares.
    public static let maximumCodes = 500

    /// The largest title, in UTF-8 bytes (besides its 200 characters: a character may be many).
    public static let maximumTitleBytes = 800

    /// The largest declaration the rules allow, in bytes: `maximumCodes` codes of 128 bytes with
    /// titles of `maximumTitleBytes`, every byte of a title escaped as JSON may spell it
    /// (`\uXXXX` for each UTF-16 unit, as Python's `json.dumps` does by default: at most three
    /// times its UTF-8 bytes), with room for field names, quotes and indentation. The product
    /// listener takes bodies of this size.
    public static let maximumBodyBytes = maximumCodes * (128 + 3 * maximumTitleBytes + 128) + 4096

    /// The codes, `namespace:name` (the namespace `homeport/core` is Homeport's own).
    public var codes: [NotificationCatalogue.Code]

    /// Creates a request.
    public init(codes: [NotificationCatalogue.Code]) {
        self.codes = codes
    }
}

/// `GET /api/v1/account`: the signed-in account, as the app shows it.
public struct AccountAnswer: Codable, Hashable, Sendable {
    /// The account's id.
    public var id: Int64
    /// Its sign-in address.
    public var email: String
    /// Whether the address is verified.
    public var emailVerified: Bool
    /// The groups it belongs to, sorted (`admin`, `family`).
    public var groups: [String]
    /// Its approval stage (`approved` for a signed-in account).
    public var stage: String
    /// Whether it may invite from the app (`POST /api/v1/invitations`); `nil` from a server
    /// older than invitations.
    public var canInvite: Bool?

    /// Creates an answer.
    public init(
        id: Int64, email: String, emailVerified: Bool, groups: [String], stage: String, canInvite: Bool? = nil
    ) {
        self.id = id
        self.email = email
        self.emailVerified = emailVerified
        self.groups = groups
        self.stage = stage
        self.canInvite = canInvite
    }
}

/// One sign-up in the approval queue (`GET /api/v1/admin/signups`), or the answer to a decision.
public struct SignupEntry: Codable, Hashable, Sendable {
    /// The account's id.
    public var id: Int64
    /// Its sign-in address.
    public var email: String
    /// `waiting` or `held` in the queue; after a decision, `approved`, `held` or `rejected`.
    public var stage: String
    /// When it signed up, in Unix seconds.
    public var createdAt: Int64

    /// Creates an entry.
    public init(id: Int64, email: String, stage: String, createdAt: Int64) {
        self.id = id
        self.email = email
        self.stage = stage
        self.createdAt = createdAt
    }
}

/// `GET /api/v1/admin/signups`: the accounts waiting or held, oldest first.
public struct SignupQueueAnswer: Codable, Hashable, Sendable {
    /// The queue.
    public var signups: [SignupEntry]

    /// Creates an answer.
    public init(signups: [SignupEntry]) {
        self.signups = signups
    }
}
