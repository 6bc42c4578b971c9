import Foundation
import HomeportStorage
import HomeportWebAuthn
import HomeportWire

/// Signing up with a passkey and no password (`auth/webauthn/signup`), as django-allauth's
/// passkey sign-up: the account is made with no usable password, its address is verified by
/// code, then its pre-login session creates the passkey, which signs in. A person who never
/// finishes keeps a verified address and resets a password by mail.
extension PasskeyService {
    /// Whether sign-up with a passkey is offered: a relying party, and addresses verified by code.
    package var signupAvailable: Bool { relyingParty != nil && accounts.settings.emailVerification == .code }

    /// The account whose sign-up waits on the caller's pre-login session for its passkey.
    package func pendingSignup(_ caller: Caller) throws -> Account? {
        guard case .preLogin(let session, _) = caller, session.kind == .app,
            let userID = try PasskeySignupStore(accounts.database).pending(keyHash: session.keyHash, verified: true)
        else { return nil }
        return try AccountStore(accounts.database).find(id: userID)
    }

    /// `navigator.credentials.create` options for the passkey the caller's sign-up waits for (one
    /// that signs in alone); `nil` when none waits.
    package func signupOptions(_ caller: Caller) throws -> [String: Any]? {
        guard case .preLogin(let session, _) = caller, let account = try pendingSignup(caller) else { return nil }
        return try creationOptions(session: session, account: account, passwordless: true)
    }

    /// What finishing a sign-up with a passkey came to.
    package enum SignupCompletion: Sendable {
        /// The passkey is the account's, and the sign-up ends as a passkey's sign-in does.
        case done(AccountService.SignInOutcome)
        /// Not an answer to the sign-up's challenge (or none waits, or the credential is
        /// registered already): allauth's `incorrect_code`. The sign-up still waits.
        case incorrect
        /// No sign-up waits on the caller's session (another request finished it).
        case noneWaiting
    }

    private struct AlreadyRegistered: Error {}

    /// Finishes the caller's sign-up with the passkey `credential` (the browser's JSON) answers
    /// its challenge with, named `name`: the passkey and the account's recovery codes made, the
    /// sign-up ended, and a session as a passkey's sign-in makes one (the account's approval
    /// applies). Once: two answers at the same instant make one passkey.
    package func completeSignup(name rawName: String?, credential: Any, caller: Caller, address: String) throws
        -> SignupCompletion
    {
        guard let party = relyingParty, case .preLogin(let session, _) = caller,
            let account = try pendingSignup(caller)
        else { return .noneWaiting }
        // A passkey that signs in alone: the person verified.
        guard
            let (registration, _, _) = try register(
                credential, owner: Self.owner(session), purposes: ["register-passwordless"], account: account,
                party: party)
        else { return .incorrect }
        let now = accounts.clock.unixSeconds
        let passkey: Passkey?
        do {
            passkey = try accounts.database.transaction { db -> Passkey? in
                guard try PasskeySignupStore(db).finish(keyHash: session.keyHash) else { return nil }
                guard
                    let passkey = try PasskeyStore(db).insert(
                        userID: account.id, credentialID: IdentityProof.base64URL(registration.credentialID),
                        publicKey: IdentityProof.base64URL(registration.publicKey.encoded),
                        signCount: Int64(registration.signCount), name: Self.name(rawName, existing: 0),
                        passwordless: true, at: accounts.clock.now().timeIntervalSince1970)
                else { throw AlreadyRegistered() }
                return passkey
            }
        } catch is AlreadyRegistered {
            return .incorrect
        }
        guard let passkey else { return .noneWaiting }
        accounts.logger.notice(
            "passkey added",
            metadata: [
                "account": String(account.id), "passkey": String(passkey.id), "signup": "true",
                "algorithm": String(registration.publicKey.algorithm.rawValue),
            ])
        _ = try accounts.twoFactor.ensureRecoveryCodes(userID: account.id)
        let outcome = try self.session(
            for: account, address: address, kind: .app, current: caller, now: now, signup: true)
        // As a password's sign-up under approval: the person is told by mail that the account waits.
        if case .pending(.waiting, let token) = outcome {
            let mailed = accounts.deliver(AccountService.waitingMail(to: account.email), standingOf: session.keyHash)
            return .done(.pending(standing: mailed ? .waiting : .mailFailed, token: token))
        }
        return .done(outcome)
    }
}
