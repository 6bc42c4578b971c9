import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import HomeportWire

/// Sign-up, sign-in and sign-out: the rules both doors (the app JSON API and the web forms)
/// share. Each door only translates requests and answers. Passwords, second factors, the
/// verification of addresses and the handoff to apps are services of their own it builds
/// (``passwords``, ``twoFactor``, ``emailVerification``, ``handoffs``), as django-allauth's
/// account, MFA and email apps sit side by side; identity providers' sign-in is a service over
/// its steps (`providerSignIn`, `providerRedirect`).
///
/// Every use case that writes more than one row does its slow work first (password hashing,
/// mail), then one `database.transaction`: a hash never holds the database's write lock, and a
/// security write (a new password and the end of the other sessions) lands whole or not at all.
package final class AccountService: Sendable {
    /// The settings in force.
    package let settings: AccountSettings
    let database: any Database
    let hasher: any PasswordHashing
    let mailer: any Mailer
    let clock: any WallClock
    let random: any RandomSource
    let logger: Logger
    /// How long password work takes here, learned from the checks.
    let hashTiming = HashTiming()
    /// The costliest hash held, which every check is padded to.
    let costliestHash: CostliestHash
    /// Second factors: offered when a ``SecretsKey`` is at hand (and a server refuses to start
    /// without one if any account has a second factor).
    package let twoFactor: TwoFactorService
    /// The identity providers the operator configured (`oidc add`), and what they publish.
    let identityProviders: ProviderDirectory
    /// Makes the sessions a sign-in begins.
    let mint: SessionMint
    /// Password changes, confirmations and resets.
    package let passwords: PasswordService
    /// Addresses verified by a mailed code.
    package let emailVerification: EmailVerificationService
    /// Browser sign-ins handed to apps.
    package let handoffs: HandoffService
    /// Sends (or queues) the account's mail.
    let deliver: MailDelivery
    /// Told of each sign-up that starts waiting for approval (the application notifies admins).
    let newcomers = NewcomerAnnouncer()

    /// Signing in with an identity provider's ID token, the sign-up it may wait on, and the
    /// provider accounts linked to an account: the steps above, reached through a provider.
    var providerSignIn: ProviderSignIn { ProviderSignIn(accounts: self) }

    /// Passkeys and security keys: added, named and removed, and a sign-in with one alone.
    package var passkeys: PasskeyService { PasskeyService(accounts: self) }

    /// Signing in through a provider's own pages (the web door's authorization code flow).
    var providerRedirect: ProviderRedirect { ProviderRedirect(signIn: providerSignIn) }

    /// Creates the service; `hasher` defaults to PBKDF2 at `settings.passwordIterations`. Who is
    /// calling is not its business: the one `SessionReader` (the application's) tells the doors.
    package init(
        database: any Database, settings: AccountSettings, mailer: any Mailer, clock: any WallClock = SystemWallClock(),
        random: any RandomSource = SystemRandom(), hasher: (any PasswordHashing)? = nil, logger: Logger,
        secondFactors: SecondFactorSettings? = nil
    ) {
        self.settings = settings
        self.database = database
        self.hasher = hasher ?? PasswordHasher(iterations: settings.passwordIterations, random: random)
        costliestHash = CostliestHash(timing: hashTiming)
        self.mailer = mailer
        self.clock = clock
        self.random = random
        self.logger = logger.withLabel("homeport.accounts")
        twoFactor = TwoFactorService(
            settings: secondFactors, database: database, rateLimits: settings.rateLimits, clock: clock, random: random,
            logger: self.logger)
        identityProviders = ProviderDirectory(database: database, clock: clock, caFile: settings.providerCAFile)
        mint = SessionMint(random: random, lifetime: settings.sessionLifetime)
        deliver = MailDelivery(mailer: mailer, database: database, clock: clock, logger: self.logger)
        passwords = PasswordService(
            settings: settings, database: database, hasher: self.hasher, clock: clock, random: random,
            logger: self.logger, mint: mint, deliver: deliver)
        emailVerification = EmailVerificationService(
            settings: settings, database: database, clock: clock, random: random, logger: self.logger, mint: mint,
            deliver: deliver, newcomers: newcomers)
        handoffs = HandoffService(
            database: database, rateLimits: settings.rateLimits, clock: clock, random: random, logger: self.logger,
            mint: mint)
    }

    /// What a sign-up or sign-in attempt came to.
    package enum SignInOutcome: Sendable {
        /// Signed in: a new session and its token.
        case signedIn(token: String, account: Account, session: Session)
        /// Not signed in, and the pre-login session says why (`waiting`, `held`, `mail_failed`).
        /// `token` is a new pre-login token, or `nil` when the caller's own pre-login session
        /// (or, at the web door, none) carries the standing.
        case pending(standing: Standing, token: String?)
        /// The request is wrong; nothing changed.
        case invalid([FieldProblem])
        /// Too many attempts; nothing changed.
        case rateLimited(retryAfter: Int64)
        /// Too many failed sign-ins from this address or on this account; nothing changed.
        case tooManyFailedLogins(retryAfter: Int64)
        /// Sign-up is closed on this installation.
        case signupClosed
        /// The address must be verified first: a code is mailed, and `token` names the new
        /// pre-login session it waits on (at the web door, its cookie).
        case verificationPending(token: String)
        /// The password was right and the account has a second factor: `token` names the new
        /// pre-login session that waits for a code (`auth/2fa/authenticate`); `types` are the
        /// factors it accepts.
        case secondFactorPending(token: String, types: [String])
    }

    static let mismatch = FieldProblem(
        code: AuthErrorCode.emailPasswordMismatch, param: "password",
        message: "The email address and/or password you specified are not correct.")

    static let emailTaken = FieldProblem(
        code: AuthErrorCode.emailTaken, param: "email", message: "A user is already registered with this email address."
    )

    static let invalidEmail = FieldProblem(
        code: AuthErrorCode.invalid, param: "email", message: "Enter a valid email address.")

    /// A wrong, used, expired or revoked invitation, or one for another address: one answer,
    /// which does not say which.
    static let invalidInvitation = FieldProblem(
        code: AuthErrorCode.invalidInvitation, param: "invitation", message: "This invitation cannot be used.")

    /// Thrown inside a sign-up's transaction when its invitation cannot be spent: nothing stays.
    private struct InvitationRefused: Error {}

    // MARK: Sign-up and sign-in

    /// Creates an account. It signs in at once under open sign-up; under approval it waits and
    /// the answer is a pre-login session whose standing says so. A session the caller already
    /// holds at this door ends: a sign-up never leaves an older session alive beside the new one.
    ///
    /// With an `invitation`'s code it signs up whatever the sign-up mode (`closed` too) and skips
    /// the approval queue, and the account joins the invitation's groups; the invitation's use is
    /// spent in the account's own transaction. A code that cannot be spent is one answer
    /// (``invalidInvitation``), after the sign-up's budget is charged.
    ///
    /// Without a `password`, a sign-up with a passkey (`auth/webauthn/signup`): the account has
    /// no usable password, and its pre-login session waits for the address's code, then for the
    /// passkey (``PasskeyService/completeSignup(name:credential:caller:address:)``). Only where
    /// addresses are verified by code: an account without a password has its mailbox alone to
    /// recover with, and nobody may plant a passkey on an address that is not theirs.
    package func signup(
        email rawEmail: String, password: String?, address: String, kind: SessionKind, current: Caller,
        invitation: String? = nil
    ) throws -> SignInOutcome {
        // Pasted codes come with spaces around them.
        let invitation = invitation.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.flatMap {
            $0.isEmpty ? nil : $0
        }
        guard settings.signup != .closed || invitation != nil else { return .signupClosed }
        guard password != nil || settings.emailVerification == .code else { return .signupClosed }
        let now = clock.unixSeconds
        let charge = { () throws -> SignInOutcome? in
            do {
                try self.database.transaction {
                    try RateLimiter($0, policy: self.settings.rateLimits).charge(
                        .signupPerAddress, RateLimiter.clientKey(address), now: now)
                }
                return nil
            } catch let refusal as RateLimiter.Refusal {
                return .rateLimited(retryAfter: refusal.retryAfter)
            }
        }
        if let invitation {
            // The code first, budget charged, before anything that depends on the address: a
            // made-up code learns nothing of who has an account here (a closed server answers a
            // stranger as before). The use is spent later, in the account's own transaction.
            if let refused = try charge() { return refused }
            guard InvitationService.isCode(invitation),
                try InvitationStore(database).isUsable(
                    codeHash: SecretToken.storedForm(of: invitation), email: Credentials.normalizedEmail(rawEmail),
                    now: now)
            else { return .invalid([Self.invalidInvitation]) }
        }
        let problems = try signupProblems(email: rawEmail, password: password)
        guard let email = Credentials.normalizedEmail(rawEmail), problems.isEmpty else { return .invalid(problems) }
        if invitation == nil, let refused = try charge() { return refused }
        // Django's unusable password for a passkey's account: no password signs in to it until a
        // reset sets one.
        let passwordHash = try password.map(hasher.hash) ?? "!" + (try SecretToken.generate(random))
        let approval: Approval = settings.signup == .open || invitation != nil ? .approved : .waiting
        let newSession = try mint.make(kind: kind, userID: nil, now: now)
        let verification =
            settings.emailVerification == .code ? try emailVerification.makeVerification(kind: kind, now: now) : nil
        // The outcome, and whether the address was taken (`nil` outcome: say so, unless a code
        // is due, which keeps the answer the same either way).
        let outcome: SignInOutcome?
        let taken: Bool
        do {
            (outcome, taken) = try database.transaction { db in
                let sessions = SessionStore(db)
                guard
                    let account = try AccountStore(db).create(
                        email: email, passwordHash: passwordHash, approval: approval, at: now)
                else {
                    // Under verification by code, as allauth: the same answer as a new account, a
                    // verification no code completes, and a mail to the address's owner instead.
                    guard var decoy = verification, let owner = try AccountStore(db).find(email: email) else {
                        return (nil, true)
                    }
                    decoy.code = nil
                    do {
                        try emailVerification.beginVerification(
                            decoy, account: owner, authenticatedAt: nil, db, now: now)
                    } catch let refusal as RateLimiter.Refusal {
                        return (.rateLimited(retryAfter: refusal.retryAfter), true)
                    }
                    if let old = current.session, old.kind == kind { try SessionEnding(db).end(keyHash: old.keyHash) }
                    return (.verificationPending(token: decoy.preLogin.token), true)
                }
                if let invitation {
                    guard
                        let claimed = try InvitationStore(db).claim(
                            codeHash: SecretToken.storedForm(of: invitation), email: email, now: now),
                        let groups = try InvitationStore(db).groupsToGive(claimed)
                    else { throw InvitationRefused() }
                    for group in groups { try AccountGroups(db).add(group, userID: account.id, now: now) }
                }
                if let old = current.session, old.kind == kind { try SessionEnding(db).end(keyHash: old.keyHash) }
                if let verification {
                    // A new account's own budgets are whole, but the mailbox's day may be spent (by
                    // resets asked for the address): then the sign-up is refused as a taken address's
                    // would be, and nothing is created (the refusal leaves the transaction). Its
                    // budget for sign-ups with a taken address is charged too, as such a sign-up
                    // charges it: sign-ups in a row are answered alike whether the address had an
                    // account or not.
                    try RateLimiter(db, policy: settings.rateLimits).chargeVerificationMail(
                        account: account.id, email: account.email, decoy: true, mailboxDay: false, now: now)
                    try emailVerification.beginVerification(
                        verification, account: account, authenticatedAt: nil, db, now: now)
                    if password == nil {
                        try PasskeySignupStore(db).insert(
                            keyHash: verification.preLogin.session.keyHash, userID: account.id)
                    }
                    return (.verificationPending(token: verification.preLogin.token), false)
                }
                if approval == .approved {
                    // Like allauth, a sign-up records no authentication method (no password login happened).
                    var session = newSession.session
                    session.userID = account.id
                    guard try sessions.insertSignedIn(session, now: now, passwordHash: passwordHash) else {
                        throw StorageError.statementFailed(code: "session", message: "the new session was not created")
                    }
                    return (.signedIn(token: newSession.token, account: account, session: session), false)
                }
                return (
                    .pending(standing: .waiting, token: try insertPreLogin(newSession, standing: .waiting, db, now)),
                    false
                )
            }
        } catch let refusal as RateLimiter.Refusal {
            return .rateLimited(retryAfter: refusal.retryAfter)
        } catch is InvitationRefused {
            logger.notice("sign-up refused", metadata: ["reason": "invitation"])
            return .invalid([Self.invalidInvitation])
        }
        guard let outcome else { return .invalid([Self.emailTaken]) }
        if let verification, case .verificationPending = outcome {
            if taken {
                _ = deliver(Self.accountExistsMail(to: email), standingOf: verification.preLogin.session.keyHash)
            } else {
                logger.notice(
                    "account created",
                    metadata: [
                        "approval": approval.rawValue, "invited": invitation == nil ? "false" : "true",
                        "passkey": password == nil ? "true" : "false",
                    ])
                emailVerification.mailVerification(verification, to: email)
            }
            return outcome
        }
        guard !taken else { return outcome }
        logger.notice(
            "account created",
            metadata: ["approval": approval.rawValue, "invited": invitation == nil ? "false" : "true"])
        guard case .pending(_, let token) = outcome else { return outcome }
        newcomers.announce(email: email)
        let mailed = deliver(Self.waitingMail(to: email), standingOf: token == nil ? nil : newSession.session.keyHash)
        return .pending(standing: mailed ? .waiting : .mailFailed, token: token)
    }

    /// What is wrong with a sign-up form, every field at once, as allauth's form says it: the
    /// address, the password, and (with verification off, where allauth says so too) an address
    /// that has an account, beside a password problem or, with `takenAlone`, on its own (the form
    /// of a caller signed in already, which is refused either way).
    package func signupProblems(email rawEmail: String, password: String?, takenAlone: Bool = false) throws
        -> [FieldProblem]
    {
        var problems: [FieldProblem] = []
        let email = Credentials.normalizedEmail(rawEmail)
        if email == nil { problems.append(Self.invalidEmail) }
        if let password, let problem = Credentials.passwordProblem(password, param: "password") {
            problems.append(problem)
        }
        // Without a password problem the insert itself finds a taken address (race-free); with
        // one, allauth names both.
        if let email, !problems.isEmpty || takenAlone, settings.emailVerification != .code,
            try AccountStore(database).find(email: email) != nil
        {
            problems.insert(Self.emailTaken, at: 0)
        }
        return problems
    }

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
            try? SessionStore(database).pruneExpired(now: now)
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
        refund: Bool = true
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
            if let old = current.session, old.kind == kind { try SessionEnding(db).end(keyHash: old.keyHash) }
            return .verificationPending(token: verification.preLogin.token)
        }
        if case .verificationPending = outcome { emailVerification.mailVerification(verification, to: account.email) }
        return outcome
    }

    /// The mail to an address's owner when someone signs up with it again (under verification by
    /// code, where the answer does not say that the address is taken).
    static func accountExistsMail(to email: String) -> Mail {
        Mail(
            to: email, subject: "You already have an account",
            body: """
                Someone, perhaps you, tried to create an account with this address, which already has one. \
                If it was you, sign in, or reset your password if you forgot it. If not, you can ignore this mail.
                """,
            kind: "account_exists")
    }

    /// The mail that tells a new account it waits for approval.
    static func waitingMail(to email: String) -> Mail {
        Mail(
            to: email, subject: "Your account is waiting for approval",
            body: "Thank you for signing up. An administrator will approve your account; you can sign in then.",
            kind: "signup_waiting")
    }

    /// Signs out: deletes the session row, so its token stops working everywhere at once.
    package func logout(_ session: Session) throws {
        try SessionEnding(database).end(keyHash: session.keyHash)
    }

    // MARK: Operators

    /// Every account, oldest first.
    package func accounts() throws -> [Account] {
        try AccountStore(database).all()
    }

    /// Sets an account's approval stage; leaving `approved` ends its sessions in the same
    /// transaction. False if no such account.
    package func setApproval(_ approval: Approval, email rawEmail: String) throws -> Bool {
        guard let email = Credentials.normalizedEmail(rawEmail) else { return false }
        return try database.transaction { db in
            guard let account = try AccountStore(db).find(email: email),
                try AccountStore(db).setApproval(approval, id: account.id)
            else { return false }
            if approval != .approved { try SessionEnding(db).endAll(userID: account.id) }
            return true
        }
    }

    // MARK: Pre-login sessions

    /// How long a pre-login session (one with nobody in it, kept only for its standing) lives.
    static let preLoginLifetime: Int64 = 86400

    /// Stores a pre-login session carrying `standing` and returns its token, for the app door
    /// (which hands the token to the app for `auth/standing`); the web door shows the standing
    /// at once and keeps no row (`nil`).
    func insertPreLogin(
        _ new: (token: String, session: Session), standing: Standing, _ db: any SQLExecutor, _ now: Int64
    ) throws -> String? {
        guard new.session.kind == .app else { return nil }
        var session = new.session
        session.userID = nil
        session.standing = standing
        session.expiresAt = min(session.expiresAt, now + Self.preLoginLifetime)
        try SessionStore(db).insertPreLogin(session, now: now)
        return new.token
    }

    /// The web door's base URL: `--public-url` (by default the listen address), or, when that is
    /// a wildcard address, the address the request came to (its `Host`, when it is a plain host
    /// and port).
    func publicBase(for request: HTTPRequest) -> String {
        if let url = settings.reachablePublicURL { return url.hasSuffix("/") ? String(url.dropLast()) : url }
        let host = request.headers.values("Host").first.flatMap { host in
            !host.isEmpty
                && host.utf8.allSatisfy { byte in
                    (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                        || [0x2D, 0x2E, 0x3A, 0x5B, 0x5D].contains(byte)
                } ? host : nil
        }
        return "http://" + (host ?? "127.0.0.1")
    }
}
