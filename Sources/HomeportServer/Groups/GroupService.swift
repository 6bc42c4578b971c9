import HomeportLogging
import HomeportStorage

/// Putting accounts in groups and taking them out: the operator's `users groups`. A change is
/// seen by every reader of the caller (products, forward auth, the app): at once in this
/// process and, on PostgreSQL, on every replica (as a session's end is); elsewhere within the
/// session cache's window (another process on one SQLite file).
package struct GroupService {
    let database: any Database
    let clock: any WallClock
    let logger: Logger

    /// A service over `database`, logging each change.
    package init(database: any Database, clock: any WallClock, logger: Logger) {
        self.database = database
        self.clock = clock
        self.logger = logger
    }

    /// What a change of groups came to.
    package enum Outcome: Equatable {
        /// The account's groups now, and whether they changed.
        case groups([String], changed: Bool)
        /// No account uses the address.
        case noAccount
        /// The name cannot be a group's.
        case invalidName
        /// The account holds ``AccountGroups/maximumPerAccount`` groups already.
        case tooMany
    }

    /// What changing a group does.
    package enum Change {
        case add, remove
    }

    /// The groups of the account signing in with `email`, after `change` of `group` when given.
    package func groups(email: String, _ change: (Change, String)? = nil) throws -> Outcome {
        guard let email = Credentials.normalizedEmail(email) else { return .noAccount }
        var name: String?
        if let change {
            guard let valid = AccountGroups.name(change.1) else { return .invalidName }
            name = valid
        }
        let now = clock.unixSeconds
        let outcome: Outcome = try database.transaction { db in
            guard let account = try AccountStore(db).find(email: email) else { return .noAccount }
            let groups = AccountGroups(db)
            var changed = false
            if let change, let name {
                switch change.0 {
                case .add:
                    let held = try groups.groups(userID: account.id)
                    guard held.contains(name) || held.count < AccountGroups.maximumPerAccount else { return .tooMany }
                    changed = try groups.add(name, userID: account.id, now: now)
                case .remove:
                    changed = try groups.remove(name, userID: account.id)
                }
                // Sessions read groups with their account: cached ones are read again, here at
                // once and on PostgreSQL on every replica.
                if changed { try SessionStore(db).announceEnded() }
            }
            if changed, let change {
                logger.notice(
                    change.0 == .add ? "group added" : "group removed",
                    metadata: ["account": String(account.id), "group": name ?? "", "by": "operator"])
            }
            return .groups(try groups.groups(userID: account.id), changed: changed)
        }
        return outcome
    }
}
