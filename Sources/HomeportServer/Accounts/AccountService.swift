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
