import Foundation
import HomeportCrypto
import HomeportStorage
import HomeportWire

/// Signing in with an identity provider's ID token (allauth's `auth/provider/token`), the
/// sign-up such a sign-in may wait on, and the provider accounts linked to an account.
///
/// Who the person is: the account linked to the provider's (issuer, `sub`). A first sign-in
/// links to the account with the provider's address only when the operator allowed it for the
/// provider (`--link-verified-email`) and the provider says the address is verified; otherwise it
/// is a sign-up, under the server's sign-up mode, approval and verification like a password's.
struct ProviderSignIn: Sendable {
    /// The account rules a provider's sign-in follows as a password's does: verification,
    /// approval, a second factor, the pre-login sessions that wait on them.
    let accounts: AccountService
    let settings: AccountSettings
    let database: any Database
    let clock: any WallClock
    let random: any RandomSource
    let logger: Logger
    let mint: SessionMint
    let emailVerification: EmailVerificationService
    let deliver: MailDelivery
    /// The identity providers the operator configured (`oidc add`), and what they publish.
    let directory: ProviderDirectory

    init(accounts: AccountService) {
        self.accounts = accounts
        settings = accounts.settings
        database = accounts.database
        clock = accounts.clock
        random = accounts.random
        logger = accounts.logger
        mint = accounts.mint
        emailVerification = accounts.emailVerification
        deliver = accounts.deliver
        directory = accounts.identityProviders
    }

    /// What a provider sign-in, connection or sign-up came to.
    enum Outcome: Sendable {
        /// What a password sign-in could come to as well (a session, a standing, a second
        /// factor or verification to pass, a budget spent, sign-up closed).
        case signIn(AccountService.SignInOutcome)
        /// The token is not one this server accepts from that provider (or the provider is not
        /// configured, or cannot be reached); nothing changed.
        case invalidToken
        /// The person is new and the provider gave no address, or one an account has: `token`
        /// names a pre-login session that waits for an address (`auth/provider/signup`).
        case signupPending(token: String, provider: OIDCProvider)
        /// The provider account is linked to the caller's account (now, or already).
        case connected
        /// The provider account is linked to another account.
        case connectedOther
        /// No provider sign-up waits on the caller's session.
        case noPendingSignup
        /// The address chosen for a provider sign-up has an account.
        case emailTaken(provider: OIDCProvider)
        /// The address chosen for a provider sign-up is not one.
        case invalid([FieldProblem])
    }

    /// The providers an app can sign in with, by name.
    func providers() throws -> [OIDCProvider] {
        try directory.providers().sorted { ($0.name, $0.id) < ($1.name, $1.id) }
    }

    /// Signs in with `idToken`, which the app obtained from provider `providerID` as client
    /// `clientID`. The attempt costs a sign-in from `address`, and a failed one (a token refused,
    /// or spent before) a failed sign-in, charged before the token is checked so that concurrent
    /// attempts cannot overshoot the budget.
    func login(
        providerID: String, clientID: String, idToken: String, address: String, kind: SessionKind, current: Caller
    ) throws -> Outcome {
        let now = clock.unixSeconds
        let checked: (provider: OIDCProvider, identity: ProviderIdentity)
        switch try checkedToken(
            providerID: providerID, clientID: clientID, idToken: idToken, address: address, now: now)
        {
        case .refused(let outcome): return outcome
        case .accepted(let provider, let identity): checked = (provider, identity)
        }
        return try resolveRetrying(checked.provider, checked.identity, address: address, kind: kind, current: current)
    }

    /// ``resolve(_:_:address:kind:current:)``, once more when it lost a race: two first
    /// sign-ins of one person at once, where one links or creates and the other finds its work.
    func resolveRetrying(
        _ provider: OIDCProvider, _ identity: ProviderIdentity, address: String, kind: SessionKind, current: Caller
    ) throws -> Outcome {
        for _ in 0..<2 {
            do {
                return try resolve(provider, identity, address: address, kind: kind, current: current)
            } catch is LinkConflict {
                continue
            }
        }
        return .invalidToken
    }

    /// Links the provider account in `idToken` to the caller's account (`process: connect`).
    func connect(
        providerID: String, clientID: String, idToken: String, address: String, account: Account
    ) throws -> Outcome {
        let now = clock.unixSeconds
        let identity: ProviderIdentity
        let provider: OIDCProvider
        switch try checkedToken(
            providerID: providerID, clientID: clientID, idToken: idToken, address: address, now: now)
        {
        case .refused(let outcome): return outcome
        case .accepted(let found, let person): (provider, identity) = (found, person)
        }
        return try connect(provider, identity, account: account, now: now)
    }

    /// Links the person to `account`: connected (now, or already), or linked to someone else.
    func connect(_ provider: OIDCProvider, _ identity: ProviderIdentity, account: Account, now: Int64) throws
        -> Outcome
    {
        return try database.transaction { db in
            // Connected to an account whose address nobody proved, it is no proof either.
            let link = ProviderLink(
                issuer: identity.issuer, subject: identity.subject, providerID: provider.id, userID: account.id,
                email: identity.email, createdAt: now,
                addressProven: try EmailVerificationStore(db).isVerified(userID: account.id))
            let links = ProviderLinkStore(db)
            if try links.link(link) {
                logger.notice("provider connected", metadata: ["provider": provider.id])
                return .connected
            }
            return try links.find(issuer: link.issuer, subject: link.subject)?.userID == account.id
                ? .connected : .connectedOther
        }
    }

    /// The provider that a provider sign-up waits on at the caller's session, and who the
    /// provider says the person is.
    func pendingSignup(_ caller: Caller) throws -> (provider: OIDCProvider, identity: ProviderIdentity)? {
        guard case .preLogin(let session, _) = caller,
            let pending = try ProviderSignupStore(database).pending(keyHash: session.keyHash),
            let provider = try directory.provider(id: pending.providerID),
            provider.issuer == pending.identity.issuer
        else { return nil }
        return (provider, pending.identity)
    }

    /// Completes the provider sign-up waiting on the caller's session with `email`.
    func signup(email rawEmail: String, address: String, kind: SessionKind, current: Caller) throws
        -> Outcome
    {
        guard case .preLogin(let session, _) = current, let (provider, identity) = try pendingSignup(current)
        else { return .noPendingSignup }
        guard settings.signup != .closed else { return .signIn(.signupClosed) }
        guard let email = Credentials.normalizedEmail(rawEmail) else { return .invalid([AccountService.invalidEmail]) }
        // Charged before the address is looked up: an answer of `email_taken` tells whether an
        // address has an account, and costs a sign-up as a password sign-up does.
        if let refused = try chargeSignup(address: address) { return refused }
        guard try AccountStore(database).find(email: email) == nil else { return .emailTaken(provider: provider) }
        do {
            return try signUp(
                provider, identity, email: email, address: address, kind: kind, current: current,
                pendingSignup: session.keyHash, charged: true)
        } catch is LinkConflict {
            // The person was linked, or the address taken, meanwhile.
            return try ProviderLinkStore(database).find(issuer: identity.issuer, subject: identity.subject) == nil
                ? .emailTaken(provider: provider) : .connectedOther
        }
    }

    /// The provider accounts linked to an account, oldest first.
    func links(_ account: Account) throws -> [ProviderLink] {
        try ProviderLinkStore(database).all(userID: account.id)
    }

    /// Why a provider account could not be unlinked.
    enum UnlinkRefusal: Error, Sendable {
        /// The account has no such link.
        case notFound
        /// It is the last way into an account without a password.
        case noPassword
        /// The account's address is unverified, and verification is required.
        case noVerifiedEmail
    }

    /// Unlinks the provider account `subject` of provider `providerID` from `account`, unless it
    /// is the account's last way in (as allauth's `validate_disconnect`); returns the links left.
    func unlink(providerID: String, subject: String, account: Account) throws -> Result<
        [ProviderLink], UnlinkRefusal
    > {
        try database.transaction { db in
            // One unlink of an account at a time: two at once must not both find the other link.
            _ = try AccountStore(db).lock(id: account.id)
            let links = ProviderLinkStore(db)
            let all = try links.all(userID: account.id)
            guard let link = all.first(where: { $0.providerID == providerID && $0.subject == subject }) else {
                return .failure(.notFound)
            }
            guard let latest = try AccountStore(db).find(id: account.id) else { return .failure(.notFound) }
            if !latest.hasUsablePassword && all.count == 1 { return .failure(.noPassword) }
            if settings.emailVerification == .code, try !EmailVerificationStore(db).isVerified(userID: account.id) {
                return .failure(.noVerifiedEmail)
            }
            _ = try links.unlink(userID: account.id, issuer: link.issuer, subject: link.subject)
            return .success(try links.all(userID: account.id))
        }
    }

    // MARK: Steps

    /// A sign-up or link that lost a race to another: the transaction rolls back and the
    /// sign-in is resolved again.
    struct LinkConflict: Error {}

    enum CheckedToken {
        case refused(Outcome)
        case accepted(OIDCProvider, ProviderIdentity)
    }

    /// The provider and the person in a token it signed for one of its clients here, spent so
    /// that it signs in once; charged as a sign-in (and a failure, given back when it is right).
    func checkedToken(providerID: String, clientID: String, idToken: String, address: String, now: Int64)
        throws -> CheckedToken
    {
        try checkedToken(providerID: providerID, clientID: clientID, address: address, now: now) { provider in
            try directory.identity(in: idToken, from: provider)
        }
    }

    /// As ``checkedToken(providerID:clientID:idToken:address:now:)``, with the identity that
    /// `obtain` reads for the provider (an ID token handed over, or one fetched with a code).
    func checkedToken(
        providerID: String, clientID: String, address: String, now: Int64,
        obtain: (OIDCProvider) throws -> ProviderIdentity
    ) throws -> CheckedToken {
        let client = RateLimiter.clientKey(address)
        do {
            try database.transaction {
                try RateLimiter($0, policy: settings.rateLimits).chargeAddressAttempt(address: address, now: now)
            }
        } catch let refusal as RateLimiter.Refusal {
            return .refused(
                .signIn(
                    refusal.failedLogins
                        ? .tooManyFailedLogins(retryAfter: refusal.retryAfter)
                        : .rateLimited(retryAfter: refusal.retryAfter)))
        }
        guard let provider = try directory.provider(id: providerID), provider.audiences.contains(clientID)
        else {
            logger.notice("provider token refused", metadata: ["reason": "no such provider or client"])
            return .refused(.invalidToken)
        }
        let identity: ProviderIdentity
        do {
            identity = try obtain(provider)
        } catch {
            // The reason, never the token.
            let reason = (error as? ProviderError)?.description ?? String(describing: error)
            logger.notice("provider token refused", metadata: ["provider": provider.id, "reason": reason])
            return .refused(.invalidToken)
        }
        let fresh = try database.transaction { db in
            try ProviderSignupStore(db).spend(tokenID: identity.tokenID, expiresAt: identity.expiresAt, now: now)
        }
        guard fresh else {
            logger.notice("provider token refused", metadata: ["provider": provider.id, "reason": "used before"])
            return .refused(.invalidToken)
        }
        try database.transaction {
            try RateLimiter($0, policy: settings.rateLimits).refund(.failedLoginPerAddress, client, now: now)
        }
        return .accepted(provider, identity)
    }

    /// The account a checked identity signs in to, linked or found by a verified address (when
    /// allowed), or a sign-up.
    func resolve(
        _ provider: OIDCProvider, _ identity: ProviderIdentity, address: String, kind: SessionKind, current: Caller
    ) throws -> Outcome {
        let now = clock.unixSeconds
        let store = AccountStore(database)
        if let link = try ProviderLinkStore(database).find(issuer: identity.issuer, subject: identity.subject) {
            guard let account = try store.find(id: link.userID) else { throw LinkConflict() }
            return try signIn(account, provider, identity, address: address, kind: kind, current: current)
        }
        let email = identity.email.flatMap(Credentials.normalizedEmail)
        if let email, let account = try store.find(email: email) {
            // The account may be this person's own, made by their other sign-in a moment ago: an
            // account and its link land in one transaction, so the link is there to read now.
            if try ProviderLinkStore(database).find(issuer: identity.issuer, subject: identity.subject) != nil {
                throw LinkConflict()
            }
            // Both sides must have verified the address: an account someone made with another's
            // address, and never proved, is not theirs to inherit.
            guard provider.linkVerifiedEmail && identity.emailVerified,
                try EmailVerificationStore(database).isVerified(userID: account.id)
            else {
                return try pendSignup(provider, identity, kind: kind, current: current, now: now)
            }
            let linked = try ProviderLinkStore(database).link(
                ProviderLink(
                    issuer: identity.issuer, subject: identity.subject, providerID: provider.id, userID: account.id,
                    email: identity.email, createdAt: now))
            guard linked else { throw LinkConflict() }
            logger.notice("provider linked by verified address", metadata: ["provider": provider.id])
            return try signIn(account, provider, identity, address: address, kind: kind, current: current)
        }
        guard settings.signup != .closed else { return .signIn(.signupClosed) }
        guard let email else { return try pendSignup(provider, identity, kind: kind, current: current, now: now) }
        return try signUp(provider, identity, email: email, address: address, kind: kind, current: current)
    }

    /// A new person whose address is missing or taken: a pre-login session waits for one.
    private func pendSignup(
        _ provider: OIDCProvider, _ identity: ProviderIdentity, kind: SessionKind, current: Caller, now: Int64
    ) throws -> Outcome {
        guard settings.signup != .closed else { return .signIn(.signupClosed) }
        var pending = try mint.make(kind: kind, userID: nil, now: now)
        pending.session.expiresAt = min(pending.session.expiresAt, now + AccountService.secondFactorWindow)
        try database.transaction { db in
            try SessionStore(db).insertPreLogin(pending.session, now: now)
            try ProviderSignupStore(db).insert(
                keyHash: pending.session.keyHash, .init(providerID: provider.id, identity: identity))
            if let old = current.session, old.kind == kind { try SessionEnding(db).end(keyHash: old.keyHash) }
        }
        return .signupPending(token: pending.token, provider: provider)
    }

    /// Creates an account for a new person (under the sign-up mode, its budget and verification,
    /// as a password sign-up), linked to the provider account, with no usable password.
    private func signUp(
        _ provider: OIDCProvider, _ identity: ProviderIdentity, email: String, address: String, kind: SessionKind,
        current: Caller, pendingSignup: String? = nil, charged: Bool = false
    ) throws -> Outcome {
        let now = clock.unixSeconds
        if !charged, let refused = try chargeSignup(address: address) { return refused }
        let approval: Approval = settings.signup == .open ? .approved : .waiting
        // Django's unusable password: no password signs in to it until a reset sets one.
        let passwordHash = "!" + (try SecretToken.generate(random))
        let verified = identity.emailVerified && identity.email.flatMap(Credentials.normalizedEmail) == email
        let verification =
            settings.emailVerification == .code && !verified
            ? try emailVerification.makeVerification(kind: kind, now: now) : nil
        let authenticatedAt = clock.now().timeIntervalSince1970
        let newSession = try mint.make(kind: kind, userID: nil, authenticatedAt: authenticatedAt, now: now)
        let login = SessionFactorStore.ProviderLogin(providerID: provider.id, subject: identity.subject)
        let outcome: AccountService.SignInOutcome = try database.transaction { db in
            guard
                let account = try AccountStore(db).create(
                    email: email, passwordHash: passwordHash, approval: approval, at: now),
                try ProviderLinkStore(db).link(
                    ProviderLink(
                        issuer: identity.issuer, subject: identity.subject, providerID: provider.id,
                        userID: account.id, email: identity.email, createdAt: now, addressProven: verified))
            else { throw LinkConflict() }
            if verified { try EmailVerificationStore(db).markVerified(userID: account.id, now: now) }
            if let pendingSignup { try SessionEnding(db).end(keyHash: pendingSignup) }
            if let old = current.session, old.kind == kind, old.keyHash != pendingSignup {
                try SessionEnding(db).end(keyHash: old.keyHash)
            }
            if let verification {
                try emailVerification.beginVerification(
                    verification, account: account, authenticatedAt: nil, db, now: now)
                // The code that verifies the address on this session proves the link too.
                try SessionFactorStore(db).recordProvider(keyHash: verification.preLogin.session.keyHash, login)
                return .verificationPending(token: verification.preLogin.token)
            }
            if approval == .approved {
                var session = newSession.session
                session.userID = account.id
                guard try SessionStore(db).insertSignedIn(session, now: now, passwordHash: passwordHash) else {
                    throw StorageError.statementFailed(code: "session", message: "the new session was not created")
                }
                try SessionFactorStore(db).recordProvider(keyHash: session.keyHash, login)
                return .signedIn(token: newSession.token, account: account, session: session)
            }
            var preLogin = newSession
            preLogin.session.authenticatedAt = nil
            return .pending(
                standing: .waiting, token: try accounts.insertPreLogin(preLogin, standing: .waiting, db, now))
        }
        logger.notice(
            "account created", metadata: ["approval": approval.rawValue, "provider": provider.id])
        switch outcome {
        case .verificationPending:
            if let verification { emailVerification.mailVerification(verification, to: email) }
        case .pending(_, let token):
            accounts.newcomers.announce(email: email)
            let mailed = deliver.withinMailboxDay(
                AccountService.waitingMail(to: email), to: email, policy: settings.rateLimits,
                standingOf: token == nil ? nil : newSession.session.keyHash)
            return .signIn(.pending(standing: mailed ? .waiting : .mailFailed, token: token))
        default: break
        }
        return .signIn(outcome)
    }

    /// Charges a sign-up to the client's address; the refusal, when its budget is spent.
    private func chargeSignup(address: String) throws -> Outcome? {
        do {
            try database.transaction {
                try RateLimiter($0, policy: settings.rateLimits).charge(
                    .signupPerAddress, RateLimiter.clientKey(address), now: clock.unixSeconds)
            }
            return nil
        } catch let refusal as RateLimiter.Refusal {
            return .signIn(.rateLimited(retryAfter: refusal.retryAfter))
        }
    }

    /// Signs a linked person in to their account: its verification, approval and second factor
    /// apply as at a password sign-in.
    private func signIn(
        _ account: Account, _ provider: OIDCProvider, _ identity: ProviderIdentity, address: String,
        kind: SessionKind, current: Caller
    ) throws -> Outcome {
        let now = clock.unixSeconds
        let login = SessionFactorStore.ProviderLogin(providerID: provider.id, subject: identity.subject)
        if settings.emailVerification == .code, try !EmailVerificationStore(database).isVerified(userID: account.id) {
            // The provider vouches for the account's own address: that is the verification.
            if identity.emailVerified, identity.email.flatMap(Credentials.normalizedEmail) == account.email {
                try database.transaction { try EmailVerificationStore($0).markVerified(userID: account.id, now: now) }
            } else {
                return .signIn(
                    try accounts.signInAwaitingVerification(
                        account: account, address: address, email: account.email, kind: kind, current: current,
                        now: now, refund: false, provider: login))
            }
        }
        if account.approval == .approved, try accounts.hasSecondFactor(userID: account.id) {
            return .signIn(
                try accounts.beginSecondFactor(
                    account: account, upgraded: nil, address: address, email: account.email, kind: kind,
                    current: current, now: now, provider: login))
        }
        let newSession = try mint.make(
            kind: kind, userID: account.id, authenticatedAt: clock.now().timeIntervalSince1970, now: now)
        let outcome: AccountService.SignInOutcome = try database.transaction { db in
            let sessions = SessionStore(db)
            if try sessions.insertSignedIn(newSession.session, now: now, passwordHash: account.passwordHash) {
                try SessionFactorStore(db).recordProvider(keyHash: newSession.session.keyHash, login)
                if let old = current.session, old.kind == kind { try SessionEnding(db).end(keyHash: old.keyHash) }
                try ResetKeyStore(db).deleteAll(userID: account.id)
                return .signedIn(token: newSession.token, account: account, session: newSession.session)
            }
            // No session: the account is not (or no longer) approved, or its password changed
            // since it was read (then the next try reads it again).
            guard let latest = try AccountStore(db).find(id: account.id), latest.passwordHash == account.passwordHash
            else { throw LinkConflict() }
            return try accounts.notApproved(latest, newSession, current: current, kind: kind, db, now)
        }
        if case .signedIn = outcome { logger.notice("signed in", metadata: ["provider": provider.id]) }
        return .signIn(outcome)
    }
}
