import Foundation
import HomeportCrypto
import HomeportStorage
import HomeportWire

/// The sign-in with a second factor: a sign-in with the right password to an account with TOTP
/// waits on a pre-login session for a code (checked by ``TwoFactorService``); and confirming the
/// password of a signed-in session, before it changes its second factors.
extension AccountService {
    /// How long a sign-in waits for its second factor: as django-allauth's login timeout.
    static let secondFactorWindow: Int64 = 900

    // MARK: Sign-in

    /// The first half of a sign-in to an account with TOTP: the password was right, so its failure
    /// comes back, and a pre-login session waits (15 minutes) for the second factor; the caller's
    /// own session at this door ends, as at any sign-in.
    func beginSecondFactor(
        account: Account, upgraded: String?, address: String, email: String, kind: SessionKind, current: Caller,
        now: Int64, provider: SessionFactorStore.ProviderLogin? = nil
    ) throws -> SignInOutcome {
        var pending = try mint.make(kind: kind, userID: nil, now: now)
        pending.session.expiresAt = min(pending.session.expiresAt, now + Self.secondFactorWindow)
        let authenticatedAt = clock.now().timeIntervalSince1970
        return try database.transaction { db in
            // A password sign-in was charged a failure before its check; a provider's was not.
            if provider == nil {
                try RateLimiter(db, policy: settings.rateLimits).refundLoginFailure(
                    address: address, email: email, now: now)
            }
            var hash = account.passwordHash
            if let upgraded, try AccountStore(db).replacePasswordHash(id: account.id, from: hash, to: upgraded, at: now)
            {
                hash = upgraded
            }
            try SessionStore(db).insertPreLogin(pending.session, now: now)
            try SessionFactorStore(db).beginPending(
                keyHash: pending.session.keyHash,
                .init(userID: account.id, passwordHash: hash, authenticatedAt: authenticatedAt, provider: provider))
            if let old = current.session, old.kind == kind { try SessionEnding(db).end(keyHash: old.keyHash) }
            return .secondFactorPending(token: pending.token, types: try secondFactorTypes(userID: account.id, db))
        }
    }

    /// Whether a sign-in to the account waits for a second factor: TOTP, or a passkey (as
    /// allauth, a WebAuthn key is a second factor too). A passkey counts even where the server
    /// has lost its relying party (its public address became an IP address): the sign-in then
    /// takes a recovery code, or waits for the operator's `users reset-2fa`, and is logged.
    func hasSecondFactor(userID: Int64) throws -> Bool {
        guard try SecondFactors(db: database).any(userID: userID) else { return false }
        if settings.relyingParty == nil, try !AuthenticatorStore(database).hasTOTP(userID: userID) {
            logger.warning(
                "a sign-in waits for a passkey this server cannot ask for: its public address is no relying party; a recovery code or 'users reset-2fa' lets the person in",
                metadata: ["account": String(userID)])
        }
        return true
    }

    /// The second factors the account signs in with, by name (`recovery_codes`, `totp`,
    /// `webauthn`), as allauth's flows list them.
    package func secondFactorTypes(userID: Int64, _ db: (any SQLExecutor)? = nil) throws -> [String] {
        try SecondFactors(db: db ?? database, asksForPasskeys: settings.relyingParty != nil).types(userID: userID)
    }

    /// The factors a pre-login session waits for, or `nil` when it waits for none.
    package func pendingSecondFactor(_ caller: Caller) throws -> [String]? {
        guard case .preLogin(let session, _) = caller,
            let pending = try SessionFactorStore(database).pending(keyHash: session.keyHash)
        else { return nil }
        return try secondFactorTypes(userID: pending.userID)
    }

    /// Completes a sign-in that waits for its second factor: the try is charged to the account
    /// first; a right code (used at once, so never twice) ends the pre-login session and begins
    /// a signed-in one with a new token. A password changed or an account held since the password
    /// was checked leaves nobody signed in.
    package func completeSecondFactor(code: String, caller: Caller) throws -> TwoFactorService.SecondFactorOutcome {
        guard case .preLogin(let preLogin, _) = caller,
            let pending = try SessionFactorStore(database).pending(keyHash: preLogin.keyHash)
        else { return .noneWaiting }
        let now = clock.unixSeconds
        let factor: String
        switch try twoFactor.useSecondFactor(code, userID: pending.userID, now: now) {
        case .used(let used): factor = used
        case .refused(let outcome): return outcome
        }
        return try finishSecondFactor(preLogin: preLogin, pending: pending, factor: factor, now: now)
    }

    /// Completes a sign-in that waits for its second factor with a passkey's answer (`credential`,
    /// the browser's JSON, to the challenge `auth/webauthn/authenticate` issued this pre-login
    /// session): the try is charged to the account first, as a code's; a passkey of this account
    /// that answers it signs in, as a right code does.
    package func completeSecondFactor(passkey credential: Any, caller: Caller) throws
        -> TwoFactorService.SecondFactorOutcome
    {
        guard case .preLogin(let preLogin, _) = caller,
            let pending = try SessionFactorStore(database).pending(keyHash: preLogin.keyHash)
        else { return .noneWaiting }
        let now = clock.unixSeconds
        if let retryAfter = try twoFactor.chargeSecondFactorTry(userID: pending.userID, session: nil, now: now) {
            return .tooManyAttempts(retryAfter: retryAfter)
        }
        guard
            try passkeys.check(
                credential: credential, owner: PasskeyService.owner(preLogin), purpose: "authenticate",
                userID: pending.userID, requireUserVerification: false) != nil
        else { return .incorrect }
        try RateLimiter(database, policy: settings.rateLimits).clearSecondFactor(account: pending.userID, session: nil)
        return try finishSecondFactor(preLogin: preLogin, pending: pending, factor: "webauthn", now: now)
    }

    /// The end of a sign-in whose second factor was right: the pre-login session ends and a
    /// signed-in one begins, unless the password changed or the account was held since.
    private func finishSecondFactor(
        preLogin: Session, pending: SessionFactorStore.Pending, factor: String, now: Int64
    ) throws -> TwoFactorService.SecondFactorOutcome {
        var signedIn = try mint.make(kind: preLogin.kind, userID: pending.userID, now: now)
        signedIn.session.authenticatedAt = pending.authenticatedAt
        let at = clock.now().timeIntervalSince1970
        let outcome: TwoFactorService.SecondFactorOutcome = try database.transaction { db in
            // Ended here and nowhere else: of two right codes sent at once, one signs in.
            guard try SessionEnding(db).end(keyHash: preLogin.keyHash),
                let account = try AccountStore(db).find(id: pending.userID),
                try SessionStore(db).insertSignedIn(signedIn.session, now: now, passwordHash: pending.passwordHash)
            else { return .noneWaiting }
            try SessionFactorStore(db).recordFactor(keyHash: signedIn.session.keyHash, factor: factor, at: at)
            if let provider = pending.provider {
                try SessionFactorStore(db).recordProvider(keyHash: signedIn.session.keyHash, provider)
            }
            try ResetKeyStore(db).deleteAll(userID: account.id)
            return .signedIn(token: signedIn.token, account: account, session: signedIn.session)
        }
        if case .signedIn = outcome { logger.notice("signed in with a second factor", metadata: ["factor": factor]) }
        return outcome
    }

    // MARK: Confirmation

    /// Confirms a signed-in session with a passkey's answer to the challenge
    /// `auth/webauthn/reauthenticate` issued it (allauth's `mfa` confirmation): charged to the
    /// session's second-factor budget first, as a code's.
    package func reauthenticate(passkey credential: Any, session: Session, account: Account) throws
        -> TwoFactorService.SecondFactorOutcome
    {
        let now = clock.unixSeconds
        if let retryAfter = try twoFactor.chargeSecondFactorTry(userID: account.id, session: session.keyHash, now: now)
        {
            return .tooManyAttempts(retryAfter: retryAfter)
        }
        guard
            try passkeys.check(
                credential: credential, owner: PasskeyService.owner(session), purpose: "reauthenticate",
                userID: account.id, requireUserVerification: false) != nil
        else { return .incorrect }
        try database.transaction { db in
            try RateLimiter(db, policy: settings.rateLimits).clearSecondFactor(
                account: account.id, session: session.keyHash)
            try SessionFactorStore(db).recordReauthentication(
                keyHash: session.keyHash, by: "mfa:webauthn", at: clock.now().timeIntervalSince1970)
        }
        return .signedIn(token: nil, account: account, session: session)
    }

    /// What confirming the password came to.
    package enum ReauthenticationOutcome: Sendable {
        /// Confirmed: the session may change its second factors for five minutes.
        case confirmed
        /// Not the account's password.
        case incorrect
        /// The session's tries are spent for now.
        case rateLimited(retryAfter: Int64)
    }

    /// Confirms the password of a signed-in session (`auth/reauthenticate`), charged to the
    /// session's failure budget before the check.
    package func reauthenticate(password: String, session: Session, account: Account) throws
        -> ReauthenticationOutcome
    {
        let now = clock.unixSeconds
        do {
            try database.transaction {
                try RateLimiter($0, policy: settings.rateLimits).chargeReauthentication(
                    session: session.keyHash, account: account.id, now: now)
            }
        } catch let refusal as RateLimiter.Refusal {
            return .rateLimited(retryAfter: refusal.retryAfter)
        }
        guard password.utf8.count <= Credentials.maximumPasswordLength,
            hasher.verify(password, against: account.passwordHash).matches
        else { return .incorrect }
        try database.transaction { db in
            try RateLimiter(db, policy: settings.rateLimits).refundPasswordChangeFailure(
                session: session.keyHash, account: account.id, now: now)
            try SessionFactorStore(db).recordReauthentication(
                keyHash: session.keyHash, by: "password", at: clock.now().timeIntervalSince1970)
        }
        return .confirmed
    }

    /// The ways a session authenticated, as allauth lists them: the password, the second factor
    /// it signed in with, its last confirmation.
    package func authenticationMethods(_ session: Session, account: Account) throws -> [AuthMethod] {
        var methods: [AuthMethod] = []
        let record = try SessionFactorStore(database).record(keyHash: session.keyHash)
        if let at = session.authenticatedAt {
            if let provider = record.provider {
                methods.append(
                    AuthMethod(
                        method: "socialaccount", at: at, email: nil, provider: provider.providerID,
                        uid: provider.subject))
            } else {
                methods.append(AuthMethod(method: "password", at: at, email: account.email))
            }
        }
        if let factor = record.factor, let at = record.factorAt {
            // A passkey's sign-in is its own, without a password: allauth's `passwordless`.
            methods.append(
                AuthMethod(
                    method: "mfa", at: at, email: nil, type: factor,
                    passwordless: factor == "webauthn" && session.authenticatedAt == nil ? true : nil))
        }
        if let recorded = record.reauthenticatedBy, let at = record.reauthenticatedAt {
            // `password`, `mfa` (a code: TOTP, as allauth says of a recovery code too) or
            // `mfa:webauthn` (a passkey).
            let parts = recorded.split(separator: ":", maxSplits: 1).map(String.init)
            let method = parts.first ?? recorded
            let type = parts.count == 2 ? parts[1] : method == "mfa" ? Authenticator.totp : nil
            methods.append(AuthMethod(method: method, at: at, email: nil, type: type, reauthenticated: true))
        }
        return methods
    }

}
