import HomeportLogging
import HomeportStorage

/// How the account services send mail: at once, or queued for the `MailSender` when the mailer
/// queues (SMTP), a failure recorded where the person can be told.
struct MailDelivery: Sendable {
    let mailer: any Mailer
    let database: any Database
    let clock: any WallClock
    let logger: Logger

    /// Sends a mail, or queues it for the `MailSender` when the mailer queues (SMTP). A failure
    /// is logged (without the address) and recorded, together with the standing `mail_failed` on
    /// the pre-login session `keyHash` when there is one; returns false.
    func callAsFunction(_ mail: Mail, standingOf keyHash: String?) -> Bool {
        do {
            if mailer.queues {
                // Sent by the MailSender: a failure then sets the standing.
                try MailQueue(database).enqueue(mail, standingKeyHash: keyHash, now: clock.unixSeconds)
            } else {
                try mailer.send(mail)
                ServerMetrics.add(ServerMetrics.mailSent)
            }
            return true
        } catch {
            logger.warning("mail not sent", metadata: ["kind": mail.kind, "error": String(describing: error)])
            ServerMetrics.add(ServerMetrics.mailFailed)
            let now = clock.unixSeconds
            _ = try? database.transaction { db in
                try MailFailureStore(db).record(kind: mail.kind, reason: String(describing: error), at: now)
                if let keyHash { try SessionStore(db).setStanding(.mailFailed, keyHash: keyHash) }
            }
            return false
        }
    }

    /// Sends a mail a stranger can cause that no budget of its kind counts (the "waiting for
    /// approval" mail of a sign-up) once its mailbox's day of mail (`mail-per-mailbox`, in
    /// `policy`) allows it. Past that budget the mail is left unsent and logged, which is no
    /// failure: returns false only when sending failed.
    func withinMailboxDay(_ mail: Mail, to email: String, policy: RateLimitPolicy, standingOf keyHash: String?)
        -> Bool
    {
        do {
            try database.transaction {
                try RateLimiter($0, policy: policy).chargeMailboxDay(email, now: clock.unixSeconds)
            }
        } catch is RateLimiter.Refusal {
            logger.notice("mail not sent: its mailbox's day of mail is spent", metadata: ["kind": mail.kind])
            return true
        } catch {
            // The budget could not be read: the mail goes, as it would without one.
            logger.warning("mail budget unavailable", metadata: ["error": String(describing: error)])
        }
        return self(mail, standingOf: keyHash)
    }
}
