import Foundation
import HomeportLogging
import HomeportStorage

/// The sign-ups that wait for a decision (Waiting and Held), and what the `admin` group's
/// members decide from the app: the same stages and rules as the operator's `users approve`,
/// `hold` and `reject`, on accounts in the queue only (an admin's phone cannot hold an approved
/// account). Every admin is notified when a sign-up starts waiting.
package struct SignupQueue: Sendable {
    /// The code of the notification an admin gets for each newcomer.
    static let waitingCode = "homeport/core:signup.waiting"
    /// Its thread (per installation, as every thread): an admin can mute it.
    static let thread = "signups"

    let database: any Database
    let push: PushCenter
    let clock: any WallClock
    let logger: Logger
    /// Under verification by code: an address nobody proved is no newcomer yet (a bot's sign-up
    /// stays out of the queue and out of the admins' notifications).
    var verifiedOnly = false

    /// The most sign-ups the queue shows at once.
    static let limit = 500

    /// Waiting and held accounts, oldest first (with ``verifiedOnly``, those whose address is
    /// verified), at most ``limit``.
    func pending() throws -> [Account] {
        let verified = verifiedOnly ? " AND EXISTS (SELECT 1 FROM verified_emails v WHERE v.user_id = users.id)" : ""
        return try database.execute(
            """
            SELECT \(AccountStore.columns) FROM users WHERE approval IN ('waiting', 'held')\(verified)
            ORDER BY created_at, id LIMIT \(Self.limit)
            """
        ).compactMap { AccountStore.account($0) }
    }

    /// The decisions by name, as the app's paths and the web door's form say them.
    static let decisions: [String: Approval] = ["approve": .approved, "hold": .held, "reject": .rejected]

    /// What a decision came to.
    enum Outcome {
        /// Decided: the account as it is now.
        case decided(Account)
        /// No account in the queue has this id (none at all, or one approved or rejected).
        case notInQueue
    }

    /// Moves account `id` from the queue to `approval`, as `admin` decided. Ends its sessions
    /// unless approved (a held one has none; this is the operator's rule all the same).
    func decide(_ id: Int64, _ approval: Approval, by admin: Account) throws -> Outcome {
        let (outcome, changed): (Outcome, Bool) = try database.transaction { db in
            let queue: [Approval] = [.waiting, .held]
            guard let account = try AccountStore(db).find(id: id), queue.contains(account.approval) else {
                return (.notInQueue, false)
            }
            // Held again is held: nothing changes, nothing is logged.
            if account.approval == approval { return (.decided(account), false) }
            // Only from the queue, in the statement itself: of two admins deciding at once, the
            // second finds the first's decision (PostgreSQL reads the committed row) and is refused.
            guard try AccountStore(db).setApproval(approval, id: id, from: queue) else { return (.notInQueue, false) }
            if approval != .approved { try SessionEnding(db).endAll(userID: id) }
            var decided = account
            decided.approval = approval
            return (.decided(decided), true)
        }
        if changed {
            logger.notice(
                "approval changed",
                metadata: ["account": String(id), "stage": approval.rawValue, "by": "admin \(admin.id)"])
        }
        return outcome
    }

    /// Notifies every member of `admin` that the sign-up of `email` waits (once per newcomer:
    /// the services announce it where the sign-up starts waiting). A failure is logged; the
    /// sign-up does not depend on it.
    func announce(email: String) {
        let newcomer: Account
        let admins: [Int64]
        do {
            guard let found = try AccountStore(database).find(email: email), found.approval == .waiting else { return }
            newcomer = found
            admins = try AccountGroups(database).approvedMembers(of: AccountGroups.admin)
        } catch {
            logger.warning("admins not notified of a sign-up", metadata: ["reason": String(describing: error)])
            return
        }
        guard !admins.isEmpty else {
            logger.notice(
                "a sign-up waits and no admin is notified (users groups EMAIL add admin)",
                metadata: ["account": String(newcomer.id)])
            return
        }
        let body = "\(email) signed up and waits for you to approve, hold or reject."
        let notification = ProductNotification(
            code: Self.waitingCode, title: "Someone is waiting to join",
            body: DisplayText.isShown(body, newlines: false) ? body : nil, thread: Self.thread, objectID: newcomer.id)
        for admin in admins {
            // One admin that cannot be notified (deleted meanwhile) does not keep the others from it.
            do {
                _ = try push.notify(notification, to: admin)
            } catch {
                logger.warning(
                    "an admin not notified of a sign-up",
                    metadata: ["admin": String(admin), "reason": String(describing: error)])
            }
        }
    }
}
