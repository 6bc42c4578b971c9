/// A budget as the limiter charges it, declared as a value: the name `--rate-limits` knows it by,
/// the prefix of its counters in `rate_limits` (a counter is the prefix, a colon and what it
/// counts: an address, an account, a session), and where its limit comes from.
///
/// Homeport's own are the constants below, their limits in ``RateLimitPolicy``; a product's
/// (``ProductBudget``) becomes one with ``init(product:limit:)``. Both are charged with
/// ``RateLimiter/charge(_:_:now:)``.
struct Budget: Sendable {
    /// Where a budget's limit comes from.
    enum Limit: Sendable {
        /// One of Homeport's own limits in the policy (which `--rate-limits` sets).
        case policy(WritableKeyPath<RateLimitPolicy, RateLimit> & Sendable)
        /// A product's limit in force: its declared default, or the operator's.
        case fixed(RateLimit)
    }

    /// The name `--rate-limits NAME=N/SECONDS` sets it by.
    let name: String
    /// The prefix of its counters.
    let counter: String
    /// Its limit.
    let limit: Limit

    init(_ name: String, counter: String, _ limit: WritableKeyPath<RateLimitPolicy, RateLimit> & Sendable) {
        self.name = name
        self.counter = counter
        self.limit = .policy(limit)
    }

    /// A product's budget `name` at the limit in force; its counters are `product:NAME:` and what
    /// they count (`account:ID`, `ip:ADDRESS`).
    init(product name: String, limit: RateLimit) {
        self.name = name
        self.counter = "product:" + name
        self.limit = .fixed(limit)
    }

    /// Its limit in `policy`.
    func limit(in policy: RateLimitPolicy) -> RateLimit {
        switch limit {
        case .policy(let path): policy[keyPath: path]
        case .fixed(let limit): limit
        }
    }

    /// The counter of `key` (an address's bucket, an account id, a session's key hash).
    func counter(_ key: String) -> String { counter + ":" + key }

    static let signupPerAddress = Budget("signup-per-address", counter: "signup:ip", \.signupPerAddress)
    static let loginPerAddress = Budget("login-per-address", counter: "login:ip", \.loginPerAddress)
    static let failedLoginPerAddress = Budget(
        "failed-login-per-address", counter: "login_failed:ip", \.failedLoginPerAddress)
    static let failedLoginPerAccount = Budget(
        "failed-login-per-account", counter: "login_failed:account", \.failedLoginPerAccount)
    static let failedPasswordChangePerSession = Budget(
        "failed-password-change-per-session", counter: "change_failed:session", \.failedPasswordChangePerSession)
    static let failedPasswordConfirmationPerAccount = Budget(
        "failed-password-confirmation-per-account", counter: "confirm_failed:account",
        \.failedPasswordConfirmationPerAccount)
    static let passwordChangePerAccount = Budget(
        "password-change-per-account", counter: "change:account", \.passwordChangePerAccount)
    static let resetPerAddress = Budget("reset-per-address", counter: "reset:ip", \.resetPerAddress)
    static let resetPerEmail = Budget("reset-per-email", counter: "reset:email", \.resetPerEmail)
    static let pushTestPerAccount = Budget("push-test-per-account", counter: "push_test:account", \.pushTestPerAccount)
    static let pushChangesPerAccount = Budget(
        "push-changes-per-account", counter: "push_change:account", \.pushChangesPerAccount)
    static let verificationMailPerAccount = Budget(
        "verification-mail-per-account", counter: "verify_mail:account", \.verificationMailPerAccount)
    /// The mail a sign-up with a taken address sends its owner: counted apart, under the same
    /// limit, so that strangers cannot spend the owner's codes.
    static let decoyMailPerAccount = Budget(
        "verification-mail-per-account", counter: "verify_decoy:account", \.verificationMailPerAccount)
    static let verificationAttemptPerSession = Budget(
        "verification-attempt-per-session", counter: "verify_code:session", \.verificationAttemptPerSession)
    static let mailPerMailbox = Budget("mail-per-mailbox", counter: "mail:mailbox", \.mailPerMailbox)
    static let invitationPerAccount = Budget(
        "invitation-per-account", counter: "invite:account", \.invitationPerAccount)
    static let failedSecondFactorPerAccount = Budget(
        "failed-second-factor-per-account", counter: "mfa_failed:account", \.failedSecondFactorPerAccount)
    static let failedSecondFactorPerSession = Budget(
        "failed-second-factor-per-session", counter: "mfa_failed:session", \.failedSecondFactorPerSession)
    static let failedSecondFactorConfirmationPerAccount = Budget(
        "failed-second-factor-confirmation-per-account", counter: "mfa_confirm:account",
        \.failedSecondFactorConfirmationPerAccount)

    /// Kept in memory by ``ChallengeBudget``, not counted in `rate_limits`.
    static let identityChallengePerAddress = Budget(
        "identity-challenge-per-address", counter: "identity_challenge:ip", \.identityChallengePerAddress)

    /// Every budget an operator can set, each name once, in `--help`'s order.
    static let settable: [Budget] = [
        identityChallengePerAddress, signupPerAddress, loginPerAddress, failedLoginPerAddress, failedLoginPerAccount,
        failedPasswordChangePerSession, failedPasswordConfirmationPerAccount, passwordChangePerAccount, resetPerAddress,
        resetPerEmail, pushTestPerAccount,
        pushChangesPerAccount, verificationMailPerAccount, verificationAttemptPerSession, mailPerMailbox,
        invitationPerAccount,
        failedSecondFactorPerAccount, failedSecondFactorPerSession, failedSecondFactorConfirmationPerAccount,
    ]
}
