import Foundation
import HomeportStorage
import HomeportTestSupport
import Testing

@testable import HomeportServer

private let password = "correct horse battery"

/// Two requests interleaved on purpose: the first waits at a gate inside its password check
/// (``GatedHasher``) while the second runs to the end; then the first goes on.
@Suite("Requests racing each other", .tags(.postgres))
struct RaceTests {
    /// Runs `first` on another thread until it is held at the gate, runs `second`, opens the gate,
    /// and returns what `first` answered.
    private func interleave(
        _ hasher: GatedHasher, first: @escaping @Sendable () throws -> RawResponse, second: () throws -> Void
    ) throws -> RawResponse {
        hasher.arm()
        let answer = LockedValue<Result<RawResponse, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            answer.set(Result { try first() })
            done.signal()
        }
        #expect(hasher.waitUntilHeld(), "the first request reached its password check")
        try second()
        hasher.open()
        #expect(done.wait(timeout: .now() + 30) == .success)
        return try #require(answer.get()).get()
    }

    @Test(
        "a password change whose check a reset overtakes changes nothing, and its session ends",
        arguments: Backend.allCases)
    func changeRacingReset(backend: Backend) throws {
        let hasher = GatedHasher()
        try withAccounts(backend, hasher: hasher) { server in
            let token = try server.signIn("ada@example.com")
            _ = try server.app("POST", "auth/password/request", json: ["email": "ada@example.com"])
            let key = try #require(server.mailer.resetKey(for: "ada@example.com"))
            let change = try interleave(hasher) {
                try server.app(
                    "POST", "account/password/change", token: token,
                    json: ["current_password": password, "new_password": "the attacker's password"])
            } second: {
                let reset = try server.app(
                    "POST", "auth/password/reset", json: ["key": key, "password": "the owner's new password"])
                #expect(reset.status == 401, "the reset succeeds while the change is checking")
            }
            #expect(change.status == 400, "the change lost: \(change.text)")
            #expect(change.errorCodes == ["enter_current_password"])
            #expect(change.sessionToken == nil)
            #expect(try server.appInfo(token).status == 401, "the reset ended the attacker's session")
            let sessions = try server.application.database.execute("SELECT COUNT(*) AS n FROM sessions").first?.int("n")
            #expect(sessions == 0)
            #expect(
                try server.app(
                    "POST", "auth/login", json: ["email": "ada@example.com", "password": "the owner's new password"]
                )
                .status == 200)
            #expect(
                try server.app(
                    "POST", "auth/login", json: ["email": "ada@example.com", "password": "the attacker's password"]
                )
                .status == 400)
        }
    }

    @Test(
        "a login whose check an operator's hold overtakes gets no session, and says held", arguments: Backend.allCases)
    func loginRacingHold(backend: Backend) throws {
        let hasher = GatedHasher()
        try withAccounts(backend, hasher: hasher) { server in
            _ = try server.signIn("ada@example.com")
            let login = try interleave(hasher) {
                try server.app("POST", "auth/login", json: ["email": "ada@example.com", "password": password])
            } second: {
                let held = try server.application.accounts.setApproval(.held, email: "ada@example.com")
                #expect(held)
            }
            #expect(login.status == 401, "\(login.text)")
            let preLogin = try #require(login.sessionToken)
            #expect(try server.appInfo(preLogin).status == 401)
            #expect(try server.standing(preLogin).jsonObject?["standing"] as? String == "held")
            let signedIn = try server.application.database.execute(
                "SELECT COUNT(*) AS n FROM sessions WHERE user_id IS NOT NULL"
            ).first?.int("n")
            #expect(signedIn == 0, "no session outlives the hold")
        }
    }

    @Test("a login whose check a password change overtakes gets no session", arguments: Backend.allCases)
    func loginRacingChange(backend: Backend) throws {
        let hasher = GatedHasher()
        try withAccounts(backend, hasher: hasher) { server in
            let phone = try server.signIn("ada@example.com")
            let login = try interleave(hasher) {
                try server.app("POST", "auth/login", json: ["email": "ada@example.com", "password": password])
            } second: {
                let change = try server.app(
                    "POST", "account/password/change", token: phone,
                    json: ["current_password": password, "new_password": "a brand new password"])
                #expect(change.status == 200)
            }
            #expect(login.status == 400 && login.errorCodes == ["email_password_mismatch"], "\(login.text)")
            let sessions = try server.application.database.execute("SELECT COUNT(*) AS n FROM sessions").first?.int("n")
            #expect(sessions == 1, "only the changer's new session")
        }
    }

    @Test("on PostgreSQL a login's session insert waits for a password change in flight, then sees it")
    func insertWaitsForChangeInFlight() throws {
        try withAccounts(.postgres) { server in
            _ = try server.signIn("ada@example.com")
            let database = server.application.database
            let account = try #require(try AccountStore(database).find(email: "ada@example.com"))
            let login = try server.application.accounts.mint.make(
                kind: .app, userID: account.id, authenticatedAt: 0, now: server.clock.unixSeconds)
            let inserted = LockedValue<Bool?>(nil)
            let done = DispatchSemaphore(value: 0)
            let change = try server.url.open()
            defer { change.close() }
            try change.withConnection { connection in
                // A password change, in flight: new hash written, sessions deleted, not committed yet.
                try connection.execute("BEGIN")
                try connection.execute(
                    "UPDATE users SET password_hash = 'changed' WHERE id = $1", [.integer(account.id)])
                try connection.execute("DELETE FROM sessions WHERE user_id = $1", [.integer(account.id)])
                Thread.detachNewThread {
                    let result = try? database.transaction {
                        try SessionStore($0).insertSignedIn(
                            login.session, now: 0, passwordHash: account.passwordHash)
                    }
                    inserted.set(result)
                    done.signal()
                }
                // The login must be waiting for the change's lock, not done already.
                let waiting = try waitForLockWaiters(1, in: database) { inserted.get() != nil }
                #expect(waiting, "the login's insert waits for the change in flight")
                try connection.execute("COMMIT")
            }
            #expect(done.wait(timeout: .now() + 30) == .success)
            #expect(inserted.get() == false, "after the change commits, the checked hash is gone: no session")
            let sessions = try database.execute(
                "SELECT COUNT(*) AS n FROM sessions WHERE user_id = $1", [.integer(account.id)]
            ).first?.int("n")
            #expect(sessions == 0)
        }
    }

    @Test("on PostgreSQL a reset and a change queued on the same account run one after the other, never deadlocked")
    func resetAndChangeQueueOnTheAccount() throws {
        try withAccounts(.postgres) { server in
            let token = try server.signIn("ada@example.com")
            _ = try server.app("POST", "auth/password/request", json: ["email": "ada@example.com"])
            let key = try #require(server.mailer.resetKey(for: "ada@example.com"))
            let database = server.application.database
            let change = LockedValue<RawResponse?>(nil)
            let reset = LockedValue<RawResponse?>(nil)
            let done = DispatchSemaphore(value: 0)
            let holder = try server.url.open()
            defer { holder.close() }
            try holder.withConnection { connection in
                // Someone else holds the account's row (without writing it, so that the queue behind
                // it stays in order): both requests queue behind it, the change first.
                try connection.execute("BEGIN")
                try connection.execute("SELECT id FROM users WHERE email = 'ada@example.com' FOR UPDATE")
                Thread.detachNewThread {
                    change.set(
                        try? server.app(
                            "POST", "account/password/change", token: token,
                            json: ["current_password": password, "new_password": "the changed password"]))
                    done.signal()
                }
                #expect(try waitForLockWaiters(1, in: database), "the change waits for the account's row")
                Thread.detachNewThread {
                    reset.set(
                        try? server.app(
                            "POST", "auth/password/reset", json: ["key": key, "password": "the reset password"]))
                    done.signal()
                }
                #expect(try waitForLockWaiters(2, in: database), "the reset waits too")
                try connection.execute("COMMIT")
            }
            #expect(done.wait(timeout: .now() + 30) == .success && done.wait(timeout: .now() + 30) == .success)
            let changed = try #require(change.get())
            let refused = try #require(reset.get())
            #expect(changed.status == 200, "the change went first: \(changed.text)")
            #expect(refused.status == 400, "the change voided the key the reset waited with: \(refused.text)")
            #expect(
                try server.app(
                    "POST", "auth/login", json: ["email": "ada@example.com", "password": "the changed password"]
                )
                .status == 200)
        }
    }
}

/// Waits until `count` statements in `database` (PostgreSQL) wait for a lock: true once they do,
/// false after five seconds or as soon as `givenUp` says there is no point.
func waitForLockWaiters(_ count: Int64, in database: any Database, unless givenUp: () -> Bool = { false })
    throws -> Bool
{
    for _ in 0..<500 {
        let waiting =
            try database.execute(
                "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
            ).first?.int("n") ?? 0
        if waiting >= count { return true }
        if givenUp() { return false }
        usleep(10_000)
    }
    return false
}

/// A value shared between threads.
final class LockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func get() -> Value { lock.withLock { value } }
    func set(_ newValue: Value) { lock.withLock { value = newValue } }
}
