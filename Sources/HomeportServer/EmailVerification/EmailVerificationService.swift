import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import HomeportWire

/// Verification of an address by a mailed code (`--email-verification code`), the flow of
/// django-allauth's `ACCOUNT_EMAIL_VERIFICATION_BY_CODE_ENABLED`: a sign-up, or a sign-in with
/// the right password to an account whose address is not verified, gets a pre-login session and
/// a mailed code instead of a session; the code, sent back with that session's token, verifies
/// the address, and then the approval stage decides as at any sign-in. ``AccountService``
/// builds it and begins a verification at a sign-up or sign-in; both doors call the rest.
package final class EmailVerificationService: Sendable {
    let settings: AccountSettings
    let database: any Database
    let clock: any WallClock
    let random: any RandomSource
    let logger: Logger
    let mint: SessionMint
    let deliver: MailDelivery
    /// Told when a sign-up's verified address leaves it waiting for approval.
    let newcomers: NewcomerAnnouncer

    init(
        settings: AccountSettings, database: any Database, clock: any WallClock, random: any RandomSource,
        logger: Logger, mint: SessionMint, deliver: MailDelivery, newcomers: NewcomerAnnouncer
    ) {
        self.newcomers = newcomers
        self.settings = settings
        self.database = database
        self.clock = clock
        self.random = random
        self.logger = logger
        self.mint = mint
        self.deliver = deliver
    }

    /// What sending a code back came to.
    package enum VerificationOutcome: Sendable {
        /// Verified and signed in: a new session (the pre-login one ends) and its token.
        case signedIn(token: String, account: Account, session: Session)
        /// Verified, but the account is not approved: the caller's pre-login session now carries
        /// the standing.
        case pending(standing: Standing)
        /// Verified, and the password sign-in it interrupted now waits for the account's second
        /// factor, as any password sign-in to it does: `token` names the new pre-login session
        /// (`auth/2fa/authenticate`), `types` the factors it takes.
        case secondFactorPending(token: String, types: [String])
        /// Verified, and the sign-up with a passkey it belongs to now waits, on the same pre-login
        /// session, for the passkey (`auth/webauthn/signup`).
        case passkeySignupPending
        /// The code is not the one mailed; the third wrong one gives the verification up.
        case incorrect
        /// No code came (nothing but spaces and dashes): not a try.
        case missingCode
        /// Other tries of this verification are being checked at this moment; nothing was
        /// compared. Try again in a second.
        case busy
        /// No verification waits on the caller's session (none began, it expired, was used or
        /// given up, or verification is off).
        case noneWaiting
    }

    /// What checking a code without using it came to.
    package enum VerificationCheck: Sendable {
        /// The code is right; it verifies this account's address.
        case valid(Account)
        /// As ``VerificationOutcome/incorrect``.
        case incorrect
        /// As ``VerificationOutcome/missingCode``.
        case missingCode
        /// As ``VerificationOutcome/busy``.
        case busy
        /// As ``VerificationOutcome/noneWaiting``.
        case noneWaiting
    }

    /// What asking for a new code came to.
    package enum ResendOutcome: Sendable {
        /// A new code replaces the old one and is on its way.
        case sent
        /// No verification waits on the caller's session.
        case noneWaiting
        /// A code went out too recently; nothing changed.
        case rateLimited(retryAfter: Int64)
    }

    /// Whether a verification waits on the caller's pre-login session.
    package func verificationPending(_ caller: Caller) throws -> Bool {
        guard settings.emailVerification == .code, case .preLogin(let session, _) = caller else { return false }
        return try EmailVerificationStore(database).pending(keyHash: session.keyHash, now: clock.unixSeconds) != nil
    }

    /// Verifies the address with the code mailed to the caller's pre-login session. Every try is
    /// charged to the verification's budget (``RateLimitPolicy/verificationAttemptPerSession``)
    /// before the code is compared, at either door; the third wrong code gives it up.
    ///
    /// The pre-login session must still be there when the code is used (a logout ends the
    /// verification), and the session is issued against the password as it is then: a password
    /// change, reset or hold ends waiting verifications with the sessions.
    package func verifyEmail(code: String, caller: Caller) throws -> VerificationOutcome {
        guard case .preLogin(let session, _) = caller else { return .noneWaiting }
        let codeHash: String
        switch try tryCode(code, session: session) {
        case .right(_, let hash): codeHash = hash
        case .wrong: return .incorrect
        case .missing: return .missingCode
        case .busy: return .busy
        case .none: return .noneWaiting
        }
        let now = clock.unixSeconds
        let replacement = try mint.make(kind: session.kind, userID: nil, now: now)
        // The outcome, the address to tell that it waits for approval after a sign-up, and
        // the address of an account that became a newcomer for the admins (verified now, waiting).
        let (outcome, waitingMail, newcomer): (VerificationOutcome, String?, String?) = try database.transaction { db in
            let verifications = EmailVerificationStore(db)
            guard let claimed = try verifications.claim(keyHash: session.keyHash, codeHash: codeHash, now: now) else {
                // A resend replaced the code while it was compared: this one is wrong now.
                let stillWaiting = try verifications.pending(keyHash: session.keyHash, now: now) != nil
                return (stillWaiting ? .incorrect : .noneWaiting, nil, nil)
            }
            let sessions = SessionStore(db)
            // A sign-up with a passkey goes on to the passkey, on the same pre-login session (as
            // allauth's), before any approval: a person waiting to be let in must have a way in.
            let signups = PasskeySignupStore(db)
            if try signups.pending(keyHash: session.keyHash, verified: false) == claimed.userID,
                let account = try AccountStore(db).find(id: claimed.userID)
            {
                let wasVerified = try verifications.isVerified(userID: account.id)
                try verifications.markVerified(userID: account.id, now: now)
                try signups.markVerified(keyHash: session.keyHash)
                // The passkey is made within the window a second factor has, not the day the
                // code's session had.
                try sessions.shorten(keyHash: session.keyHash, to: now + AccountService.secondFactorWindow)
                return (
                    .passkeySignupPending, nil, account.approval == .waiting && !wasVerified ? account.email : nil
                )
            }
            // A provider sign-up's own session: the person its link signed in is the address's
            // owner, who proves the link with the code.
            let login = try SessionFactorStore(db).provider(keyHash: session.keyHash)
            guard try SessionEnding(db).end(keyHash: session.keyHash),
                let account = try AccountStore(db).find(id: claimed.userID)
            else { return (.noneWaiting, nil, nil) }
            let wasVerified = try verifications.isVerified(userID: account.id)
            try verifications.markVerified(userID: account.id, now: now)
            if let login {
                try ProviderLinkStore(db).markProven(
                    userID: account.id, providerID: login.providerID, subject: login.subject)
            }
            // A password sign-in to an account with a second factor goes on to it: the address
            // verified is no second factor.
            let factors = SecondFactors(db: db, asksForPasskeys: settings.relyingParty != nil)
            if let authenticatedAt = claimed.authenticatedAt, account.approval == .approved,
                try factors.any(userID: account.id)
            {
                var pending = replacement.session
                pending.expiresAt = min(pending.expiresAt, now + AccountService.secondFactorWindow)
                try sessions.insertPreLogin(pending, now: now)
                try SessionFactorStore(db).beginPending(
                    keyHash: pending.keyHash,
                    .init(userID: account.id, passwordHash: account.passwordHash, authenticatedAt: authenticatedAt))
                return (
                    .secondFactorPending(token: replacement.token, types: try factors.types(userID: account.id)), nil,
                    nil
                )
            }
            var signedIn = replacement.session
            signedIn.userID = account.id
            signedIn.authenticatedAt = claimed.authenticatedAt
            if try sessions.insertSignedIn(signedIn, now: now, passwordHash: account.passwordHash) {
                return (.signedIn(token: replacement.token, account: account, session: signedIn), nil, nil)
            }
            // No session: the account is not approved, or its password changed since it was read.
            guard let latest = try AccountStore(db).find(id: account.id), latest.approval != .approved else {
                return (.noneWaiting, nil, nil)
            }
            let standing: Standing = latest.approval == .held ? .held : .waiting
            // The pre-login session stays, to carry the standing.
            var preLogin = session
            preLogin.standing = standing
            try sessions.insertPreLogin(preLogin, now: now)
            // A sign-up (no password sign-in) is told by mail, as without verification. Admins hear
            // of the account once, when its address is first proved (a sign-up's code, or a
            // password sign-in's later).
            return (
                .pending(standing: standing), claimed.authenticatedAt == nil ? account.email : nil,
                latest.approval == .waiting && !wasVerified ? account.email : nil
            )
        }
        if let newcomer { newcomers.announce(email: newcomer) }
        if case .passkeySignupPending = outcome {
            logger.notice("address verified", metadata: ["signedIn": "false", "passkeySignup": "true"])
        }
        guard case .signedIn = outcome else {
            if case .pending(let standing) = outcome {
                logger.notice("address verified", metadata: ["signedIn": "false"])
                if let waitingMail, !deliver(AccountService.waitingMail(to: waitingMail), standingOf: session.keyHash) {
                    return .pending(standing: standing == .waiting ? .mailFailed : standing)
                }
            }
            return outcome
        }
        logger.notice("address verified", metadata: ["signedIn": "true"])
        return outcome
    }

    /// Checks the code mailed to the caller's pre-login session without using it: a wrong code is
    /// a try, charged like at ``verifyEmail(code:caller:)``; a right one is given back.
    package func checkVerificationCode(_ code: String, caller: Caller) throws -> VerificationCheck {
        guard case .preLogin(let session, _) = caller else { return .noneWaiting }
        switch try tryCode(code, session: session) {
        case .right(let pending, _):
            try RateLimiter(database, policy: settings.rateLimits).refundVerificationAttempt(
                session: session.keyHash, now: clock.unixSeconds)
            guard let account = try AccountStore(database).find(id: pending.userID) else { return .noneWaiting }
            return .valid(account)
        case .wrong: return .incorrect
        case .missing: return .missingCode
        case .busy: return .busy
        case .none: return .noneWaiting
        }
    }

    /// Mails a new code for the verification waiting on the caller's pre-login session; the old
    /// code stops working, and the verification keeps its end (15 minutes from its start, as
    /// django-allauth) and its tries. Charged to the account's mail budget
    /// (``RateLimitPolicy/verificationMailPerAccount``), which the first code spent too.
    package func resendVerification(caller: Caller) throws -> ResendOutcome {
        guard settings.emailVerification == .code, case .preLogin(let session, _) = caller else {
            return .noneWaiting
        }
        let now = clock.unixSeconds
        guard let pending = try EmailVerificationStore(database).pending(keyHash: session.keyHash, now: now),
            let account = try AccountStore(database).find(id: pending.userID)
        else { return .noneWaiting }
        // A verification no code completes spends a budget of its own, so that strangers signing
        // up with the address cannot keep its owner from getting codes.
        let decoy = pending.codeHash == Self.noCode
        do {
            try database.transaction {
                try RateLimiter($0, policy: settings.rateLimits).chargeVerificationMail(
                    account: account.id, email: account.email, decoy: decoy,
                    mailboxDay: pending.authenticatedAt == nil, now: now)
            }
        } catch let refusal as RateLimiter.Refusal {
            return .rateLimited(retryAfter: refusal.retryAfter)
        }
        // A verification no code completes stays one: its owner is told again, no code is made.
        if decoy {
            _ = deliver(AccountService.accountExistsMail(to: account.email), standingOf: session.keyHash)
            return .sent
        }
        let code = try VerificationCode.generate(random)
        guard
            try EmailVerificationStore(database).replaceCode(
                keyHash: session.keyHash, codeHash: VerificationCode.storedForm(code, session: session.keyHash),
                now: now)
        else { return .noneWaiting }
        _ = deliver(verificationMail(code, to: account.email), standingOf: session.keyHash)
        return .sent
    }

    // MARK: Operators

    /// Whether the account's address is verified.
    package func isEmailVerified(_ account: Account) throws -> Bool {
        try EmailVerificationStore(database).isVerified(userID: account.id)
    }

    /// The ids of the accounts whose address is verified.
    package func verifiedAccountIDs() throws -> Set<Int64> {
        try EmailVerificationStore(database).verifiedUserIDs()
    }

    /// Records that an operator verified the account's address by other means (its mail does not
    /// arrive, say): its next sign-in needs no code. False if no such account.
    package func markEmailVerified(email rawEmail: String) throws -> Bool {
        guard let email = Credentials.normalizedEmail(rawEmail) else { return false }
        let now = clock.unixSeconds
        return try database.transaction { db in
            guard let account = try AccountStore(db).find(email: email) else { return false }
            try EmailVerificationStore(db).markVerified(userID: account.id, now: now)
            return true
        }
    }

    // MARK: Beginning a verification

    /// A code and the pre-login session it waits on, made before the transaction that stores them.
    struct NewVerification {
        /// The code to mail; `nil` for a verification that no code completes (a sign-up with a
        /// taken address, answered like any other).
        var code: String?
        var preLogin: (token: String, session: Session)
    }

    /// A new code and pre-login session of `kind` (nothing stored yet).
    func makeVerification(kind: SessionKind, now: Int64) throws -> NewVerification {
        var preLogin = try mint.make(kind: kind, userID: nil, now: now)
        // A day, whatever --session-lifetime says: long enough for the code and the standing.
        preLogin.session.expiresAt = now + AccountService.preLoginLifetime
        return NewVerification(code: try VerificationCode.generate(random), preLogin: preLogin)
    }

    /// Stores the pre-login session and its code for `account` (in the caller's transaction),
    /// charging the code to the account's mail budget: throws ``RateLimiter/Refusal`` past it.
    func beginVerification(
        _ new: NewVerification, account: Account, authenticatedAt: Double?, _ db: any SQLExecutor, now: Int64
    ) throws {
        // A code mailed at a sign-in with the right password is the owner's: it spends none of
        // the mailbox's day, which strangers can spend.
        try RateLimiter(db, policy: settings.rateLimits).chargeVerificationMail(
            account: account.id, email: account.email, decoy: new.code == nil, mailboxDay: authenticatedAt == nil,
            now: now)
        let keyHash = new.preLogin.session.keyHash
        try SessionStore(db).insertPreLogin(new.preLogin.session, now: now)
        try EmailVerificationStore(db).insert(
            keyHash: keyHash,
            .init(
                userID: account.id,
                codeHash: new.code.map { VerificationCode.storedForm($0, session: keyHash) } ?? Self.noCode,
                authenticatedAt: authenticatedAt),
            now: now, expiresAt: now + AccountSettings.verificationCodeLifetime)
    }

    /// Mails the code of a verification just begun; a failure sets the pre-login session's
    /// standing to `mail_failed`.
    func mailVerification(_ new: NewVerification, to email: String) {
        guard let code = new.code else { return }
        _ = deliver(verificationMail(code, to: email), standingOf: new.preLogin.session.keyHash)
    }

    // MARK: Helpers

    /// The stored code of a verification that no code completes (no hash is this short).
    static let noCode = "-"

    /// What one try of a code came to.
    private enum Try {
        /// Right: the verification as it was compared, and the code's stored form.
        case right(EmailVerificationStore.Pending, String)
        case wrong
        case missing
        case busy
        case none
    }

    /// Charges one try of `code` against the verification on `session`, then reads the
    /// verification and compares (so a code a resend replaced meanwhile is compared with the new
    /// one). A wrong code that leaves no tries gives the verification up; a try refused because
    /// others are still being compared gives nothing up and compares nothing. Every charged try is
    /// compared, even when a later one gave the verification up first.
    private func tryCode(_ code: String, session: Session) throws -> Try {
        guard settings.emailVerification == .code else { return .none }
        let now = clock.unixSeconds
        let verifications = EmailVerificationStore(database)
        guard let before = try verifications.pending(keyHash: session.keyHash, now: now) else { return .none }
        guard !VerificationCode.normalized(code).isEmpty else { return .missing }
        let left: Int
        do {
            left = try database.transaction {
                try RateLimiter($0, policy: settings.rateLimits).chargeVerificationAttempt(
                    session: session.keyHash, now: now)
            }
        } catch is RateLimiter.Refusal {
            return try verifications.pending(keyHash: session.keyHash, now: now) == nil ? .none : .busy
        }
        let codeHash = VerificationCode.storedForm(code, session: session.keyHash)
        guard let pending = try verifications.pending(keyHash: session.keyHash, now: now) else {
            // A try charged after this one was compared first, was the last and gave the
            // verification up (or a right code used it). This try was charged, so it is still
            // compared, with the code as it was: wrong is a wrong try; right finds nothing left.
            let right = Digest.constantTimeEquals(Array(codeHash.utf8), Array(before.codeHash.utf8))
            return right ? .none : .wrong
        }
        guard Digest.constantTimeEquals(Array(codeHash.utf8), Array(pending.codeHash.utf8)) else {
            if left == 0 { try verifications.delete(keyHash: session.keyHash) }
            return .wrong
        }
        return .right(pending, codeHash)
    }

    private func verificationMail(_ code: String, to email: String) -> Mail {
        let minutes = AccountSettings.verificationCodeLifetime / 60
        return Mail(
            to: email, subject: "Your verification code",
            body: """
                Your verification code is:

                    \(code)

                Enter it where you signed in to confirm that this address is yours. It works for \
                \(minutes) minutes. If you did not sign up or sign in, you can ignore this mail.
                """,
            kind: "verification_code")
    }

}
