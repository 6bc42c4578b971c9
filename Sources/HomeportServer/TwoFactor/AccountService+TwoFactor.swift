import Foundation
import HomeportCrypto
import HomeportStorage
import HomeportWire

/// What two-factor sign-in needs: the key that seals its secrets, and the name an authenticator
/// app shows beside the account.
public struct SecondFactorSettings: Sendable, Hashable {
    /// Seals TOTP secrets and unshown recovery codes; keys the recovery codes' hashes.
    public var key: SecretsKey
    /// The `issuer` of the `otpauth://` URL (the product's name).
    public var issuer: String

    /// Creates settings.
    public init(key: SecretsKey, issuer: String) {
        self.key = key
        self.issuer = issuer
    }
}

/// Two-factor sign-in as django-allauth's MFA app serves it: TOTP (RFC 6238, a code good once,
/// one step of clock skew either way) and ten single-use recovery codes; a sign-in with the right
/// password to an account with TOTP waits on a pre-login session for a code; changing a second
/// factor asks for the password or a code again within five minutes. Both doors call these.
extension AccountService {
    /// How long a confirmation (``reauthenticate(password:session:account:)``) lets a session
    /// change its second factors: as django-allauth, five minutes.
    public static let reauthenticationWindow: Double = 300
    /// How long a sign-in waits for its second factor: as django-allauth's login timeout.
    static let secondFactorWindow: Int64 = 900
    /// Recovery codes made at a time, and their digits (django-allauth's defaults).
    static let recoveryCodeCount = 10
    static let recoveryCodeDigits = 8

    /// What a second-factor code came to.
    public enum SecondFactorOutcome: Sendable {
        /// Signed in (``completeSecondFactor(code:caller:)``), or confirmed (a `nil` token).
        case signedIn(token: String?, account: Account, session: Session)
        /// Not a code of this account's factors, or one used before.
        case incorrect
        /// The account's tries are spent for now (django-allauth's `too_many_login_attempts`).
        case tooManyAttempts(retryAfter: Int64)
        /// Nothing waits for a second factor on this session.
        case noneWaiting
    }

    // MARK: Sign-in

    /// The second factors an account signs in with, by name (django-allauth's flows list them so).
    public func secondFactorTypes(userID: Int64) throws -> [String] {
        try AuthenticatorStore(database).all(userID: userID).map(\.type).sorted()
    }

    /// The first half of a sign-in to an account with TOTP: the password was right, so its failure
    /// comes back, and a pre-login session waits (15 minutes) for the second factor; the caller's
    /// own session at this door ends, as at any sign-in.
    func beginSecondFactor(
        account: Account, upgraded: String?, address: String, email: String, kind: SessionKind, current: Caller,
        now: Int64, provider: SessionFactorStore.ProviderLogin? = nil
    ) throws -> SignInOutcome {
        var pending = try makeSession(kind: kind, userID: nil, now: now)
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
            let types = try AuthenticatorStore(db).all(userID: account.id).map(\.type).sorted()
            return .secondFactorPending(token: pending.token, types: types)
        }
    }

    /// The factors a pre-login session waits for, or `nil` when it waits for none.
    public func pendingSecondFactor(_ caller: Caller) throws -> [String]? {
        guard case .preLogin(let session, _) = caller,
            let pending = try SessionFactorStore(database).pending(keyHash: session.keyHash)
        else { return nil }
        return try secondFactorTypes(userID: pending.userID)
    }

    /// Completes a sign-in that waits for its second factor: the try is charged to the account
    /// first; a right code (used at once, so never twice) ends the pre-login session and begins
    /// a signed-in one with a new token. A password changed or an account held since the password
    /// was checked leaves nobody signed in.
    public func completeSecondFactor(code: String, caller: Caller) throws -> SecondFactorOutcome {
        guard case .preLogin(let preLogin, _) = caller,
            let pending = try SessionFactorStore(database).pending(keyHash: preLogin.keyHash)
        else { return .noneWaiting }
        let now = clock.unixSeconds
        let factor: String
        switch try useSecondFactor(code, userID: pending.userID, now: now) {
        case .used(let used): factor = used
        case .refused(let outcome): return outcome
        }
        var signedIn = try makeSession(kind: preLogin.kind, userID: pending.userID, now: now)
        signedIn.session.authenticatedAt = pending.authenticatedAt
        let at = clock.now().timeIntervalSince1970
        let outcome: SecondFactorOutcome = try database.transaction { db in
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
        let limiter = RateLimiter(database, policy: settings.rateLimits)
        if let retryAfter = try chargeSecondFactorTry(userID: userID, session: session, now: now) {
            return .refused(.tooManyAttempts(retryAfter: retryAfter))
        }
        guard let key = secondFactors?.key else { return .refused(.incorrect) }
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
    private func chargeSecondFactorTry(userID: Int64, session: String?, now: Int64) throws -> Int64? {
        do {
            try database.transaction {
                try RateLimiter($0, policy: settings.rateLimits).chargeSecondFactor(
                    account: userID, session: session, now: now)
            }
            return nil
        } catch let refusal as RateLimiter.Refusal {
            return refusal.retryAfter
        }
    }

    // MARK: Confirmation

    /// What confirming the password came to.
    public enum ReauthenticationOutcome: Sendable {
        /// Confirmed: the session may change its second factors for five minutes.
        case confirmed
        /// Not the account's password.
        case incorrect
        /// The session's tries are spent for now.
        case rateLimited(retryAfter: Int64)
    }

    /// Confirms the password of a signed-in session (`auth/reauthenticate`), charged to the
    /// session's failure budget before the check.
    public func reauthenticate(password: String, session: Session, account: Account) throws
        -> ReauthenticationOutcome
    {
        let now = clock.unixSeconds
        do {
            try database.transaction {
                try RateLimiter($0, policy: settings.rateLimits).chargeReauthentication(
                    session: session.keyHash, now: now)
            }
        } catch let refusal as RateLimiter.Refusal {
            return .rateLimited(retryAfter: refusal.retryAfter)
        }
        guard password.utf8.count <= Credentials.maximumPasswordLength,
            hasher.verify(password, against: account.passwordHash).matches
        else { return .incorrect }
        try database.transaction { db in
            try RateLimiter(db, policy: settings.rateLimits).refundPasswordChangeFailure(
                session: session.keyHash, now: now)
            try SessionFactorStore(db).recordReauthentication(
                keyHash: session.keyHash, by: "password", at: clock.now().timeIntervalSince1970)
        }
        return .confirmed
    }

    /// Confirms the second factor of a signed-in session (`auth/2fa/reauthenticate`).
    public func reauthenticateSecondFactor(code: String, session: Session, account: Account) throws
        -> SecondFactorOutcome
    {
        guard try AuthenticatorStore(database).hasTOTP(userID: account.id) else { return .incorrect }
        switch try useSecondFactor(code, userID: account.id, confirming: session.keyHash, now: clock.unixSeconds) {
        case .refused(let outcome): return outcome
        case .used:
            try SessionFactorStore(database).recordReauthentication(
                keyHash: session.keyHash, by: "mfa", at: clock.now().timeIntervalSince1970)
            return .signedIn(token: nil, account: account, session: session)
        }
    }

    /// Whether the session confirmed the password or a second factor in the last five minutes.
    public func recentlyReauthenticated(_ session: Session) throws -> Bool {
        guard let at = try SessionFactorStore(database).record(keyHash: session.keyHash).reauthenticatedAt else {
            return false
        }
        return clock.now().timeIntervalSince1970 - at < Self.reauthenticationWindow
    }

    /// The ways a session authenticated, as allauth lists them: the password, the second factor
    /// it signed in with, its last confirmation.
    public func authenticationMethods(_ session: Session, account: Account) throws -> [AuthMethod] {
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
            methods.append(AuthMethod(method: "mfa", at: at, email: nil, type: factor))
        }
        if let method = record.reauthenticatedBy, let at = record.reauthenticatedAt {
            methods.append(
                AuthMethod(
                    method: method, at: at, email: nil, type: method == "mfa" ? Authenticator.totp : nil,
                    reauthenticated: true))
        }
        return methods
    }

    // MARK: Managing second factors

    /// The account's second factors, as `account/authenticators` lists them.
    public func authenticators(userID: Int64) throws -> [AuthenticatorInfo] {
        let store = AuthenticatorStore(database)
        return try store.all(userID: userID).map { try info($0, userID: userID, store: store) }
    }

    private func info(_ authenticator: Authenticator, userID: Int64, store: AuthenticatorStore) throws
        -> AuthenticatorInfo
    {
        var info = AuthenticatorInfo(
            type: authenticator.type, createdAt: authenticator.createdAt, lastUsedAt: authenticator.lastUsedAt)
        if authenticator.type == Authenticator.recoveryCodes {
            let counts = try store.recoveryCodeCounts(userID: userID)
            info.totalCodeCount = counts.total
            info.unusedCodeCount = counts.unused.count
        }
        return info
    }

    /// `GET account/authenticators/totp`.
    public enum TOTPState: Sendable {
        /// TOTP is on.
        case active(AuthenticatorInfo)
        /// TOTP is off: a new secret, kept (sealed) for this session to activate with a code.
        case offered(secret: String, url: String)
        /// No secrets key: this server offers no second factor.
        case unavailable
    }

    /// TOTP's state, or a new secret to set it up with (each call offers a new one, as allauth;
    /// with `keepingOffer`, the one offered to this session before, if any: the web door's form
    /// shown again after a wrong code).
    public func totpState(session: Session, account: Account, keepingOffer: Bool = false) throws -> TOTPState {
        guard let settings = secondFactors else { return .unavailable }
        let store = AuthenticatorStore(database)
        if let totp = try store.find(userID: account.id, type: Authenticator.totp) {
            return .active(try info(totp, userID: account.id, store: store))
        }
        if keepingOffer, let sealed = try SessionFactorStore(database).record(keyHash: session.keyHash).totpSetup,
            let secret = settings.key.unseal(sealed, context: "totp-setup:" + session.keyHash)
        {
            return .offered(
                secret: secret, url: Self.totpURL(secret: secret, email: account.email, issuer: settings.issuer))
        }
        let secret = Base32.encode(try random.bytes(20))
        try SessionFactorStore(database).offerTOTP(
            keyHash: session.keyHash, sealed: try settings.key.seal(secret, context: "totp-setup:" + session.keyHash))
        return .offered(
            secret: secret, url: Self.totpURL(secret: secret, email: account.email, issuer: settings.issuer))
    }

    /// The `otpauth://` URL an authenticator app reads (allauth's shape: the address as the
    /// label, the issuer as a parameter).
    static func totpURL(secret: String, email: String, issuer: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let label = email.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        let issuerText = issuer.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        return "otpauth://totp/\(label)?secret=\(secret)&issuer=\(issuerText)"
    }

    /// What activating TOTP came to.
    public enum TOTPActivation: Sendable {
        /// On, with the account's recovery codes made if it had none.
        case activated(AuthenticatorInfo)
        /// Not the code of the secret offered (or none was offered, or TOTP is on already).
        case incorrect
        /// The account's tries are spent for now.
        case rateLimited(retryAfter: Int64)
        /// The code was right, but the session must confirm the password first.
        case reauthenticationRequired
        /// No secrets key.
        case unavailable
    }

    /// Activates TOTP with a code of the secret last offered to this session. As allauth, the code
    /// is checked (and charged) before the confirmation is asked for; its step counts as used.
    public func activateTOTP(code: String, session: Session, account: Account) throws -> TOTPActivation {
        guard let settings = secondFactors else { return .unavailable }
        let now = clock.unixSeconds
        // The session's own budget: a session without the password never spends the owner's
        // sign-in.
        if let retryAfter = try chargeSecondFactorTry(userID: account.id, session: session.keyHash, now: now) {
            return .rateLimited(retryAfter: retryAfter)
        }
        let store = AuthenticatorStore(database)
        guard try !store.hasTOTP(userID: account.id),
            let sealed = try SessionFactorStore(database).record(keyHash: session.keyHash).totpSetup,
            let secretText = settings.key.unseal(sealed, context: "totp-setup:" + session.keyHash),
            let secret = Base32.decode(secretText),
            let step = OneTimeCode.matchingSteps(
                code.trimmingCharacters(in: .whitespaces), secret: secret, around: OneTimeCode.step(at: now)
            ).first
        else { return .incorrect }
        try RateLimiter(database, policy: self.settings.rateLimits).clearSecondFactor(
            account: account.id, session: session.keyHash)
        guard try recentlyReauthenticated(session) else { return .reauthenticationRequired }
        let at = clock.now().timeIntervalSince1970
        let codes = try makeRecoveryCodes()
        let activated: Bool = try database.transaction { db in
            let store = AuthenticatorStore(db)
            guard
                try store.insertTOTP(
                    userID: account.id, sealed: try settings.key.seal(secretText, context: "totp:\(account.id)"),
                    step: step, at: at)
            else { return false }
            if try store.find(userID: account.id, type: Authenticator.recoveryCodes) == nil {
                try storeRecoveryCodes(codes, userID: account.id, db, at: at)
            }
            try SessionFactorStore(db).offerTOTP(keyHash: session.keyHash, sealed: nil)
            return true
        }
        guard activated, let totp = try store.find(userID: account.id, type: Authenticator.totp) else {
            return .incorrect
        }
        logger.notice("two-factor sign-in turned on")
        return .activated(try info(totp, userID: account.id, store: store))
    }

    /// What changing a second factor came to, when it needs a confirmation.
    public enum FactorChange<Value: Sendable>: Sendable {
        case done(Value)
        case reauthenticationRequired
        /// Nothing to show or change (allauth's 404, or 400 for recovery codes without TOTP).
        case none
    }

    /// Turns TOTP off, and with it the recovery codes (they would recover nothing).
    public func deactivateTOTP(session: Session, account: Account) throws -> FactorChange<Void> {
        guard try recentlyReauthenticated(session) else { return .reauthenticationRequired }
        try database.transaction { try AuthenticatorStore($0).deleteAll(userID: account.id) }
        logger.notice("two-factor sign-in turned off")
        return .done(())
    }

    /// The operator's way back in for someone who lost both the phone and the recovery codes
    /// (`users reset-2fa`): the account's second factors go, and with them every session (and
    /// every sign-in waiting for a second factor). False if no such account.
    public func resetSecondFactors(email rawEmail: String) throws -> Bool {
        guard let email = Credentials.normalizedEmail(rawEmail) else { return false }
        let done: Bool = try database.transaction { db in
            guard let account = try AccountStore(db).find(email: email) else { return false }
            try AuthenticatorStore(db).deleteAll(userID: account.id)
            try SessionEnding(db).endAll(userID: account.id)
            return true
        }
        if done { logger.notice("two-factor sign-in reset by the operator") }
        return done
    }

    /// The recovery codes: their list the first time they are asked for after being made, their
    /// counts afterwards (django-allauth's `MFA_RECOVERY_CODES_SHOW_ONCE`).
    public func recoveryCodes(session: Session, account: Account) throws -> FactorChange<AuthenticatorInfo> {
        let store = AuthenticatorStore(database)
        guard let recovery = try store.find(userID: account.id, type: Authenticator.recoveryCodes) else {
            return .none
        }
        guard try recentlyReauthenticated(session) else { return .reauthenticationRequired }
        var described = try info(recovery, userID: account.id, store: store)
        if let sealed = recovery.sealed, let key = secondFactors?.key,
            let codes = key.unseal(sealed, context: "recovery-codes:\(account.id)"),
            try store.markRecoveryCodesShown(userID: account.id)
        {
            let unused = try store.recoveryCodeCounts(userID: account.id).unused
            described.unusedCodes = codes.split(separator: " ").map(String.init).filter {
                unused.contains(key.recoveryCodeHash($0, userID: account.id))
            }
        }
        return .done(described)
    }

    /// Makes new recovery codes (the old ones stop working) and shows them, this once.
    public func regenerateRecoveryCodes(session: Session, account: Account) throws -> FactorChange<AuthenticatorInfo> {
        guard try AuthenticatorStore(database).hasTOTP(userID: account.id) else { return .none }
        guard try recentlyReauthenticated(session) else { return .reauthenticationRequired }
        let codes = try makeRecoveryCodes()
        let at = clock.now().timeIntervalSince1970
        try database.transaction { db in
            try storeRecoveryCodes(codes, userID: account.id, db, at: at)
            _ = try AuthenticatorStore(db).markRecoveryCodesShown(userID: account.id)
        }
        var described = AuthenticatorInfo(
            type: Authenticator.recoveryCodes, createdAt: at, lastUsedAt: nil, totalCodeCount: codes.count,
            unusedCodeCount: codes.count)
        described.unusedCodes = codes
        logger.notice("recovery codes made")
        return .done(described)
    }

    /// Ten codes of eight digits, each uniform (random numbers past the last whole multiple of
    /// 10⁸ are drawn again).
    private func makeRecoveryCodes() throws -> [String] {
        var codes: [String] = []
        while codes.count < Self.recoveryCodeCount {
            let bytes = try random.bytes(4)
            let value = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            guard value < 4_200_000_000 else { continue }
            let text = String(value % 100_000_000)
            let code = String(repeating: "0", count: Self.recoveryCodeDigits - text.count) + text
            if !codes.contains(code) { codes.append(code) }
        }
        return codes
    }

    private func storeRecoveryCodes(_ codes: [String], userID: Int64, _ db: any SQLExecutor, at: Double) throws {
        guard let key = secondFactors?.key else { return }
        try AuthenticatorStore(db).replaceRecoveryCodes(
            userID: userID, hashes: codes.map { key.recoveryCodeHash($0, userID: userID) },
            sealed: try key.seal(codes.joined(separator: " "), context: "recovery-codes:\(userID)"), at: at)
    }
}
