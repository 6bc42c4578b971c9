/// The envelope of the app authentication API (`/_allauth/app/v1/…`), in django-allauth
/// headless's app-client shape, so one client works against Homeport and against allauth.
///
/// Success: `{"status": 200, "data": {"user", "methods"}, "meta": {"is_authenticated", "session_token"?}}`.
/// Errors: `{"status": 400, "errors": [{"code", "param", "message"}]}`. Not signed in: 401 with
/// `data.flows`. An invalid session token: 410 (drop it and start clean).
public struct AuthEnvelope: Codable, Hashable, Sendable {
    /// The HTTP status, repeated in the body.
    public var status: Int
    /// The payload, when there is one.
    public var data: AuthData?
    /// Authentication state and a new session token when one is issued or rotated.
    public var meta: AuthMeta?
    /// Field errors (400) or other refusals.
    public var errors: [AuthFieldError]?

    /// Creates an envelope.
    public init(status: Int, data: AuthData? = nil, meta: AuthMeta? = nil, errors: [AuthFieldError]? = nil) {
        self.status = status
        self.data = data
        self.meta = meta
        self.errors = errors
    }
}

/// The `data` member of an ``AuthEnvelope``.
public struct AuthData: Codable, Hashable, Sendable {
    /// The signed-in user.
    public var user: AuthUser?
    /// How the session authenticated.
    public var methods: [AuthMethod]?
    /// What the client can do next when not signed in.
    public var flows: [AuthFlow]?

    /// Creates a payload.
    public init(user: AuthUser? = nil, methods: [AuthMethod]? = nil, flows: [AuthFlow]? = nil) {
        self.user = user
        self.methods = methods
        self.flows = flows
    }
}

/// A user as the auth API shows it.
public struct AuthUser: Codable, Hashable, Sendable {
    /// The account's numeric id on this installation.
    public var id: Int
    /// A name to show.
    public var display: String
    /// The sign-in address.
    public var email: String
    /// Whether the account has a password.
    public var hasUsablePassword: Bool
    /// The username: on Homeport, whose accounts are email-only, the sign-in address (allauth's
    /// specification requires the member; an allauth server without usernames leaves it out).
    public var username: String?

    /// Creates a user.
    public init(id: Int, display: String, email: String, hasUsablePassword: Bool = true, username: String? = nil) {
        self.id = id
        self.display = display
        self.email = email
        self.hasUsablePassword = hasUsablePassword
        self.username = username
    }

    private enum CodingKeys: String, CodingKey {
        case id, display, email, username
        case hasUsablePassword = "has_usable_password"
    }
}

/// One way the session authenticated.
public struct AuthMethod: Codable, Hashable, Sendable {
    /// `password`, or `mfa` (a second factor).
    public var method: String
    /// When, in Unix seconds.
    public var at: Double
    /// The address used.
    public var email: String?
    /// For `mfa`, the factor: `totp`, `recovery_codes` or `webauthn`.
    public var type: String?
    /// Whether this was a confirmation of a session already signed in (`auth/reauthenticate`,
    /// `auth/2fa/reauthenticate`).
    public var reauthenticated: Bool?
    /// For `socialaccount`, the identity provider's id.
    public var provider: String?
    /// For `socialaccount`, the person's id at the provider (`sub`).
    public var uid: String?
    /// For `mfa` by `webauthn`: `true` when the passkey signed in alone.
    public var passwordless: Bool?

    /// Creates a method entry.
    public init(
        method: String, at: Double, email: String?, type: String? = nil, reauthenticated: Bool? = nil,
        provider: String? = nil, uid: String? = nil, passwordless: Bool? = nil
    ) {
        self.passwordless = passwordless
        self.method = method
        self.at = at
        self.email = email
        self.type = type
        self.reauthenticated = reauthenticated
        self.provider = provider
        self.uid = uid
    }
}

/// An identity provider as the app door describes it (`config`, `account/providers`, the
/// `provider_signup` flow), in django-allauth's shape.
public struct AuthProvider: Codable, Hashable, Sendable {
    /// Its id on this server.
    public var id: String
    /// Its name, for a button.
    public var name: String
    /// How an app can sign in with it: `provider_token` (run its flow on the device, hand over
    /// the ID token).
    public var flows: [String]
    /// The client id an app runs the provider's flow with.
    public var clientID: String?
    /// Where its OpenID Connect discovery document is.
    public var openIDConfigurationURL: String?

    /// Creates a provider description.
    public init(
        id: String, name: String, flows: [String], clientID: String? = nil, openIDConfigurationURL: String? = nil
    ) {
        self.id = id
        self.name = name
        self.flows = flows
        self.clientID = clientID
        self.openIDConfigurationURL = openIDConfigurationURL
    }

    private enum CodingKeys: String, CodingKey {
        case id, name, flows
        case clientID = "client_id"
        case openIDConfigurationURL = "openid_configuration_url"
    }
}

/// A provider account linked to the signed-in account (`account/providers`).
public struct AuthProviderAccount: Codable, Hashable, Sendable {
    /// The person's id at the provider.
    public var uid: String
    /// A name to show: the address the provider gave, or the id.
    public var display: String
    /// The provider.
    public var provider: AuthProvider

    /// Creates a linked account.
    public init(uid: String, display: String, provider: AuthProvider) {
        self.uid = uid
        self.display = display
        self.provider = provider
    }
}

/// One of the account's second factors (`account/authenticators`), as django-allauth's MFA app
/// describes it.
public struct AuthenticatorInfo: Codable, Hashable, Sendable {
    /// `totp` or `recovery_codes`.
    public var type: String
    /// When it was set up, in Unix seconds.
    public var createdAt: Double
    /// When it last let someone in, in Unix seconds.
    public var lastUsedAt: Double?
    /// Recovery codes: how many were made.
    public var totalCodeCount: Int?
    /// Recovery codes: how many are left.
    public var unusedCodeCount: Int?
    /// Recovery codes: the unused codes, in the one answer that shows them.
    public var unusedCodes: [String]?
    /// WebAuthn: its id (to rename or remove it by).
    public var id: Int64?
    /// WebAuthn: the name its owner gave it.
    public var name: String?
    /// WebAuthn: whether it signs in alone (a passkey), or only as a second factor.
    public var isPasswordless: Bool?

    /// Creates a description.
    public init(
        type: String, createdAt: Double, lastUsedAt: Double?, totalCodeCount: Int? = nil, unusedCodeCount: Int? = nil,
        unusedCodes: [String]? = nil
    ) {
        self.type = type
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.totalCodeCount = totalCodeCount
        self.unusedCodeCount = unusedCodeCount
        self.unusedCodes = unusedCodes
    }

    /// `last_used_at` is written as `null` when there is none, as allauth writes it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(lastUsedAt, forKey: .lastUsedAt)
        try container.encodeIfPresent(totalCodeCount, forKey: .totalCodeCount)
        try container.encodeIfPresent(unusedCodeCount, forKey: .unusedCodeCount)
        try container.encodeIfPresent(unusedCodes, forKey: .unusedCodes)
        try container.encodeIfPresent(id, forKey: .id)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encodeIfPresent(isPasswordless, forKey: .isPasswordless)
    }

    private enum CodingKeys: String, CodingKey {
        case type
        case createdAt = "created_at"
        case lastUsedAt = "last_used_at"
        case totalCodeCount = "total_code_count"
        case unusedCodeCount = "unused_code_count"
        case unusedCodes = "unused_codes"
        case id
        case name
        case isPasswordless = "is_passwordless"
    }
}

/// A flow the client may start (`login`, `signup`).
public struct AuthFlow: Codable, Hashable, Sendable {
    /// The flow's id: `login`, `signup`, `verify_email`, `mfa_authenticate`, `reauthenticate`
    /// or `mfa_reauthenticate`.
    public var id: String
    /// `true` for the flow the session is in the middle of (a verification waiting for its
    /// code, a sign-in waiting for its second factor); absent otherwise.
    public var isPending: Bool?
    /// The second factors the flow accepts (`mfa_authenticate`, `mfa_reauthenticate`):
    /// `recovery_codes`, `totp`.
    public var types: [String]?
    /// For `provider_token`: the ids of the providers an app can hand a token of.
    public var providers: [String]?
    /// For `provider_signup`: the provider whose sign-in waits for an address.
    public var provider: AuthProvider?

    /// Creates a flow.
    public init(
        id: String, isPending: Bool? = nil, types: [String]? = nil, providers: [String]? = nil,
        provider: AuthProvider? = nil
    ) {
        self.id = id
        self.isPending = isPending
        self.types = types
        self.providers = providers
        self.provider = provider
    }

    private enum CodingKeys: String, CodingKey {
        case id, types, providers, provider
        case isPending = "is_pending"
    }
}

/// The `meta` member of an ``AuthEnvelope``.
public struct AuthMeta: Codable, Hashable, Sendable {
    /// Whether the session is signed in; `null` when the token was invalid (410).
    public var isAuthenticated: Bool?
    /// A new session token: store it, replacing the old one.
    public var sessionToken: String?

    /// Creates a meta member.
    public init(isAuthenticated: Bool?, sessionToken: String? = nil) {
        self.isAuthenticated = isAuthenticated
        self.sessionToken = sessionToken
    }

    /// Always writes `is_authenticated` (as `null` when unknown); `session_token` only when present.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(isAuthenticated, forKey: .isAuthenticated)
        try container.encodeIfPresent(sessionToken, forKey: .sessionToken)
    }

    private enum CodingKeys: String, CodingKey {
        case isAuthenticated = "is_authenticated"
        case sessionToken = "session_token"
    }
}

/// One error of a 400 answer.
public struct AuthFieldError: Codable, Hashable, Sendable {
    /// A stable code, such as `email_taken` or `email_password_mismatch`.
    public var code: String
    /// The request field it concerns, if any.
    public var param: String?
    /// A sentence for people.
    public var message: String

    /// Creates an error.
    public init(code: String, param: String?, message: String) {
        self.code = code
        self.param = param
        self.message = message
    }
}

/// Request bodies of the app authentication API.
public enum AuthRequest {
    /// `POST auth/login` and `POST auth/signup`.
    public struct Credentials: Codable, Hashable, Sendable {
        /// The sign-in address.
        public var email: String
        /// The password.
        public var password: String
        /// At sign-up, an invitation's code (Homeport's own field): it signs up whatever the
        /// sign-up mode, skipping the approval queue.
        public var invitation: String?

        /// Creates credentials.
        public init(email: String, password: String, invitation: String? = nil) {
            self.email = email
            self.password = password
            self.invitation = invitation
        }
    }

    /// `POST auth/provider/token`: an identity provider's token the app obtained itself.
    public struct ProviderToken: Codable, Hashable, Sendable {
        /// The provider's id on the server (`config`'s `socialaccount.providers`).
        public var provider: String
        /// `login`, or `connect` (link to the signed-in account).
        public var process: String
        /// The token and the client it was issued to.
        public var token: Token

        /// The token: `client_id` (the app's client at the provider) and `id_token`.
        public struct Token: Codable, Hashable, Sendable {
            /// The client the provider issued the token to.
            public var clientID: String
            /// The OpenID Connect ID token.
            public var idToken: String

            /// Creates a token.
            public init(clientID: String, idToken: String) {
                self.clientID = clientID
                self.idToken = idToken
            }

            private enum CodingKeys: String, CodingKey {
                case clientID = "client_id"
                case idToken = "id_token"
            }
        }

        /// Creates a body.
        public init(provider: String, process: String = "login", token: Token) {
            self.provider = provider
            self.process = process
            self.token = token
        }
    }

    /// `POST auth/provider/signup`: the address for a provider sign-up.
    public struct ProviderSignup: Codable, Hashable, Sendable {
        /// The sign-in address of the new account.
        public var email: String

        /// Creates a body.
        public init(email: String) {
            self.email = email
        }
    }

    /// `DELETE account/providers`: the provider account to unlink.
    public struct ProviderAccount: Codable, Hashable, Sendable {
        /// The provider's id.
        public var provider: String
        /// The person's id there (`uid`).
        public var account: String

        /// Creates a body.
        public init(provider: String, account: String) {
            self.provider = provider
            self.account = account
        }
    }

    /// `POST auth/handoff`: a browser sign-in for this app.
    public struct Handoff: Codable, Hashable, Sendable {
        /// `BASE64URL(SHA-256(code_verifier))`, the verifier a random secret the app keeps.
        public var codeChallenge: String
        /// `S256`.
        public var codeChallengeMethod: String
        /// Where the browser is sent with `code` and `state`: an app scheme, or
        /// `http://127.0.0.1:PORT/…` (RFC 8252).
        public var redirectURI: String
        /// Given back with the code, for the app to match the answer to its request.
        public var state: String
        /// What the confirmation page calls this device ("Ada's iPhone").
        public var deviceName: String

        /// Creates a body.
        public init(codeChallenge: String, redirectURI: String, state: String, deviceName: String) {
            self.codeChallenge = codeChallenge
            codeChallengeMethod = "S256"
            self.redirectURI = redirectURI
            self.state = state
            self.deviceName = deviceName
        }

        private enum CodingKeys: String, CodingKey {
            case state
            case codeChallenge = "code_challenge"
            case codeChallengeMethod = "code_challenge_method"
            case redirectURI = "redirect_uri"
            case deviceName = "device_name"
        }
    }

    /// `POST auth/handoff/token`: the code the browser brought back and the app's verifier.
    public struct HandoffToken: Codable, Hashable, Sendable {
        /// The code.
        public var code: String
        /// The verifier whose SHA-256 the handoff was asked for with.
        public var codeVerifier: String

        /// Creates a body.
        public init(code: String, codeVerifier: String) {
            self.code = code
            self.codeVerifier = codeVerifier
        }

        private enum CodingKeys: String, CodingKey {
            case code
            case codeVerifier = "code_verifier"
        }
    }

    /// `POST account/password/change`.
    public struct PasswordChange: Codable, Hashable, Sendable {
        /// The password now.
        public var currentPassword: String
        /// The password to set.
        public var newPassword: String

        /// Creates a change request.
        public init(currentPassword: String, newPassword: String) {
            self.currentPassword = currentPassword
            self.newPassword = newPassword
        }

        private enum CodingKeys: String, CodingKey {
            case currentPassword = "current_password"
            case newPassword = "new_password"
        }
    }

    /// `POST account/delete`: the account's password, confirming.
    public struct AccountDeletion: Codable, Hashable, Sendable {
        /// The account's password.
        public var password: String

        /// Creates a deletion request.
        public init(password: String) {
            self.password = password
        }
    }

    /// `POST auth/password/request`.
    public struct PasswordResetRequest: Codable, Hashable, Sendable {
        /// The address to send the reset key to.
        public var email: String

        /// Creates a reset request.
        public init(email: String) {
            self.email = email
        }
    }

    /// `POST auth/password/reset`.
    public struct PasswordReset: Codable, Hashable, Sendable {
        /// The key from the reset mail.
        public var key: String
        /// The password to set.
        public var password: String

        /// Creates a reset.
        public init(key: String, password: String) {
            self.key = key
            self.password = password
        }
    }

    /// `auth/2fa/authenticate`, `auth/2fa/reauthenticate` and activating TOTP: a TOTP code or a
    /// recovery code.
    public struct SecondFactor: Codable, Hashable, Sendable {
        /// Six digits from the authenticator app, or an eight-digit recovery code.
        public var code: String

        /// Creates a body.
        public init(code: String) {
            self.code = code
        }

        /// Reads `code` as text, or as a JSON number written in decimal (as django-allauth's
        /// form reads it: `123456` is `"123456"`).
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            if let number = try? container.decode(Int64.self, forKey: .code) {
                code = String(number)
            } else {
                code = try container.decode(String.self, forKey: .code)
            }
        }

        private enum CodingKeys: String, CodingKey {
            case code
        }
    }

    /// `auth/reauthenticate`: the password, again.
    public struct Reauthentication: Codable, Hashable, Sendable {
        /// The account's password.
        public var password: String

        /// Creates a body.
        public init(password: String) {
            self.password = password
        }
    }

    /// `POST auth/email/verify`.
    public struct EmailVerification: Codable, Hashable, Sendable {
        /// The code from the verification mail (`BCDF-GHJK`; case, dashes and spaces do not matter).
        public var key: String

        /// Creates a verification.
        public init(key: String) {
            self.key = key
        }
    }
}
