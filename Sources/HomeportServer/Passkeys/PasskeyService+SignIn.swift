import Foundation
import HomeportCrypto
import HomeportStorage
import HomeportWebAuthn
import HomeportWire

/// Signing in with a passkey alone: the options with a challenge, then the browser's answer,
/// checked, counted and turned into a session as a password's sign-in is.
extension PasskeyService {
    /// Charges a sign-in's options, asked from `address`, to the address's `login-per-address`
    /// (each writes a challenge, and at the app door a pre-login session): the seconds to wait
    /// when it is spent, else `nil`. Charged before anything is written.
    package func chargeOptions(address: String) throws -> Int64? {
        let now = accounts.clock.unixSeconds
        do {
            try accounts.database.transaction {
                try RateLimiter($0, policy: accounts.settings.rateLimits).charge(
                    .loginPerAddress, RateLimiter.clientKey(address), now: now)
            }
            return nil
        } catch let refusal as RateLimiter.Refusal {
            return refusal.retryAfter
        }
    }

    /// `navigator.credentials.get` options for a sign-in whose challenge `owner` keeps (a
    /// pre-login session, or a browser's ceremony cookie); `nil` without a relying party. Charge
    /// them first (``chargeOptions(address:)``).
    ///
    /// With `userID`, the options of a second factor (`authenticate`) or a confirmation
    /// (`reauthenticate`) of that account, as allauth's: its passkeys allowed, user verification
    /// preferred.
    package func requestOptions(owner: String, purpose: String = "login", userID: Int64? = nil) throws
        -> [String: Any]?
    {
        guard let party = relyingParty else { return nil }
        let bytes = try accounts.random.bytes(32)
        let now = accounts.clock.unixSeconds
        let allowed = try userID.map { try PasskeyStore(accounts.database).all(userID: $0) } ?? []
        try accounts.database.transaction { db in
            let store = PasskeyStore(db)
            try store.sweep(now: now)
            try store.issue(
                .init(purpose: purpose, challenge: bytes, userID: userID), owner: owner,
                expiresAt: now + Self.challengeLifetime)
        }
        return [
            "publicKey": [
                "challenge": IdentityProof.base64URL(bytes), "rpId": party.id,
                "allowCredentials": allowed.map { ["type": "public-key", "id": $0.credentialID] },
                "userVerification": userID == nil ? "required" : "preferred",
            ] as [String: Any]
        ]
    }

    /// The app door's owner of a sign-in's challenge: the caller's pre-login session, or a new
    /// one living as long as the challenge (whose token is returned, for the app to send with its
    /// answer, as allauth's `meta.session_token`).
    package func appOwner(_ caller: Caller) throws -> (owner: String, token: String?) {
        if case .preLogin(let session, _) = caller, session.kind == .app { return (Self.owner(session), nil) }
        let now = accounts.clock.unixSeconds
        var new = try accounts.mint.make(kind: .app, userID: nil, now: now)
        new.session.expiresAt = min(new.session.expiresAt, now + Self.challengeLifetime)
        try accounts.database.transaction { try SessionStore($0).insertPreLogin(new.session, now: now) }
        return (Self.owner(new.session), new.token)
    }

    /// Signs in with `credential` (the browser's JSON answer to the challenge `owner` keeps),
    /// from `address`: the attempt charged to the address's sign-in budgets first (a failure
    /// given back when it signs in), the challenge used once whatever the answer, the passkey's
    /// counter moved once, then the account's address verification and approval as at a
    /// password sign-in. Every refusal of the credential is one answer (allauth's
    /// `incorrect_code`); a cloned authenticator is logged.
    package func signIn(
        credential: Any, owner: String, address: String, kind: SessionKind, current: Caller
    ) throws -> AccountService.SignInOutcome {
        let now = accounts.clock.unixSeconds
        do {
            try accounts.database.transaction {
                try RateLimiter($0, policy: accounts.settings.rateLimits).chargeAddressAttempt(
                    address: address, now: now)
            }
        } catch let refusal as RateLimiter.Refusal {
            return refusal.failedLogins
                ? .tooManyFailedLogins(retryAfter: refusal.retryAfter) : .rateLimited(retryAfter: refusal.retryAfter)
        }
        // The account as it stands before the passkey is used: a password change or reset that
        // lands after this read refuses the session below (its hash moved), and one before it
        // made the passkey a second factor, which the use refuses.
        var before: Account?
        guard
            let passkey = try check(
                credential: credential, owner: owner, purpose: "login", userID: nil, requireUserVerification: true,
                beforeUse: { before = try AccountStore(accounts.database).find(id: $0.userID) }),
            // A key added as a second factor only (not discoverable, or its person not verified
            // when it was added) never signs in alone, whatever a later answer says.
            passkey.passwordless
        else { return .invalid([Self.incorrect]) }
        guard let account = before, account.id == passkey.userID else { return .invalid([Self.incorrect]) }
        // The credential is right: the failure charged before the check comes back.
        try accounts.database.transaction {
            try RateLimiter($0, policy: accounts.settings.rateLimits).refund(
                .failedLoginPerAddress, RateLimiter.clientKey(address), now: now)
        }
        return try session(for: account, address: address, kind: kind, current: current, now: now)
    }

    /// A passkey's sign-in as a session: the address verified first when the server asks for
    /// it, and a session only for an approved account (the standing otherwise). A passkey that
    /// verified its person is two factors in one: no second factor is asked.
    func session(
        for account: Account, address: String, kind: SessionKind, current: Caller, now: Int64, signup: Bool = false
    ) throws -> AccountService.SignInOutcome {
        if accounts.settings.emailVerification == .code,
            try !EmailVerificationStore(accounts.database).isVerified(userID: account.id)
        {
            return try accounts.signInAwaitingVerification(
                account: account, address: address, email: account.email, kind: kind, current: current, now: now,
                refund: false)
        }
        let newSession = try accounts.mint.make(kind: kind, userID: account.id, now: now)
        let outcome: AccountService.SignInOutcome = try accounts.database.transaction { db in
            if try SessionStore(db).insertSignedIn(newSession.session, now: now, passwordHash: account.passwordHash) {
                // Like allauth, a sign-up records no authentication method.
                if !signup {
                    try SessionFactorStore(db).recordFactor(
                        keyHash: newSession.session.keyHash, factor: "webauthn",
                        at: accounts.clock.now().timeIntervalSince1970)
                }
                if let old = current.session, old.kind == kind { try SessionEnding(db).end(keyHash: old.keyHash) }
                try ResetKeyStore(db).deleteAll(userID: account.id)
                return .signedIn(token: newSession.token, account: account, session: newSession.session)
            }
            // No session: the account is not (or no longer) approved; deleted, or its password
            // changed since it was read, nobody signs in.
            guard let latest = try AccountStore(db).find(id: account.id), latest.passwordHash == account.passwordHash
            else { return .invalid([Self.incorrect]) }
            return try accounts.notApproved(latest, newSession, current: current, kind: kind, db, now)
        }
        if case .signedIn = outcome {
            accounts.logger.notice("signed in", metadata: ["account": String(account.id), "method": "passkey"])
        }
        return outcome
    }

    /// Checks `credential` (the browser's JSON) against the challenge `owner` keeps for
    /// `purpose` (taken once, whatever comes of it): a passkey of `userID` (or, without one, of
    /// the account its user handle names), the relying party's checks, and its counter moved
    /// once. The passkey it used, or `nil` for every refusal (a cloned authenticator logged).
    /// `beforeUse` runs with the passkey once every check passed, before its counter moves.
    func check(
        credential: Any, owner: String, purpose: String, userID: Int64?, requireUserVerification: Bool,
        beforeUse: (Passkey) throws -> Void = { _ in }
    ) throws -> Passkey? {
        let now = accounts.clock.unixSeconds
        guard let party = relyingParty,
            let waiting = try accounts.database.transaction({
                try PasskeyStore($0).take(owner: owner, purposes: [purpose], now: now)
            }), waiting.userID == userID,
            let answer = try? AuthenticationCredential(json: credential)
        else { return nil }
        // The user handle is the account the authenticator holds the passkey for: when it is
        // sent it must be the credential's owner; a sign-in with the passkey alone needs it
        // (WebAuthn §7.2, step 6), a second factor's owner is known already.
        guard let passkey = try PasskeyStore(accounts.database).find(credentialID: IdentityProof.base64URL(answer.id)),
            userID.map({ $0 == passkey.userID }) ?? true,
            answer.userHandle.map({ $0 == Array(String(passkey.userID).utf8) }) ?? (userID != nil),
            let key = IdentityProof.readBase64URL(passkey.publicKey).flatMap({ try? COSEKey(encoded: $0) })
        else { return nil }
        let assertion: RelyingParty.Assertion
        do {
            assertion = try party.verifyAssertion(
                clientDataJSON: answer.clientDataJSON, authenticatorData: answer.authenticatorData,
                signature: answer.signature, challenge: waiting.challenge, publicKey: key,
                storedSignCount: UInt32(clamping: passkey.signCount),
                requireUserVerification: requireUserVerification)
        } catch let refusal as WebAuthnError {
            let cloned: Bool = if case .counterWentBack = refusal { true } else { false }
            accounts.logger.notice(
                cloned ? "passkey refused: its counter went back, a cloned authenticator?" : "passkey refused",
                metadata: [
                    "account": String(passkey.userID), "passkey": String(passkey.id), "reason": refusal.description,
                ])
            return nil
        }
        try beforeUse(passkey)
        guard
            try accounts.database.transaction({
                try PasskeyStore($0).use(
                    id: passkey.id, stored: passkey.signCount, presented: Int64(assertion.signCount),
                    at: accounts.clock.now().timeIntervalSince1970, alone: userID == nil)
            })
        else {
            accounts.logger.notice(
                "passkey refused: another sign-in moved its counter first",
                metadata: ["account": String(passkey.userID), "passkey": String(passkey.id)])
            return nil
        }
        return passkey
    }

    /// allauth's answer to any credential that does not sign in.
    static let incorrect = FieldProblem(
        code: AuthErrorCode.incorrectCode, param: "credential", message: "Incorrect code.")
}
