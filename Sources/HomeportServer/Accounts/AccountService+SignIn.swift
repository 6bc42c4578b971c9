import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import HomeportWire

// Sign-in with a password, and sign-out.
extension AccountService {
    /// A sign-in form checked as allauth checks it before refusing a caller who is signed in
    /// already (409): the address, the budgets and the password, a wrong one charged as any
    /// failed sign-in. `nil` when they are right; nothing else is done.
    package func credentialProblem(email rawEmail: String, password: String, address: String) throws -> SignInOutcome? {
        let now = clock.unixSeconds
        switch try authenticate(email: rawEmail, password: password, address: address, now: now) {
        case .refused(let outcome): return outcome
        case .authenticated(let email, _):
            try database.transaction {
                try RateLimiter($0, policy: settings.rateLimits).refundLoginFailure(
                    address: address, email: email, now: now)
            }
            return nil
        }
    }

    /// What the first steps of a sign-in came to.
    enum Authentication {
        /// Refused, with the answer to give.
        case refused(SignInOutcome)
        /// The password is the account's (the failure charged for it is still to give back).
        case authenticated(email: String, account: Account)
    }

    /// The first steps of every sign-in: the address, a password no longer than sign-up allows
    /// (refused before anything is charged or hashed: hashing a megabyte costs more than hashing
    /// the equalising empty string), the budgets charged with a failure, and the password
    /// checked whether or not the account exists, so that both cost the same.
    func authenticate(email rawEmail: String, password: String, address: String, now: Int64) throws -> Authentication {
        guard let email = Credentials.normalizedEmail(rawEmail) else { return .refused(.invalid([Self.invalidEmail])) }
        guard password.utf8.count <= Credentials.maximumPasswordLength else {
            return .refused(.invalid([Self.mismatch]))
        }
        do {
            try database.transaction {
                try RateLimiter($0, policy: settings.rateLimits).chargeLoginAttempt(
                    address: address, email: email, now: now)
            }
        } catch let refusal as RateLimiter.Refusal {
            return .refused(
                refusal.failedLogins
                    ? .tooManyFailedLogins(retryAfter: refusal.retryAfter)
                    : .rateLimited(retryAfter: refusal.retryAfter))
        }
        let found = try AccountStore(database).find(email: email)
        let matches = hasher.checkEqualized(
            password, against: found?.passwordHash,
            costliest: costliestHash.value(in: database, configured: hasher.iterations), timing: hashTiming)
        guard let account = found, matches else { return .refused(.invalid([Self.mismatch])) }
        return .authenticated(email: email, account: account)
    }

    /// Signs in with an address and a password. Wrong credentials and unknown addresses answer
    /// alike and cost the same (see `PasswordHashing.checkEqualized(_:against:)`); only the right
    /// password learns the account's standing. A session the caller already holds at this door
    /// ends (rotation); a hash made at another cost than the configured one is remade.
    package func login(email rawEmail: String, password: String, address: String, kind: SessionKind, current: Caller)
        throws -> SignInOutcome
    {
        let now = clock.unixSeconds
        let email: String
        let account: Account
        switch try authenticate(email: rawEmail, password: password, address: address, now: now) {
        case .refused(let outcome): return outcome
        // The failure was charged before the check; a right password gets it back below.
        case .authenticated(let normalized, let found): (email, account) = (normalized, found)
        }
        if settings.emailVerification == .code, try !EmailVerificationStore(database).isVerified(userID: account.id) {
            return try signInAwaitingVerification(
                account: account, address: address, email: email, kind: kind, current: current, now: now)
        }
        let upgraded = hasher.needsUpgrade(account.passwordHash) ? try hasher.hash(password) : nil
        if account.approval == .approved, try hasSecondFactor(userID: account.id) {
            return try beginSecondFactor(
                account: account, upgraded: upgraded, address: address, email: email, kind: kind, current: current,
                now: now)
        }
        let newSession = try mint.make(
            kind: kind, userID: account.id, authenticatedAt: clock.now().timeIntervalSince1970, now: now)
        let outcome: SignInOutcome = try database.transaction { db in
            try RateLimiter(db, policy: settings.rateLimits).refundLoginFailure(
                address: address, email: email, now: now)
            let sessions = SessionStore(db)
            let accounts = AccountStore(db)
            var hash = account.passwordHash
            if let upgraded, try accounts.replacePasswordHash(id: account.id, from: hash, to: upgraded, at: now) {
                hash = upgraded
            }
            if try sessions.insertSignedIn(newSession.session, now: now, passwordHash: hash) {
                // Rotation: the session the caller held at this door ends as the new one begins.
                if let old = current.session, old.kind == kind { try SessionEnding(db).end(keyHash: old.keyHash) }
                // As allauth (whose key hashes the last login): a reset key mailed before this
                // sign-in opens nothing after it.
                try ResetKeyStore(db).deleteAll(userID: account.id)
                return .signedIn(token: newSession.token, account: account, session: newSession.session)
            }
            // No session: the password changed while it was checked, or the account is not
            // (or, since the check, no longer) approved. Read which, in this transaction.
            guard let latest = try accounts.find(id: account.id), latest.passwordHash == hash else {
                return .invalid([Self.mismatch])
            }
            return try notApproved(latest, newSession, current: current, kind: kind, db, now)
        }
        if case .signedIn = outcome {
            try? database.transaction { try SessionEnding($0).pruneExpired(now: now) }
            try? ResetKeyStore(database).pruneExpired(now: now)
            try? EmailVerificationStore(database).pruneExpired(now: now)
            try? RateLimiter(database, policy: settings.rateLimits).pruneExpired(now: now)
            try? MailFailureStore(database).prune(before: now - 30 * 86400)
        }
        return outcome
    }

    /// The answer to a sign-in the account's standing refused (`latest`: not approved, or held):
    /// the caller's own pre-login session at this door carries the standing, else a new one
    /// made from `newSession` does (in the caller's transaction).
    func notApproved(
        _ latest: Account, _ newSession: (token: String, session: Session), current: Caller, kind: SessionKind,
        _ db: any SQLExecutor, _ now: Int64
    ) throws -> SignInOutcome {
        let standing: Standing = latest.approval == .held ? .held : .waiting
        if case .preLogin(let session, _) = current, session.kind == kind {
            try SessionStore(db).setStanding(standing, keyHash: session.keyHash)
            return .pending(standing: standing, token: nil)
        }
        var preLogin = newSession
        preLogin.session.userID = nil
        preLogin.session.authenticatedAt = nil
        return .pending(standing: standing, token: try insertPreLogin(preLogin, standing: standing, db, now))
    }

    /// A sign-in with the right password to an account whose address is not verified: no session
    /// yet, but a pre-login session and a mailed code (the caller's own session at this door ends).
    /// Past the account's mail budget the answer is django-allauth's: too many login attempts.
    func signInAwaitingVerification(
        account: Account, address: String, email: String, kind: SessionKind, current: Caller, now: Int64,
        refund: Bool = true, provider: SessionFactorStore.ProviderLogin? = nil
    ) throws -> SignInOutcome {
        let verification = try emailVerification.makeVerification(kind: kind, now: now)
        let authenticatedAt = clock.now().timeIntervalSince1970
        let outcome: SignInOutcome = try database.transaction { db in
            // The password was right: its failure comes back whatever follows.
            if refund {
                try RateLimiter(db, policy: settings.rateLimits).refundLoginFailure(
                    address: address, email: email, now: now)
            }
            do {
                try emailVerification.beginVerification(
                    verification, account: account, authenticatedAt: authenticatedAt, db, now: now)
            } catch let refusal as RateLimiter.Refusal {
                return .tooManyFailedLogins(retryAfter: refusal.retryAfter)
            }
            // A provider's sign-in: the code entered on this session proves its link too.
            if let provider {
                try SessionFactorStore(db).recordProvider(keyHash: verification.preLogin.session.keyHash, provider)
            }
            if let old = current.session, old.kind == kind { try SessionEnding(db).end(keyHash: old.keyHash) }
            return .verificationPending(token: verification.preLogin.token)
        }
        if case .verificationPending = outcome { emailVerification.mailVerification(verification, to: account.email) }
        return outcome
    }

    /// Signs out: deletes the session row, so its token stops working everywhere at once.
    package func logout(_ session: Session) throws {
        try SessionEnding(database).end(keyHash: session.keyHash)
    }
}
