import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import HomeportWire

// Sign-up: an account made, signed in at once, waiting for approval or for its address's code.
extension AccountService {
    /// Thrown inside a sign-up's transaction when its invitation cannot be spent: nothing stays.
    fileprivate struct InvitationRefused: Error {}

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
        let mailed = deliver.withinMailboxDay(
            Self.waitingMail(to: email), to: email, policy: settings.rateLimits,
            standingOf: token == nil ? nil : newSession.session.keyHash)
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
}
