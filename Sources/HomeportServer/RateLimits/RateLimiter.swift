import Foundation
import HomeportCrypto
import HomeportStorage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One limit: at most `limit` hits per `windowSeconds`.
public struct RateLimit: Sendable, Hashable, CustomStringConvertible {
    /// Hits allowed per window.
    public var limit: Int
    /// The window, in seconds.
    public var windowSeconds: Int64

    /// Creates a limit.
    public init(_ limit: Int, per windowSeconds: Int64) {
        self.limit = limit
        self.windowSeconds = windowSeconds
    }

    /// The longest window accepted: a year.
    public static let longestWindow: Int64 = 366 * 86400

    /// Parses `N/SECONDS`, such as `10/60` (N from 1 to 1,000,000; a window of at most a year).
    public init?(parsing text: some StringProtocol) {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let limit = Int(parts[0]), (1...1_000_000).contains(limit),
            let window = Int64(parts[1]), (1...Self.longestWindow).contains(window)
        else { return nil }
        self.init(limit, per: window)
    }

    /// `N/SECONDS`.
    public var description: String { "\(limit)/\(windowSeconds)" }
}

/// The limits of every rate-limited action, shared by both doors.
package struct RateLimitPolicy: Sendable, Hashable {
    /// Identity challenges signed per client address: a bucket of `limit` that refills over the
    /// window, kept in each process's memory (a challenge costs no write). Generous, because a
    /// household behind one address, or clients behind a proxy not named in `--trusted-proxies`,
    /// share it.
    package var identityChallengePerAddress = RateLimit(300, per: 10)
    /// Signups per client address.
    package var signupPerAddress = RateLimit(20, per: 3600)
    /// Failed logins per client address.
    package var failedLoginPerAddress = RateLimit(20, per: 600)
    /// Failed logins per account (address tried).
    package var failedLoginPerAccount = RateLimit(5, per: 300)
    /// Login attempts of any outcome per client address.
    package var loginPerAddress = RateLimit(30, per: 60)
    /// Wrong current passwords per session at password change (per session, so that a stolen
    /// token cannot spend the owner's budget).
    package var failedPasswordChangePerSession = RateLimit(5, per: 300)
    /// Wrong current passwords all the signed-in sessions of one account give (password change,
    /// re-authentication, account deletion): a hundred an hour, so that sessions minted from a
    /// stolen one cannot guess the password for days at the per-session rate, while one session
    /// alone (sixty an hour at most) cannot spend it and keep the owner from changing the
    /// password. The owner's sign-in is not charged here.
    package var failedPasswordConfirmationPerAccount = RateLimit(100, per: 3600)
    /// Password changes per account (attempts whose current password was right): each costs two
    /// hashes and hands out a new session, whose fresh failure budget must not make changes free.
    package var passwordChangePerAccount = RateLimit(10, per: 3600)
    /// Password-reset requests per client address.
    package var resetPerAddress = RateLimit(20, per: 3600)
    /// Password-reset requests per address asked for.
    package var resetPerEmail = RateLimit(3, per: 900)
    /// Test notifications per account.
    package var pushTestPerAccount = RateLimit(5, per: 600)
    /// Device registrations and mutes per account (a phone registers at launch and when its token
    /// changes; a person mutes a thread now and then).
    package var pushChangesPerAccount = RateLimit(60, per: 3600)
    /// Verification codes mailed per account (at sign-up, sign-in or resend): as django-allauth,
    /// one per three minutes.
    package var verificationMailPerAccount = RateLimit(1, per: 180)
    /// Mail of every kind (codes, reset links, "someone signed up with your address") to one
    /// mailbox a day: each kind's own budget alone would let one address be sent hundreds.
    package var mailPerMailbox = RateLimit(20, per: 86400)
    /// Invitations one account makes from the app a day (each may mail a stranger).
    package var invitationPerAccount = RateLimit(20, per: 86400)
    /// Tries of the codes mailed to one pending verification (a pre-login session), right or
    /// wrong: as django-allauth, three; the third wrong one gives the verification up.
    package var verificationAttemptPerSession = RateLimit(3, per: 900)
    /// Second-factor codes tried per account at sign-in, right or wrong, on both doors together:
    /// as django-allauth, five per five minutes; a right one clears the count.
    package var failedSecondFactorPerAccount = RateLimit(5, per: 300)
    /// Second-factor codes a signed-in session tries, right or wrong, to confirm itself or to
    /// set TOTP up: five per five minutes; a right one clears the count. A budget of its own, so
    /// that a session (a stolen token, without the password) cannot spend the owner's sign-in.
    package var failedSecondFactorPerSession = RateLimit(5, per: 300)
    /// Second-factor codes all the signed-in sessions of one account try (confirmations, set-up),
    /// right or wrong: ten an hour, so that a stolen session, or several, cannot guess codes for
    /// days at the per-session rate. The owner's sign-in is not charged here.
    package var failedSecondFactorConfirmationPerAccount = RateLimit(10, per: 3600)

    /// Limits the operator set for a product's budgets (``ProductBudget``), by name; a budget not
    /// named here keeps the product's default.
    package var productLimits: [String: RateLimit] = [:]

    /// The defaults.
    package init() {}

    /// The names accepted by ``set(_:to:)`` (and `--rate-limit NAME=N/SECONDS`).
    package static var names: [String] { Budget.settable.map(\.name) }

    /// Sets one limit by name; false for an unknown name.
    package mutating func set(_ name: String, to limit: RateLimit) -> Bool {
        guard let budget = Budget.settable.first(where: { $0.name == name }), case .policy(let path) = budget.limit
        else { return false }
        self[keyPath: path] = limit
        return true
    }
}

/// Fixed-window counters in the `rate_limits` table, so a budget holds across both doors and
/// every replica.
///
/// Budgets are values (``Budget``), Homeport's own and a product's alike, charged with
/// ``charge(_:_:now:)``. An action that charges several at
/// once, in an order that matters (a login's attempt, then its failures; a reset's own budgets,
/// then the mailbox's day), or gives one back, has one function here; every door reaches them
/// through ``AccountService``, so there is no second place where a limit could be forgotten.
struct RateLimiter {
    let db: any SQLExecutor
    /// The limits.
    let policy: RateLimitPolicy

    /// Creates a limiter over `db` (the database, or a connection in a transaction).
    init(_ db: any SQLExecutor, policy: RateLimitPolicy) {
        self.db = db
        self.policy = policy
    }

    /// A refusal: try again after this many seconds.
    struct Refusal: Error, Sendable, Equatable {
        /// Seconds until the window that refused ends.
        var retryAfter: Int64
        /// A failed-login budget refused (an address's or an account's), not the attempts' own.
        var failedLogins = false
    }

    /// Charges one login attempt to the client address, and — before the password is checked — one
    /// failure to the address and to the account tried, refusing when any budget is used up. Charging
    /// first (atomically) means concurrent attempts on several workers or replicas cannot overshoot
    /// a budget; an attempt whose password was right gets its failure back with ``refundLoginFailure``.
    func chargeLoginAttempt(address: String, email: String, now: Int64) throws {
        try charge([bucket(.loginPerAddress, Self.clientKey(address))], now: now)
        do {
            try charge(loginBuckets(address: address, email: email), now: now)
        } catch var refusal as Refusal {
            refusal.failedLogins = true
            throw refusal
        }
    }

    /// Charges a sign-in that is not a password's (an ID token, a handoff's code) to the client
    /// address: the attempt, and before the check one failure, given back with
    /// ``refund(_:_:now:)`` of ``Budget/failedLoginPerAddress`` when it is right.
    func chargeAddressAttempt(address: String, now: Int64) throws {
        let client = Self.clientKey(address)
        try charge(.loginPerAddress, client, now: now)
        do {
            try charge(.failedLoginPerAddress, client, now: now)
        } catch var refusal as Refusal {
            refusal.failedLogins = true
            throw refusal
        }
    }

    /// Gives back the failure ``chargeLoginAttempt`` charged, for an attempt whose password was right.
    func refundLoginFailure(address: String, email: String, now: Int64) throws {
        try refund(loginBuckets(address: address, email: email), now: now)
    }

    /// Takes one hit back from each bucket, within its current window.
    private func refund(_ buckets: [(String, RateLimit)], now: Int64) throws {
        for (bucket, limit) in buckets {
            try db.execute(
                "UPDATE rate_limits SET hits = hits - 1 WHERE bucket = $1 AND hits > 0 AND window_start > $2",
                [.text(bucket), .integer(now - limit.windowSeconds)])
        }
    }

    /// Charges one password-reset request to the client address and to the address asked for.
    func chargeResetRequest(address: String, email: String, now: Int64) throws {
        try charge(
            [
                bucket(.resetPerAddress, Self.clientKey(address)),
                bucket(.resetPerEmail, Digest.sha256Hex(Self.mailbox(email))),
            ], now: now)
        // Charged once the reset's own budgets allowed it: a refused request spends none of the day.
        try charge([mailboxDay(email)], now: now)
    }

    /// Charges a password change before the current password is checked (atomically, like
    /// ``chargeLoginAttempt(address:email:now:)``): one failure to the session and one change to
    /// the account, refusing when either budget is used up. The failure budget is the session's,
    /// not the account's, so a thief holding one token spends only that token's; the change is
    /// given back when the current password was wrong, so only someone who knows it spends the
    /// account's.
    func chargePasswordChangeAttempt(session keyHash: String, account: Int64, now: Int64) throws {
        try charge(
            [failedPasswordChangeBucket(keyHash), failedConfirmationBucket(account), passwordChangeBucket(account)],
            now: now)
    }

    /// Gives the session's and the account's failure back: the current password was right.
    func refundPasswordChangeFailure(session keyHash: String, account: Int64, now: Int64) throws {
        try refund([failedPasswordChangeBucket(keyHash), failedConfirmationBucket(account)], now: now)
    }

    /// Gives the account's change back: the current password was wrong.
    func refundPasswordChange(account: Int64, now: Int64) throws {
        try refund([passwordChangeBucket(account)], now: now)
    }

    /// Charges a confirmation of the password (`auth/reauthenticate`) before it is checked, to
    /// the session's and the account's failure budgets (the ones a password change spends).
    func chargeReauthentication(session keyHash: String, account: Int64, now: Int64) throws {
        try charge([failedPasswordChangeBucket(keyHash), failedConfirmationBucket(account)], now: now)
    }

    /// Charges one second-factor code before it is compared (atomically: two replicas cannot both
    /// take the last try): a sign-in's to the account (both doors share the budget), a signed-in
    /// session's (a confirmation, a set-up) to that session.
    func chargeSecondFactor(account: Int64, session: String?, now: Int64) throws {
        try charge(secondFactorBuckets(account, session: session), now: now)
    }

    /// Clears those second-factor counts: a right code came (as django-allauth).
    func clearSecondFactor(account: Int64, session: String?) throws {
        for bucket in secondFactorBuckets(account, session: session) {
            try db.execute("DELETE FROM rate_limits WHERE bucket = $1", [.text(bucket.0)])
        }
    }

    /// A sign-in's bucket, or a signed-in session's and its account's confirmations'.
    private func secondFactorBuckets(_ account: Int64, session: String?) -> [(String, RateLimit)] {
        guard session != nil else { return [secondFactorBucket(account, session: nil)] }
        return [
            secondFactorBucket(account, session: session),
            bucket(.failedSecondFactorConfirmationPerAccount, String(account)),
        ]
    }

    private func secondFactorBucket(_ account: Int64, session: String?) -> (String, RateLimit) {
        guard let session else { return bucket(.failedSecondFactorPerAccount, String(account)) }
        return bucket(.failedSecondFactorPerSession, session)
    }

    private func passwordChangeBucket(_ account: Int64) -> (String, RateLimit) {
        bucket(.passwordChangePerAccount, String(account))
    }

    private func failedPasswordChangeBucket(_ keyHash: String) -> (String, RateLimit) {
        bucket(.failedPasswordChangePerSession, keyHash)
    }

    private func failedConfirmationBucket(_ account: Int64) -> (String, RateLimit) {
        bucket(.failedPasswordConfirmationPerAccount, String(account))
    }

    /// Charges one action of `budget` to `key`; throws ``Refusal`` past its limit.
    func charge(_ budget: Budget, _ key: String, now: Int64) throws {
        try charge(budget, [key], now: now)
    }

    /// Charges one action of `budget` to each of `keys` (a product's `account:ID` and
    /// `ip:ADDRESS`), each its own counter; throws ``Refusal`` when any is past the limit.
    func charge(_ budget: Budget, _ keys: [String], now: Int64) throws {
        try charge(keys.map { bucket(budget, $0) }, now: now)
    }

    /// Takes back one action of `budget` charged to `key` in its current window.
    func refund(_ budget: Budget, _ key: String, now: Int64) throws {
        try refund([bucket(budget, key)], now: now)
    }

    /// `budget`'s counter of `key`, and its limit in this limiter's policy.
    private func bucket(_ budget: Budget, _ key: String) -> (String, RateLimit) {
        (budget.counter(key), budget.limit(in: policy))
    }

    /// Charges one mailed verification code to the account; a `decoy` (the mail a sign-up with a
    /// taken address sends its owner) to a budget of its own, so that strangers cannot spend the
    /// owner's.
    /// With `mailboxDay`, the mailbox's day of mail is charged too, once the kind's own budget
    /// allowed it (a refusal there spends none of the day's): every mail a stranger can cause
    /// (a sign-up's code, the mail about a taken address, their resends) counts; a code mailed
    /// at a sign-in with the right password does not, so strangers who spent the day cannot keep
    /// the owner out.
    func chargeVerificationMail(
        account: Int64, email: String, decoy: Bool = false, mailboxDay: Bool = true, now: Int64
    ) throws {
        try charge([bucket(decoy ? .decoyMailPerAccount : .verificationMailPerAccount, String(account))], now: now)
        if mailboxDay { try charge([self.mailboxDay(email)], now: now) }
    }

    /// Charges one mail to `email`'s mailbox to its day's budget (a mail that no other budget of
    /// its kind counts: an invitation's).
    func chargeMailboxDay(_ email: String, now: Int64) throws {
        try charge([mailboxDay(email)], now: now)
    }

    /// The day's budget of mail to `email`'s mailbox.
    private func mailboxDay(_ email: String) -> (String, RateLimit) {
        bucket(.mailPerMailbox, Digest.sha256Hex(Self.mailbox(email)))
    }

    /// Charges one try of the verification code waiting on the pre-login session `keyHash`, before
    /// the code is compared (atomically, so concurrent tries cannot overshoot), and returns how
    /// many tries are left after this one.
    func chargeVerificationAttempt(session keyHash: String, now: Int64) throws -> Int {
        try charge([verificationAttemptBucket(keyHash)], now: now)
    }

    /// Gives the try back: the code was right, and only checked (as django-allauth, which counts
    /// wrong codes only).
    func refundVerificationAttempt(session keyHash: String, now: Int64) throws {
        try refund([verificationAttemptBucket(keyHash)], now: now)
    }

    private func verificationAttemptBucket(_ keyHash: String) -> (String, RateLimit) {
        bucket(.verificationAttemptPerSession, keyHash)
    }

    /// The mailbox an address delivers to, as far as a budget is concerned: without a `+tag`
    /// (`ada+1@example.com` and `ada+2@example.com` reach ada's mailbox and share her budget),
    /// and for Gmail without the dots it ignores and under one of its two names
    /// (`a.d.a@googlemail.com` is `ada@gmail.com`).
    static func mailbox(_ email: String) -> String {
        guard let at = email.lastIndex(of: "@") else { return email }
        var local = email[..<at]
        var domain = email[email.index(after: at)...].lowercased()
        if let plus = local.firstIndex(of: "+") { local = local[..<plus] }
        if domain == "googlemail.com" { domain = "gmail.com" }
        let name = domain == "gmail.com" ? local.lowercased().replacingOccurrences(of: ".", with: "") : String(local)
        return name + "@" + domain
    }

    /// Deletes counters whose window ended long ago.
    func pruneExpired(now: Int64) throws {
        try db.execute(
            "DELETE FROM rate_limits WHERE window_start < $1", [.integer(now - RateLimit.longestWindow)])
    }

    private func loginBuckets(address: String, email: String) -> [(String, RateLimit)] {
        [
            bucket(.failedLoginPerAddress, Self.clientKey(address)),
            bucket(.failedLoginPerAccount, Digest.sha256Hex(email)),
        ]
    }

    /// The key a client address is counted under: an IPv4 address as it is, an IPv6 address by
    /// its /64 (one household or one host gets a whole /64, so counting single addresses would
    /// let it rotate through them).
    static func clientKey(_ address: String) -> String {
        AddressRange.bucket(address)
    }

    /// Adds one hit to every bucket (atomically per bucket); throws when any went past its limit,
    /// and otherwise returns the fewest hits left in any of them.
    @discardableResult
    private func charge(_ buckets: [(String, RateLimit)], now: Int64, refuse: Bool = true) throws -> Int {
        var refusal: Refusal?
        var left = Int.max
        for (bucket, limit) in buckets {
            let row = try db.execute(
                """
                INSERT INTO rate_limits (bucket, window_start, hits) VALUES ($1, $2, 1)
                ON CONFLICT (bucket) DO UPDATE SET
                    hits = CASE WHEN rate_limits.window_start <= $3 THEN 1 ELSE rate_limits.hits + 1 END,
                    window_start = CASE WHEN rate_limits.window_start <= $3 THEN $2 ELSE rate_limits.window_start END
                RETURNING hits, window_start
                """, [.text(bucket), .integer(now), .integer(now - limit.windowSeconds)]
            ).first
            if let hits = row?.int("hits"), let start = row?.int("window_start") {
                left = min(left, max(0, limit.limit - Int(hits)))
                if hits > Int64(limit.limit) {
                    let retry = max(1, min(start - now, 0) + limit.windowSeconds)
                    refusal = Refusal(retryAfter: max(refusal?.retryAfter ?? 0, retry))
                }
            }
        }
        if refuse, let refusal {
            ServerMetrics.add(ServerMetrics.rateLimitRefusals)
            throw refusal
        }
        return left
    }
}
