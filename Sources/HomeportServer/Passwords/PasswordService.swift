import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import HomeportWire

/// Passwords: changed with the current one, confirmed before a change made with it (a new
/// password, the account's deletion), and reset with a single-use key mailed to the address.
/// Both doors call these; ``AccountService`` builds it.
package final class PasswordService: Sendable {
    let settings: AccountSettings
    let database: any Database
    let hasher: any PasswordHashing
    let clock: any WallClock
    let random: any RandomSource
    let logger: Logger
    let mint: SessionMint
    let deliver: MailDelivery

    init(
        settings: AccountSettings, database: any Database, hasher: any PasswordHashing, clock: any WallClock,
        random: any RandomSource, logger: Logger, mint: SessionMint, deliver: MailDelivery
    ) {
        self.settings = settings
        self.database = database
        self.hasher = hasher
        self.clock = clock
        self.random = random
        self.logger = logger
        self.mint = mint
        self.deliver = deliver
    }

    /// What a password change came to.
    package enum PasswordChangeOutcome: Sendable {
        /// Changed: every session of the account is gone, and this new one (same door) replaces
        /// the caller's.
        case changed(token: String, session: Session)
        /// Nothing changed.
        case invalid([FieldProblem])
        /// Too many wrong current passwords from this session; nothing changed.
        case rateLimited(retryAfter: Int64)
        /// The account left `approved` while the change was checked: its sessions ended, this one too.
        case sessionEnded
    }

    static let wrongCurrentPassword = FieldProblem(
        code: AuthErrorCode.enterCurrentPassword, param: "current_password",
        message: "Please type your current password.")

    /// Changes the password after checking the current one; ends every session of the account
    /// and hands the caller a new one.
    ///
    /// The new hash is written only if the stored one is still the hash the current password was
    /// checked against, in one transaction with ending the sessions and voiding reset keys: a
    /// reset that lands while the current password is being checked wins, and the change is
    /// refused as if the current password were wrong (it is, by then).
    package func changePassword(session: Session, account: Account, current: String, new: String) throws
        -> PasswordChangeOutcome
    {
        // The new password first: refusing it costs nothing, so it must not cost a hash either.
        if let problem = Credentials.passwordProblem(new, param: "new_password") { return .invalid([problem]) }
        let now = clock.unixSeconds
        switch try confirmPassword(current, session: session, account: account, now: now) {
        case .rateLimited(let retryAfter): return .rateLimited(retryAfter: retryAfter)
        case .wrong: return .invalid([Self.wrongCurrentPassword])
        case .confirmed: break
        }
        let newHash = try hasher.hash(new)
        var replacement = try mint.make(kind: session.kind, userID: account.id, now: now)
        replacement.session.authenticatedAt = session.authenticatedAt
        let changed: Bool
        do {
            changed = try database.transaction { db in
                guard
                    try AccountStore(db).replacePasswordHash(
                        id: account.id, from: account.passwordHash, to: newHash, at: now)
                else { return false }
                try SessionEnding(db).endAll(userID: account.id)
                try ResetKeyStore(db).deleteAll(userID: account.id)
                guard try SessionStore(db).insertSignedIn(replacement.session, now: now, passwordHash: newHash) else {
                    // The account left `approved` meanwhile: no new password, and no session.
                    throw Abandoned()
                }
                return true
            }
        } catch is Abandoned {
            return .sessionEnded
        }
        guard changed else { return .invalid([Self.wrongCurrentPassword]) }
        logger.notice("password changed; other sessions ended", metadata: ["account": String(account.id)])
        return .changed(token: replacement.token, session: replacement.session)
    }

    /// What confirming a signed-in account's password came to.
    enum PasswordConfirmation {
        case confirmed
        case wrong
        case rateLimited(retryAfter: Int64)
    }

    /// Checks the account's password before a change made with it (a new password, the
    /// account's deletion), charged first to the session's and the account's failures and the
    /// account's changes, so that a stolen token cannot guess at will: a wrong password gives the
    /// account's change back, a right one the failures.
    func confirmPassword(_ password: String, session: Session, account: Account, now: Int64) throws
        -> PasswordConfirmation
    {
        let limiter = { (db: any SQLExecutor) in RateLimiter(db, policy: self.settings.rateLimits) }
        do {
            try database.transaction {
                try limiter($0).chargePasswordChangeAttempt(session: session.keyHash, account: account.id, now: now)
            }
        } catch let refusal as RateLimiter.Refusal {
            return .rateLimited(retryAfter: refusal.retryAfter)
        }
        guard hasher.verify(password, against: account.passwordHash).matches else {
            try limiter(database).refundPasswordChange(account: account.id, now: now)
            return .wrong
        }
        try limiter(database).refundPasswordChangeFailure(session: session.keyHash, account: account.id, now: now)
        return .confirmed
    }

    /// A transaction given up on purpose: rolled back, answered as nothing changed.
    struct Abandoned: Error {}

    /// What a reset request came to. The answer a client sees is the same whether or not an
    /// account has the address.
    package enum ResetRequestOutcome: Sendable, Equatable {
        /// Accepted (a mail was sent, or the address has no account).
        case accepted
        /// The address is not an address.
        case invalid([FieldProblem])
        /// Too many requests.
        case rateLimited(retryAfter: Int64)
    }

    /// Sends a single-use reset key to an account's address; an unknown address gets a mail
    /// saying there is no account, so both answers cost the same and look the same.
    package func requestPasswordReset(email rawEmail: String, address: String, current: Caller) throws
        -> ResetRequestOutcome
    {
        guard let email = Credentials.normalizedEmail(rawEmail) else { return .invalid([AccountService.invalidEmail]) }
        let now = clock.unixSeconds
        do {
            try database.transaction {
                try RateLimiter($0, policy: settings.rateLimits).chargeResetRequest(
                    address: address, email: email, now: now)
            }
        } catch let refusal as RateLimiter.Refusal {
            return .rateLimited(retryAfter: refusal.retryAfter)
        }
        let mail: Mail
        if let account = try AccountStore(database).find(email: email) {
            let key = try SecretToken.generate(random)
            try ResetKeyStore(database).insert(
                keyHash: SecretToken.storedForm(of: key), userID: account.id, now: now,
                expiresAt: now + settings.resetKeyLifetime)
            let link = (settings.publicURL ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            mail = Mail(
                to: email, subject: "Reset your password",
                body: """
                    Someone asked to reset the password of this account. If it was you, open
                    \(link)/account/password/reset/key/\(key)
                    or give the app this key: \(key)
                    The key works once, for \(settings.resetKeyLifetime / 60) minutes. If it was not you, ignore this mail.
                    """,
                kind: "password_reset")
        } else {
            mail = Mail(
                to: email, subject: "Password reset",
                body: "Someone asked to reset a password for this address, but it has no account here.",
                kind: "unknown_account")
        }
        var preLogin: String?
        if case .preLogin(let session, _) = current { preLogin = session.keyHash }
        _ = deliver(mail, standingOf: preLogin)
        return .accepted
    }

    /// The account a live reset key belongs to, without using the key up.
    package func account(forResetKey key: String) throws -> Account? {
        guard SecretToken.isWellFormed(key),
            let userID = try ResetKeyStore(database).userID(
                keyHash: SecretToken.storedForm(of: key), now: clock.unixSeconds)
        else { return nil }
        return try AccountStore(database).find(id: userID)
    }

    /// What a reset came to.
    package enum ResetOutcome: Sendable, Equatable {
        /// The password is set; every session of the account has ended.
        case reset(Account)
        /// The key is unknown, used or expired.
        case invalidKey
        /// The new password is not acceptable; the key still works.
        case invalid([FieldProblem])

        /// Equal when the same case (and account).
        package static func == (lhs: ResetOutcome, rhs: ResetOutcome) -> Bool {
            switch (lhs, rhs) {
            case (.reset(let a), .reset(let b)): a.id == b.id
            case (.invalidKey, .invalidKey): true
            case (.invalid(let a), .invalid(let b)): a == b
            default: false
            }
        }
    }

    /// Sets a new password with a reset key: in one transaction the key is used up (of two
    /// requests with it, one wins), the account's other keys are voided, the password is set and
    /// every session of the account ends.
    package func resetPassword(key: String, password: String) throws -> ResetOutcome {
        guard let account = try account(forResetKey: key) else { return .invalidKey }
        if let problem = Credentials.passwordProblem(password, param: "password") { return .invalid([problem]) }
        let newHash = try hasher.hash(password)
        let now = clock.unixSeconds
        let reset = try database.transaction { db in
            // The account's row first, as every account change locks it first: two resets, or a
            // reset and a change, then wait for each other instead of deadlocking.
            guard try AccountStore(db).lock(id: account.id),
                try ResetKeyStore(db).claim(keyHash: SecretToken.storedForm(of: key), now: now) == account.id
            else { return (Int, Int)?.none }
            try ResetKeyStore(db).deleteAll(userID: account.id)
            try AccountStore(db).setPasswordHash(id: account.id, to: newHash, at: now)
            try SessionEnding(db).endAll(userID: account.id)
            // The key came to the address: its owner is here, and a way in someone added before
            // the address was proven (a provider account linked, a passkey that signs in alone)
            // may not be theirs. The links end; such passkeys stay as second factors only (one
            // may be the owner's, and it then still guards the account against whoever reads the
            // mailbox, as TOTP does). The address is proven now (as allauth's reset verifies
            // it), so what its owner adds from here on is kept.
            let unlinked = try ProviderLinkStore(db).removeUnproven(userID: account.id)
            let demoted = try PasskeyStore(db).demoteUnproven(userID: account.id)
            try EmailVerificationStore(db).markVerified(userID: account.id, now: now)
            return (unlinked, demoted)
        }
        guard let (unlinked, demoted) = reset else { return .invalidKey }
        logger.notice(
            "password reset; every session ended",
            metadata: [
                "account": String(account.id), "providers unlinked": String(unlinked),
                "passkeys now second factors only": String(demoted),
            ])
        return .reset(account)
    }
}
