import Foundation
import HomeportLifecycle
import HomeportLogging
import HomeportStorage

/// Sends the queued mail through the relay, once a second, from a queue of its own: a slow or
/// silent relay never holds an HTTP request. A mail the relay refuses for good (a 5xx, a bad
/// address), or that fails ``maximumAttempts`` times, is given up: recorded for operators, and the
/// standing of the pre-login session that asked for it becomes `mail_failed`, exactly as when
/// mail is sent at once. Nothing about it reaches the person beyond that.
struct MailSender: Sendable {
    let database: any Database
    let mailer: any Mailer
    let clock: any WallClock
    let logger: Logger
    /// Attempts before a mail that keeps failing for a passing reason is given up.
    static let maximumAttempts = 5

    init(database: any Database, mailer: any Mailer, clock: any WallClock, logger: Logger) {
        self.database = database
        self.mailer = mailer
        self.clock = clock
        self.logger = logger.withLabel("homeport.mail")
    }

    /// The service that sends, once a second; stopped, it lets a mail being sent finish first.
    func service() -> RepeatingTask {
        RepeatingTask(
            "homeport.mail", after: .milliseconds(100), every: .seconds(1),
            failed: { [logger] in logger.warning("mail queue not read", metadata: ["error": String(describing: $0)]) }
        ) { try sendDue() }
    }

    /// Sends every mail that is due now.
    func sendDue() throws {
        // A claim outlives one delivery's timeout: a sender that died mid-send frees its mail soon.
        let claim = Int64(((mailer as? SMTPMailer)?.settings.timeoutSeconds ?? 30) + 10)
        while let queued = try MailQueue(database).claimNext(now: clock.unixSeconds, for: claim) {
            do {
                try mailer.send(queued.mail)
                try MailQueue(database).remove(queued.id)
                ServerMetrics.add(ServerMetrics.mailSent)
                logger.info("mail sent", metadata: ["kind": queued.mail.kind])
            } catch {
                let permanent = (error as? SMTPFailure)?.permanent ?? false
                let attempts = queued.attempts + 1
                if permanent || attempts >= Self.maximumAttempts {
                    try giveUp(queued, reason: String(describing: error))
                } else {
                    let delay = Int64(min(600, 10 << min(attempts, 6)))
                    try MailQueue(database).retry(queued.id, attempts: attempts, at: clock.unixSeconds + delay)
                    logger.warning(
                        "mail not sent yet; trying again",
                        metadata: ["kind": queued.mail.kind, "error": String(describing: error), "in": "\(delay)s"])
                }
            }
        }
    }

    private func giveUp(_ queued: QueuedMail, reason: String) throws {
        logger.warning("mail not sent", metadata: ["kind": queued.mail.kind, "error": reason])
        ServerMetrics.add(ServerMetrics.mailFailed)
        let now = clock.unixSeconds
        try database.transaction { db in
            try MailFailureStore(db).record(kind: queued.mail.kind, reason: reason, at: now)
            if let keyHash = queued.standingKeyHash { try SessionStore(db).setStanding(.mailFailed, keyHash: keyHash) }
            try MailQueue(db).remove(queued.id)
        }
    }
}
