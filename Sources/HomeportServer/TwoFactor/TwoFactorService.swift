import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import HomeportWire

/// Second factors as django-allauth's MFA app serves them: TOTP (RFC 6238, a code good once, one
/// step of clock skew either way) and ten single-use recovery codes, each try charged to a
/// budget; changing a factor asks for the password or a code again within five minutes. The
/// sign-in that waits for a code is ``AccountService``'s; both doors call these.
package final class TwoFactorService: Sendable {
    /// The key that seals the secrets and the issuer's name; `nil` offers no second factor.
    package let settings: SecondFactorSettings?
    let database: any Database
    let rateLimits: RateLimitPolicy
    let clock: any WallClock
    let random: any RandomSource
    let logger: Logger

    /// Creates the service over `database`, charging tries to `rateLimits`' budgets.
    init(
        settings: SecondFactorSettings?, database: any Database, rateLimits: RateLimitPolicy, clock: any WallClock,
        random: any RandomSource, logger: Logger
    ) {
        self.settings = settings
        self.database = database
        self.rateLimits = rateLimits
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    /// How long a confirmation (``AccountService/reauthenticate(password:session:account:)``) lets a session
    /// change its second factors: as django-allauth, five minutes.
    package static let reauthenticationWindow: Double = 300
    /// Recovery codes made at a time, and their digits (django-allauth's defaults).
    static let recoveryCodeCount = 10
    static let recoveryCodeDigits = 8

    /// What a second-factor code came to.
    package enum SecondFactorOutcome: Sendable {
        /// Signed in (``AccountService/completeSecondFactor(code:caller:)``), or confirmed (a `nil` token).
        case signedIn(token: String?, account: Account, session: Session)
        /// Not a code of this account's factors, or one used before.
        case incorrect
        /// The account's tries are spent for now (django-allauth's `too_many_login_attempts`).
        case tooManyAttempts(retryAfter: Int64)
        /// Nothing waits for a second factor on this session.
        case noneWaiting
    }

    // MARK: Codes

    /// What trying a code came to.
    enum FactorUse {
        case used(String)
        case refused(SecondFactorOutcome)
    }

    /// Charges one try (a sign-in's to the account; with `confirming`, a signed-in session's key
    /// hash, to that session), then uses `code` as a TOTP code (of this step or one either side,
    /// later than any used before) or as an unused recovery code. A right code clears the count
    /// it was charged to.
    func useSecondFactor(_ code: String, userID: Int64, confirming session: String? = nil, now: Int64) throws
        -> FactorUse
    {
        let limiter = RateLimiter(database, policy: rateLimits)
        if let retryAfter = try chargeSecondFactorTry(userID: userID, session: session, now: now) {
            return .refused(.tooManyAttempts(retryAfter: retryAfter))
        }
        guard let key = settings?.key else { return .refused(.incorrect) }
        let store = AuthenticatorStore(database)
        let at = clock.now().timeIntervalSince1970
        let trimmed = code.trimmingCharacters(in: .whitespaces)
        if let totp = try store.find(userID: userID, type: Authenticator.totp), let sealed = totp.sealed {
            guard let secret = key.unseal(sealed, context: "totp:\(userID)").flatMap(Base32.decode) else {
                logger.error("a TOTP secret does not open with the secrets key", metadata: ["account": "\(userID)"])
                return .refused(.incorrect)
            }
            for step in OneTimeCode.matchingSteps(trimmed, secret: secret, around: OneTimeCode.step(at: now)) {
                guard try store.useStep(userID: userID, step: step, at: at) else { continue }
                try limiter.clearSecondFactor(account: userID, session: session)
                return .used(Authenticator.totp)
            }
        }
        let recovery = trimmed.replacingOccurrences(of: " ", with: "").replacingOccurrences(of: "-", with: "")
        if recovery.utf8.count == Self.recoveryCodeDigits,
            try store.useRecoveryCode(userID: userID, hash: key.recoveryCodeHash(recovery, userID: userID), at: at)
        {
            try limiter.clearSecondFactor(account: userID, session: session)
            return .used(Authenticator.recoveryCodes)
        }
        return .refused(.incorrect)
    }

    /// Charges one second-factor try: a sign-in's to the account (`failed-second-factor-per-account`),
    /// a signed-in session's to the session (`failed-second-factor-per-session`); the seconds to
    /// wait when its tries are spent, else `nil`.
    func chargeSecondFactorTry(userID: Int64, session: String?, now: Int64) throws -> Int64? {
        do {
            try database.transaction {
                try RateLimiter($0, policy: rateLimits).chargeSecondFactor(
                    account: userID, session: session, now: now)
            }
            return nil
        } catch let refusal as RateLimiter.Refusal {
            return refusal.retryAfter
        }
    }

    // MARK: Confirmation

    /// Confirms the second factor of a signed-in session (`auth/2fa/reauthenticate`).
    package func reauthenticateSecondFactor(code: String, session: Session, account: Account) throws
        -> SecondFactorOutcome
    {
        guard try SecondFactors(db: database).any(userID: account.id) else { return .incorrect }
        switch try useSecondFactor(code, userID: account.id, confirming: session.keyHash, now: clock.unixSeconds) {
        case .refused(let outcome): return outcome
        case .used(let factor):
            // The factor used, as allauth records it (a recovery code is not TOTP).
            try SessionFactorStore(database).recordReauthentication(
                keyHash: session.keyHash, by: "mfa:" + factor, at: clock.now().timeIntervalSince1970)
            return .signedIn(token: nil, account: account, session: session)
        }
    }

    /// Whether the session confirmed the password or a second factor in the last five minutes.
    package func recentlyReauthenticated(_ session: Session) throws -> Bool {
        guard let at = try SessionFactorStore(database).record(keyHash: session.keyHash).reauthenticatedAt else {
            return false
        }
        return clock.now().timeIntervalSince1970 - at < Self.reauthenticationWindow
    }
}
