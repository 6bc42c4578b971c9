import HomeportStorage
import HomeportWire

extension AccountService {
    /// What asking to delete an account came to.
    package enum AccountDeletionOutcome: Sendable, Equatable {
        /// Deleted, with everything that was the account's.
        case deleted
        /// Nothing changed (the password was wrong, or missing).
        case invalid([FieldProblem])
        /// Too many wrong passwords from this session; nothing changed.
        case rateLimited(retryAfter: Int64)
        /// The password changed, or the account went, while the request was checked.
        case sessionEnded
    }

    static let wrongPassword = FieldProblem(
        code: AuthErrorCode.incorrectPassword, param: "password", message: "Incorrect password.")

    /// Deletes the signed-in caller's account once its password is confirmed, charged to the
    /// same budgets as a password change (a stolen token cannot guess the password at will).
    package func deleteAccount(session: Session, account: Account, password: String) throws -> AccountDeletionOutcome {
        guard !password.isEmpty else {
            return .invalid([
                FieldProblem(code: AuthErrorCode.required, param: "password", message: "This field is required.")
            ])
        }
        switch try passwords.confirmPassword(password, session: session, account: account, now: clock.unixSeconds) {
        case .rateLimited(let retryAfter): return .rateLimited(retryAfter: retryAfter)
        case .wrong: return .invalid([Self.wrongPassword])
        case .confirmed: break
        }
        guard try delete(id: account.id, passwordHash: account.passwordHash) else { return .sessionEnded }
        logger.notice("account deleted by its owner", metadata: ["account": String(account.id)])
        return .deleted
    }

    /// Deletes the account that signs in with `email` (an operator's `users delete`); false when
    /// there is none.
    package func deleteAccount(email rawEmail: String) throws -> Bool {
        guard let email = Credentials.normalizedEmail(rawEmail),
            let account = try AccountStore(database).find(email: email)
        else { return false }
        return try delete(id: account.id, passwordHash: nil)
    }

    /// Deletes the account and everything that was its own, in one transaction: every session
    /// (app, web, pre-login ones waiting on its address) with a `NOTIFY` to every replica's
    /// session cache, reset keys, device registrations and the pushes queued for them, mutes,
    /// notifications, the product API's Idempotency-Keys that notified it, verifications, and
    /// mail queued to its address; the invitations it made are revoked. With `passwordHash`, only
    /// while the password is still that one. The address can sign up again afterwards.
    private func delete(id: Int64, passwordHash: String?) throws -> Bool {
        try database.transaction { db in
            let accounts = AccountStore(db)
            guard try accounts.lock(id: id), let account = try accounts.find(id: id),
                passwordHash.map({ $0 == account.passwordHash }) ?? true
            else { return false }
            let tokens = try PushDeviceStore(db).devices(userID: id).map(\.token)
            try PushOutbox(db).deletePending(deviceTokens: tokens)
            try MailQueue(db).remove(recipient: account.email)
            try SessionEnding(db).endAll(userID: id)
            try ResetKeyStore(db).deleteAll(userID: id)
            // The product API's Idempotency-Keys that notified it: a retry after the deletion
            // is a new request, never an answer with the deleted account's notification.
            try ProductKeyStore(db).forgetNotifications(userID: id)
            // The invitations it made stop working with it.
            try InvitationStore(db).revokeAll(createdBy: id, now: clock.unixSeconds)
            // The rest goes with the row (ON DELETE CASCADE): devices, mutes, notifications,
            // verifications.
            try accounts.delete(id: id)
            return true
        }
    }
}
