/// How accounts, sessions and their limits behave on this installation.
public struct AccountSettings: Sendable, Hashable {
    /// Open signup, approval required, or closed.
    public var signup: SignupPolicy
    /// Session lifetime in seconds, fixed from login (default one year).
    public var sessionLifetime: Int64
    /// How long a password-reset key works, in seconds.
    public var resetKeyLifetime: Int64
    /// PBKDF2 iterations for new password hashes.
    public var passwordIterations: Int
    /// The rate limits both doors share.
    public var rateLimits: RateLimitPolicy
    /// The address people use to reach the web door (for links in mail); `nil` uses the listen address.
    public var publicURL: String?

    /// Creates settings; the defaults suit a small installation reachable from the internet.
    public init(
        signup: SignupPolicy = .approval, sessionLifetime: Int64 = 365 * 86400, resetKeyLifetime: Int64 = 3600,
        passwordIterations: Int = 600_000, rateLimits: RateLimitPolicy = RateLimitPolicy(), publicURL: String? = nil
    ) {
        self.signup = signup
        self.sessionLifetime = sessionLifetime
        self.resetKeyLifetime = resetKeyLifetime
        self.passwordIterations = passwordIterations
        self.rateLimits = rateLimits
        self.publicURL = publicURL
    }

    /// Whether cookies must be `Secure` (the public address is HTTPS).
    public var secureCookies: Bool { publicURL?.lowercased().hasPrefix("https://") ?? false }
}
