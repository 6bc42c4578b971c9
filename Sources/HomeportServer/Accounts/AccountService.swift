import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import HomeportWire

/// Sign-up, sign-in, sign-out, password change and reset: the rules both doors (the app JSON
/// API and the web forms) share. Each door only translates requests and answers.
public final class AccountService: Sendable {
    /// The settings in force.
    public let settings: AccountSettings
    /// Accounts.
    public let accounts: AccountStore
    /// Sessions.
    public let sessions: SessionStore
    /// Rate limits.
    public let limiter: RateLimiter
    let hasher: PasswordHasher
    let mailer: any Mailer
    let clock: any WallClock
    let random: any RandomSource
    let database: any Database
    let logger: Logger

    /// Creates the service.
    public init(
        database: any Database, settings: AccountSettings, mailer: any Mailer, clock: any WallClock = SystemWallClock(),
        random: any RandomSource = SystemRandom(), logger: Logger
    ) {
        self.settings = settings
        self.database = database
        self.accounts = AccountStore(database: database)
        self.sessions = SessionStore(database: database, random: random, lifetime: settings.sessionLifetime)
        self.limiter = RateLimiter(database: database, policy: settings.rateLimits)
        self.hasher = PasswordHasher(iterations: settings.passwordIterations, random: random)
        self.mailer = mailer
        self.clock = clock
        self.random = random
        self.logger = logger.withLabel("homeport.accounts")
    }

    /// What a sign-up or sign-in attempt came to.
    public enum SignInOutcome: Sendable {
        /// Signed in: a new session and its token.
        case signedIn(token: String, account: Account, session: Session)
        /// Not signed in, and the pre-login session says why (`waiting`, `held`, `mail_failed`).
        case pending(token: String, standing: Standing)
        /// The request is wrong; nothing changed.
        case invalid([FieldProblem])
        /// Too many attempts; nothing changed.
        case rateLimited(retryAfter: Int64)
        /// Sign-up is closed on this installation.
        case signupClosed
    }

    // MARK: Sign-up and sign-in

    /// Creates an account. It signs in at once under open sign-up; under approval it waits and
    /// the answer is a pre-login session whose standing says so.
    public func signup(email rawEmail: String, password: String, address: String, kind: SessionKind) throws
        -> SignInOutcome
    {
        let now = clock.unixSeconds
        guard settings.signup != .closed else { return .signupClosed }
        do {
            try limiter.chargeSignup(address: address, now: now)
        } catch let refusal as RateLimiter.Refusal {
            return .rateLimited(retryAfter: refusal.retryAfter)
        }
        var problems: [FieldProblem] = []
        let email = Credentials.normalizedEmail(rawEmail)
        if email == nil {
            problems.append(FieldProblem(code: "invalid", param: "email", message: "Enter a valid email address."))
        }
        if let problem = Credentials.passwordProblem(password, param: "password") { problems.append(problem) }
        guard let email, problems.isEmpty else { return .invalid(problems) }

        let approval: Approval = settings.signup == .open ? .approved : .waiting
        guard
            let account = try accounts.create(
                email: email, passwordHash: try hasher.hash(password), approval: approval, at: now)
        else {
            return .invalid([
                FieldProblem(
                    code: "email_taken", param: "email",
                    message: "A user is already registered with this email address.")
            ])
        }
        logger.notice("account created", metadata: ["account": String(account.id), "approval": approval.rawValue])
        if approval == .approved {
            // Like allauth, a sign-up records no authentication method (no password login happened).
            return try signIn(account, kind: kind, now: now, byPassword: false)
        }
        let mailed = deliver(
            Mail(
                to: email, subject: "Your account is waiting for approval",
                body: "Thank you for signing up. An administrator will approve your account; you can sign in then.",
                kind: "signup_waiting"))
        let standing: Standing = mailed ? .waiting : .mailFailed
        return .pending(token: try preLoginToken(kind: kind, standing: standing, now: now), standing: standing)
    }

    /// Signs in with an address and password. Wrong credentials and unknown addresses answer
    /// alike (and take the same time); only the right password learns the account's standing.
    public func login(
        email rawEmail: String, password: String, address: String, kind: SessionKind, preLogin: Session?
    ) throws -> SignInOutcome {
        let now = clock.unixSeconds
        guard let email = Credentials.normalizedEmail(rawEmail) else {
            return .invalid([FieldProblem(code: "invalid", param: "email", message: "Enter a valid email address.")])
        }
        do {
            try limiter.chargeLoginAttempt(address: address, email: email, now: now)
        } catch let refusal as RateLimiter.Refusal {
            return .rateLimited(retryAfter: refusal.retryAfter)
        }
        let account = try accounts.find(email: email)
        let matches: Bool
        if let account {
            matches = hasher.verify(password, against: account.passwordHash)
        } else {
            // Spend what a real check costs, at the cost stored hashes really have.
            try equalizeTiming(password)
            matches = false
        }
        guard let account, matches else {
            // The failure was charged before the check.
            return .invalid([
                FieldProblem(
                    code: "email_password_mismatch", param: "password",
                    message: "The email address and/or password you specified are not correct.")
            ])
        }
        try limiter.refundLoginFailure(address: address, email: email, now: now)
        switch account.approval {
        case .approved:
            try? sessions.pruneExpired(now: now)
            try? limiter.pruneExpired(now: now)
            return try signIn(account, kind: kind, now: now)
        case .waiting, .rejected, .held:
            let standing: Standing = account.approval == .held ? .held : .waiting
            if let preLogin, preLogin.userID == nil {
                try sessions.setStanding(standing, keyHash: preLogin.keyHash)
                return .pending(token: "", standing: standing)
            }
            return .pending(token: try preLoginToken(kind: kind, standing: standing, now: now), standing: standing)
        }
    }

    /// A pre-login session carrying `standing`, for the app door (which hands its token to the
    /// app for `auth/standing`); the web door shows the standing at once and keeps no row.
    private func preLoginToken(kind: SessionKind, standing: Standing, now: Int64) throws -> String {
        guard kind == .app else { return "" }
        return try sessions.create(kind: kind, userID: nil, standing: standing, now: now)?.token ?? ""
    }

    /// Signs in; after a password check, only if the password is still the one checked.
    private func signIn(_ account: Account, kind: SessionKind, now: Int64, byPassword: Bool = true) throws
        -> SignInOutcome
    {
        guard
            let created = try sessions.create(
                kind: kind, userID: account.id, authenticatedAt: byPassword ? clock.now().timeIntervalSince1970 : nil,
                now: now, passwordHash: account.passwordHash)
        else {
            // The password changed while it was being checked: this login does not count.
            return .invalid([
                FieldProblem(
                    code: "email_password_mismatch", param: "password",
                    message: "The email address and/or password you specified are not correct.")
            ])
        }
        return .signedIn(token: created.token, account: account, session: created.session)
    }

    /// Runs one password check against a stored hash (any account's), or at the configured cost
    /// when there is none, so that an unknown address costs what a known one does.
    private func equalizeTiming(_ password: String) throws {
        if let stored = try database.execute("SELECT password_hash FROM users LIMIT 1").first?.string("password_hash") {
            _ = hasher.verify(password, against: stored)
        } else {
            hasher.verifyAgainstNothing(password)
        }
    }

    // MARK: Sessions

    /// The signed-in session and account `token` names at `kind`'s door, or `nil`.
    public func authenticate(token: String, kind: SessionKind) throws -> (session: Session, account: Account)? {
        guard let session = try sessions.find(token: token, kind: kind, now: clock.unixSeconds),
            let userID = session.userID, let account = try accounts.find(id: userID), account.approval == .approved
        else { return nil }
        return (session, account)
    }

    /// Whether `token` names a signed-in app session; the API prefix's one query per request.
    public func isSignedIn(appToken token: String) throws -> Bool {
        guard SecretToken.isWellFormed(token) else { return false }
        return
            !(try database.execute(
                """
                SELECT s.user_id FROM sessions s JOIN users u ON u.id = s.user_id
                WHERE s.key_hash = $1 AND s.kind = 'app' AND s.expires_at > $2 AND u.approval = 'approved'
                """, [.text(SecretToken.storedForm(of: token)), .integer(clock.unixSeconds)]
            ).isEmpty)
    }

    /// Signs out: deletes the session row, so its token stops working everywhere at once.
    public func logout(_ session: Session) throws {
        try sessions.delete(keyHash: session.keyHash)
    }

    /// What a pre-login (or any) app session earned on its last attempt to get in.
    /// A stranger's or malformed token gets `nil`, exactly like no token.
    public func standing(appToken token: String?) throws -> Standing? {
        guard let token, let session = try sessions.find(token: token, kind: .app, now: clock.unixSeconds) else {
            return nil
        }
        return session.standing
    }

    // MARK: Passwords

    /// What a password change came to.
    public enum PasswordChangeOutcome: Sendable {
        /// Changed: the old session is gone, and this new one (same door) replaces it.
        case changed(token: String, session: Session)
        /// Nothing changed.
        case invalid([FieldProblem])
        /// Too many wrong current passwords; nothing changed.
        case rateLimited(retryAfter: Int64)
    }

    /// Changes the password after checking the current one; ends every session of the account
    /// and hands the caller a new one.
    public func changePassword(
        session: Session, account: Account, current: String, new: String
    ) throws -> PasswordChangeOutcome {
        let now = clock.unixSeconds
        do {
            try limiter.chargePasswordChangeAttempt(account: account.id, now: now)
        } catch let refusal as RateLimiter.Refusal {
            return .rateLimited(retryAfter: refusal.retryAfter)
        }
        guard hasher.verify(current, against: account.passwordHash) else {
            return .invalid([
                FieldProblem(
                    code: "enter_current_password", param: "current_password",
                    message: "Please type your current password.")
            ])
        }
        try limiter.refundPasswordChangeFailure(account: account.id, now: now)
        if let problem = Credentials.passwordProblem(new, param: "new_password") { return .invalid([problem]) }
        try setPassword(account.id, new, now: now)
        try sessions.deleteAll(userID: account.id)
        try database.execute("DELETE FROM password_resets WHERE user_id = $1", [.integer(account.id)])
        guard
            let created = try sessions.create(
                kind: session.kind, userID: account.id, authenticatedAt: session.authenticatedAt, now: now)
        else { throw StorageError.statementFailed(code: "session", message: "the new session was not created") }
        logger.notice("password changed; other sessions ended", metadata: ["account": String(account.id)])
        return .changed(token: created.token, session: created.session)
    }

    /// What a reset request came to. The answer a client sees is the same whether or not an
    /// account has the address.
    public enum ResetRequestOutcome: Sendable, Equatable {
        /// Accepted (a mail was sent, or the address has no account).
        case accepted
        /// The address is not an address.
        case invalid([FieldProblem])
        /// Too many requests.
        case rateLimited(retryAfter: Int64)
    }

    /// Sends a single-use reset key to an account's address; an unknown address gets a mail
    /// saying there is no account, so both answers cost the same and look the same.
    public func requestPasswordReset(email rawEmail: String, address: String, preLogin: Session?) throws
        -> ResetRequestOutcome
    {
        guard let email = Credentials.normalizedEmail(rawEmail) else {
            return .invalid([FieldProblem(code: "invalid", param: "email", message: "Enter a valid email address.")])
        }
        let now = clock.unixSeconds
        do {
            try limiter.chargeResetRequest(address: address, email: email, now: now)
        } catch let refusal as RateLimiter.Refusal {
            return .rateLimited(retryAfter: refusal.retryAfter)
        }
        let mail: Mail
        if let account = try accounts.find(email: email) {
            let key = try SecretToken.generate(random)
            try database.execute(
                "INSERT INTO password_resets (key_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)",
                [
                    .text(SecretToken.storedForm(of: key)), .integer(account.id), .integer(now),
                    .integer(now + settings.resetKeyLifetime),
                ])
            let link = (settings.publicURL ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            mail = Mail(
                to: email, subject: "Reset your password",
                body: """
                    Someone asked to reset the password of this account. If it was you, open
                    \(link)/account/password/reset/key/\(key)
                    or give the app this key: \(key)
                    The key works once, for \(settings.resetKeyLifetime / 60) minutes. If it was not you, ignore this mail.
                    """,
                kind: "password_reset")
        } else {
            mail = Mail(
                to: email, subject: "Password reset",
                body: "Someone asked to reset a password for this address, but it has no account here.",
                kind: "unknown_account")
        }
        if !deliver(mail), let preLogin {
            try? sessions.setStanding(.mailFailed, keyHash: preLogin.keyHash)
        }
        return .accepted
    }

    /// The account a live reset key belongs to, without using the key up.
    public func account(forResetKey key: String) throws -> Account? {
        guard SecretToken.isWellFormed(key),
            let row = try database.execute(
                "SELECT user_id FROM password_resets WHERE key_hash = $1 AND expires_at > $2",
                [.text(SecretToken.storedForm(of: key)), .integer(clock.unixSeconds)]
            ).first, let userID = row.int("user_id")
        else { return nil }
        return try accounts.find(id: userID)
    }

    /// What a reset came to.
    public enum ResetOutcome: Sendable, Equatable {
        /// The password is set; every session of the account has ended.
        case reset(Account)
        /// The key is unknown, used or expired.
        case invalidKey
        /// The new password is not acceptable; the key still works.
        case invalid([FieldProblem])

        /// Equal when the same case (and account).
        public static func == (lhs: ResetOutcome, rhs: ResetOutcome) -> Bool {
            switch (lhs, rhs) {
            case (.reset(let a), .reset(let b)): a.id == b.id
            case (.invalidKey, .invalidKey): true
            case (.invalid(let a), .invalid(let b)): a == b
            default: false
            }
        }
    }

    /// Sets a new password with a reset key; the key is used up, and every session of the account ends.
    public func resetPassword(key: String, password: String) throws -> ResetOutcome {
        guard let account = try account(forResetKey: key) else { return .invalidKey }
        if let problem = Credentials.passwordProblem(password, param: "password") { return .invalid([problem]) }
        let claimed = try database.execute(
            "DELETE FROM password_resets WHERE key_hash = $1 RETURNING user_id",
            [.text(SecretToken.storedForm(of: key))])
        guard !claimed.isEmpty else { return .invalidKey }
        try database.execute("DELETE FROM password_resets WHERE user_id = $1", [.integer(account.id)])
        try setPassword(account.id, password, now: clock.unixSeconds)
        try sessions.deleteAll(userID: account.id)
        logger.notice("password reset; every session ended", metadata: ["account": String(account.id)])
        return .reset(account)
    }

    private func setPassword(_ userID: Int64, _ password: String, now: Int64) throws {
        try database.execute(
            "UPDATE users SET password_hash = $1, password_changed_at = $2 WHERE id = $3",
            [.text(try hasher.hash(password)), .integer(now), .integer(userID)])
    }

    // MARK: Operators

    /// Sets an account's approval stage; leaving `approved` ends its sessions. False if no such account.
    public func setApproval(_ approval: Approval, email rawEmail: String) throws -> Bool {
        guard let email = Credentials.normalizedEmail(rawEmail), let account = try accounts.find(email: email) else {
            return false
        }
        try accounts.setApproval(approval, email: email)
        if approval != .approved { try sessions.deleteAll(userID: account.id) }
        return true
    }

    // MARK: Mail

    /// Sends a mail; a failure is logged (without the address) and recorded, and returns false.
    private func deliver(_ mail: Mail) -> Bool {
        do {
            try mailer.send(mail)
            return true
        } catch {
            logger.warning("mail not sent", metadata: ["kind": mail.kind, "error": String(describing: error)])
            _ = try? database.execute(
                "INSERT INTO mail_failures (kind, reason, created_at) VALUES ($1, $2, $3)",
                [
                    .text(mail.kind), .text(String(describing: error).prefix(500).description),
                    .integer(clock.unixSeconds),
                ])
            return false
        }
    }
}
