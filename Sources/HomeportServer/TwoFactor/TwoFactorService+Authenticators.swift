import Foundation
import HomeportCrypto
import HomeportStorage
import HomeportWire

/// The account's second factors: listed, TOTP turned on and off, recovery codes shown once and
/// made again (`account/authenticators` and the web door's two-factor page).
extension TwoFactorService {
    /// The account's second factors, as `account/authenticators` lists them.
    package func authenticators(userID: Int64) throws -> [AuthenticatorInfo] {
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
    package enum TOTPState: Sendable {
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
    package func totpState(session: Session, account: Account, keepingOffer: Bool = false) throws -> TOTPState {
        guard let settings else { return .unavailable }
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
    package enum TOTPActivation: Sendable {
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
    package func activateTOTP(code: String, session: Session, account: Account) throws -> TOTPActivation {
        guard let settings else { return .unavailable }
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
        try RateLimiter(database, policy: rateLimits).clearSecondFactor(
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
    package enum FactorChange<Value: Sendable>: Sendable {
        case done(Value)
        case reauthenticationRequired
        /// Nothing to show or change (allauth's 404, or 400 for recovery codes without TOTP).
        case none
    }

    /// Turns TOTP off, and with it the recovery codes when no passkey is left for them to
    /// stand in for.
    package func deactivateTOTP(session: Session, account: Account) throws -> FactorChange<Void> {
        guard try recentlyReauthenticated(session) else { return .reauthenticationRequired }
        try database.transaction { db in
            try AuthenticatorStore(db).deleteTOTP(userID: account.id)
            try SecondFactors(db: db).removeRecoveryCodesLeftAlone(userID: account.id)
        }
        logger.notice("two-factor sign-in turned off")
        return .done(())
    }

    /// Makes the account's recovery codes when it has none (its first passkey, as allauth's
    /// `auto_generate_recovery_codes`), to be shown once; false when it has some, or the server
    /// keeps no secrets key to seal them with.
    func ensureRecoveryCodes(userID: Int64) throws -> Bool {
        guard settings != nil else { return false }
        let codes = try makeRecoveryCodes()
        let at = clock.now().timeIntervalSince1970
        let made: Bool = try database.transaction { db in
            guard try AuthenticatorStore(db).find(userID: userID, type: Authenticator.recoveryCodes) == nil else {
                return false
            }
            try storeRecoveryCodes(codes, userID: userID, db, at: at)
            return true
        }
        if made { logger.notice("recovery codes made", metadata: ["account": String(userID)]) }
        return made
    }

    /// The operator's way back in for someone who lost both the phone and the recovery codes
    /// (`users reset-2fa`): the account's second factors go, and with them every session (and
    /// every sign-in waiting for a second factor). False if no such account.
    package func resetSecondFactors(email rawEmail: String) throws -> Bool {
        guard let email = Credentials.normalizedEmail(rawEmail) else { return false }
        let done: Bool = try database.transaction { db in
            guard let account = try AccountStore(db).find(email: email) else { return false }
            try AuthenticatorStore(db).deleteAll(userID: account.id)
            // A lost device's passkeys go with its codes.
            try PasskeyStore(db).removeAll(userID: account.id)
            try SessionEnding(db).endAll(userID: account.id)
            return true
        }
        if done { logger.notice("two-factor sign-in reset by the operator") }
        return done
    }

    /// The recovery codes: their list the first time they are asked for after being made, their
    /// counts afterwards (django-allauth's `MFA_RECOVERY_CODES_SHOW_ONCE`).
    package func recoveryCodes(session: Session, account: Account) throws -> FactorChange<AuthenticatorInfo> {
        let store = AuthenticatorStore(database)
        guard let recovery = try store.find(userID: account.id, type: Authenticator.recoveryCodes) else {
            return .none
        }
        guard try recentlyReauthenticated(session) else { return .reauthenticationRequired }
        var described = try info(recovery, userID: account.id, store: store)
        if let sealed = recovery.sealed, let key = settings?.key,
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
    package func regenerateRecoveryCodes(session: Session, account: Account) throws -> FactorChange<AuthenticatorInfo> {
        // Without a secrets key no code could be kept: none is shown that would not work.
        guard settings != nil, try SecondFactors(db: database).any(userID: account.id) else { return .none }
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
        guard let key = settings?.key else { return }
        try AuthenticatorStore(db).replaceRecoveryCodes(
            userID: userID, hashes: codes.map { key.recoveryCodeHash($0, userID: userID) },
            sealed: try key.seal(codes.joined(separator: " "), context: "recovery-codes:\(userID)"), at: at)
    }
}
