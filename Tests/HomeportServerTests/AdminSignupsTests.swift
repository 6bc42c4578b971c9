import Foundation
import HomeportLogging
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// Approving newcomers from the phone: the `admin` group sees the queue and decides, and hears
/// of each newcomer.
@Suite("Approving sign-ups from the app: the admin group's queue and notifications", .tags(.postgres, .browser))
struct AdminSignupsTests {
    static let push = PushSettings(topic: "net.example.books")

    /// An approved account in `admin` (signed up under approval, approved and grouped by the
    /// operator), signed in with a registered device: its token and device.
    private func admin(_ server: AccountsHarness, _ email: String = "root@example.com") throws -> (String, String) {
        let signup = try server.app("POST", "auth/signup", json: ["email": email, "password": "correct horse battery"])
        #expect(signup.status == 401, "the admin waits too, at first: \(signup.text)")
        #expect(try server.application.accounts.setApproval(.approved, email: email))
        _ = try GroupService(database: server.application.database, clock: server.clock, logger: Logger(label: "t"))
            .groups(email: email, (.add, "admin"))
        let token = try server.signIn(email)
        let device = String(repeating: email.hasPrefix("root") ? "ab" : "cd", count: 32)
        let registered = try server.app(
            "POST", HomeportPath.pushDevices, token: token, json: ["token": device, "environment": "sandbox"])
        #expect(registered.status == 201 || registered.status == 200, "\(registered.text)")
        return (token, device)
    }

    /// The signup.waiting notifications `email`'s account was sent, as object ids (newcomers).
    private func heard(_ server: AccountsHarness, _ email: String) throws -> [Int64] {
        let account = try #require(try AccountStore(server.application.database).find(email: email))
        return try NotificationLog(server.application.database).after(userID: account.id, seq: 0)
            .filter { $0.code == SignupQueue.waitingCode }.compactMap(\.objectID)
    }

    /// The pushes queued for `device`.
    private func pushes(_ server: AccountsHarness, _ device: String) throws -> Int {
        try server.application.database.execute(
            "SELECT count(*) AS n FROM push_outbox WHERE device_token = $1", [.text(device)]
        ).first?.int("n").map(Int.init) ?? 0
    }

    private func queue(_ server: AccountsHarness, _ token: String) throws -> [SignupEntry] {
        let answer = try server.app("GET", HomeportPath.adminSignups, token: token)
        #expect(answer.status == 200, "\(answer.text)")
        return try JSONDecoder().decode(SignupQueueAnswer.self, from: answer.body).signups
    }

    @Test(
        "an admin sees the queue oldest first, approves, holds and rejects; each admin hears each newcomer once",
        arguments: Backend.allCases)
    func decide(backend: Backend) throws {
        try withAccounts(backend, signup: .approval, push: Self.push) { server in
            let (root, rootDevice) = try admin(server)
            // The second admin was a newcomer to the first: heard while it waited, before its device.
            let (other, otherDevice) = try admin(server, "second@example.com")
            let second = try #require(try AccountStore(server.application.database).find(email: "second@example.com"))
            #expect(try heard(server, "root@example.com") == [second.id])
            #expect(try pushes(server, rootDevice) == 1 && pushes(server, otherDevice) == 0)
            for (index, email) in ["ann@example.com", "bob@example.com", "cy@example.com"].enumerated() {
                server.clock.advance(by: 10)
                let signup = try server.app(
                    "POST", "auth/signup", json: ["email": email, "password": "correct horse battery"])
                #expect(signup.status == 401, "\(email) waits: \(signup.text)")
                #expect(try heard(server, "second@example.com").count == index + 1)
            }
            let newcomers = try ["ann", "bob", "cy"].map {
                try #require(try AccountStore(server.application.database).find(email: "\($0)@example.com")).id
            }
            #expect(try heard(server, "root@example.com") == [second.id] + newcomers, "once per newcomer, in order")
            #expect(try heard(server, "second@example.com") == newcomers, "every admin")
            #expect(try pushes(server, rootDevice) == 4 && pushes(server, otherDevice) == 3, "at each admin's device")
            // A second sign-up attempt with a taken address is no newcomer.
            _ = try server.app(
                "POST", "auth/signup", json: ["email": "ann@example.com", "password": "another password"])
            #expect(try heard(server, "second@example.com").count == 3)

            let listed = try queue(server, root)
            #expect(listed.map(\.email) == ["ann@example.com", "bob@example.com", "cy@example.com"])
            #expect(
                listed.allSatisfy { $0.stage == "waiting" }
                    && listed.map(\.createdAt) == listed.map(\.createdAt).sorted())

            let approved = try server.app("POST", HomeportPath.adminSignups + "/\(newcomers[0])/approve", token: root)
            #expect(approved.status == 200)
            #expect(try JSONDecoder().decode(SignupEntry.self, from: approved.body).stage == "approved")
            #expect(try server.signIn("ann@example.com").isEmpty == false, "approved: she signs in")
            #expect(
                try server.app("POST", HomeportPath.adminSignups + "/\(newcomers[1])/hold", token: other).status == 200)
            #expect(
                try server.app("POST", HomeportPath.adminSignups + "/\(newcomers[2])/reject", token: root).status == 200
            )
            #expect(try queue(server, root).map { "\($0.email)=\($0.stage)" } == ["bob@example.com=held"])
            let login = try server.app(
                "POST", "auth/login", json: ["email": "cy@example.com", "password": "correct horse battery"])
            #expect(login.status == 401 && login.sessionToken != nil, "rejected: told waiting, no session")
            // Held can still be approved from the queue; an approved account is no sign-up.
            #expect(
                try server.app("POST", HomeportPath.adminSignups + "/\(newcomers[1])/approve", token: root).status
                    == 200)
            let again = try server.app("POST", HomeportPath.adminSignups + "/\(newcomers[0])/hold", token: root)
            #expect(again.status == 404, "an approved account is not held from the app")
            #expect(try server.app("POST", HomeportPath.adminSignups + "/999999/approve", token: root).status == 404)
            let bad = try server.app("POST", HomeportPath.adminSignups + "/bob/approve", token: root)
            #expect(bad.status == 400)
            #expect(server.log.lines.contains { $0.contains("approval changed") && $0.contains("by=admin") })
        }
    }

    @Test(
        "anyone outside admin gets 403, without a session 401; nothing changes",
        arguments: Backend.allCases)
    func refused(backend: Backend) throws {
        try withAccounts(backend, signup: .approval) { server in
            _ = try server.app(
                "POST", "auth/signup", json: ["email": "ann@example.com", "password": "correct horse battery"])
            _ = try server.app(
                "POST", "auth/signup", json: ["email": "eve@example.com", "password": "correct horse battery"])
            #expect(try server.application.accounts.setApproval(.approved, email: "eve@example.com"))
            let eve = try server.signIn("eve@example.com")
            let ann = try #require(try AccountStore(server.application.database).find(email: "ann@example.com"))
            let list = try server.app("GET", HomeportPath.adminSignups, token: eve)
            #expect(
                list.status == 403 && list.apiErrorCode == "forbidden" && !list.text.contains("ann@"),
                "\(list.status) \(list.text)")
            let approve = try server.app("POST", HomeportPath.adminSignups + "/\(ann.id)/approve", token: eve)
            #expect(approve.status == 403)
            #expect(try server.app("GET", HomeportPath.adminSignups).status == 401)
            #expect(try server.app("POST", HomeportPath.adminSignups + "/\(ann.id)/approve").status == 401)
            #expect(try AccountStore(server.application.database).find(id: ann.id)?.approval == .waiting)
        }
    }

    @Test(
        "under verification by code, admins hear of a newcomer once the address is verified (by the sign-up's code or a later sign-in's), not before, and the queue shows only proved addresses"
    )
    func afterVerification() throws {
        try withAccounts(.sqlite, signup: .approval, emailVerification: .code) { server in
            _ = try server.app(
                "POST", "auth/signup", json: ["email": "root@example.com", "password": "correct horse battery"])
            #expect(try server.application.accounts.setApproval(.approved, email: "root@example.com"))
            #expect(try server.application.accounts.emailVerification.markEmailVerified(email: "root@example.com"))
            _ = try GroupService(database: server.application.database, clock: server.clock, logger: Logger(label: "t"))
                .groups(email: "root@example.com", (.add, "admin"))
            let pending = try server.signupPending("ann@example.com")
            #expect(try heard(server, "root@example.com").isEmpty, "an address nobody proved is no newcomer yet")
            #expect(try server.application.signups.pending().map(\.email) == [], "nor in the queue")
            let code = try #require(server.mailer.verificationCode(for: "ann@example.com"))
            let verified = try server.verify(pending, code)
            #expect(verified.status == 401, "verified, and waiting: \(verified.text)")
            #expect(try heard(server, "root@example.com").count == 1)
            #expect(try server.application.signups.pending().map(\.email) == ["ann@example.com"])

            // Bob ignores the sign-up's code and signs in with his password later: that code proves it.
            _ = try server.signupPending("bob@example.com")
            server.clock.advance(by: 600)
            let login = try server.app(
                "POST", "auth/login", json: ["email": "bob@example.com", "password": "correct horse battery"])
            #expect(login.status == 401, "\(login.text)")
            let later = try #require(login.sessionToken)
            let laterCode = try #require(server.mailer.verificationCode(for: "bob@example.com"))
            #expect(try server.verify(later, laterCode).status == 401)
            #expect(try heard(server, "root@example.com").count == 2, "bob too, once")
            // Ann's address, proved already, proved again by a sign-in's code: no second notice.
            let again = try server.app(
                "POST", "auth/login", json: ["email": "ann@example.com", "password": "correct horse battery"])
            #expect(again.status == 401)
            #expect(try heard(server, "root@example.com").count == 2)
        }
    }

    @Test(
        "two admins deciding on one sign-up at once (both read it waiting, then update): one decides, the other finds it decided"
    )
    func concurrentDecisions() throws {
        try withAccounts(.postgres, signup: .approval) { server in
            _ = try admin(server)
            _ = try admin(server, "second@example.com")
            let store = AccountStore(server.application.database)
            let (root, other) = (
                try #require(try store.find(email: "root@example.com")),
                try #require(try store.find(email: "second@example.com"))
            )
            _ = try server.app(
                "POST", "auth/signup", json: ["email": "ann@example.com", "password": "correct horse battery"])
            let ann = try #require(try store.find(email: "ann@example.com"))
            // Writes to users wait behind a share lock, reads do not: both decisions read Ann as
            // waiting, then wait at their update; the lock goes once both wait there. (Called in
            // process: two requests could share one of the server's worker threads, one after the other.)
            let lock = try TableLock(server.url, table: "users", stopping: .writes)
            let outcomes = LockedBox<[String: String]>([:])
            let done = DispatchGroup()
            // Approve and reject: whichever lands first, the other finds the account out of the queue.
            for (admin, approval) in [(root, Approval.approved), (other, Approval.rejected)] {
                done.enter()
                Thread.detachNewThread {
                    defer { done.leave() }
                    let outcome: String
                    switch try? server.application.signups.decide(ann.id, approval, by: admin) {
                    case .decided: outcome = "decided"
                    case .notInQueue: outcome = "not in queue"
                    case nil: outcome = "failed"
                    }
                    outcomes.mutate { $0[approval.rawValue] = outcome }
                }
            }
            #expect(try lock.waitForWaiters(2), "both decisions wait at their update")
            lock.release()
            _ = done.wait(timeout: .now() + 20)
            let seen = outcomes.value
            #expect(seen.values.sorted() == ["decided", "not in queue"], "\(seen)")
            let winner: Approval = seen["approved"] == "decided" ? .approved : .rejected
            #expect(try store.find(id: ann.id)?.approval == winner)
            #expect(
                server.log.lines.filter { $0.contains("approval changed") && $0.contains("account=\(ann.id)") }.count
                    == 1)
        }
    }

    @Test("the web door shows admins the queue and decides with the same rules; anyone else gets 403")
    func webDoor() throws {
        try withAccounts(.sqlite, signup: .approval) { server in
            _ = try admin(server)
            _ = try server.app(
                "POST", "auth/signup", json: ["email": "ann@example.com", "password": "correct horse battery"])
            _ = try server.app(
                "POST", "auth/signup", json: ["email": "eve@example.com", "password": "correct horse battery"])
            #expect(try server.application.accounts.setApproval(.approved, email: "eve@example.com"))
            let ann = try #require(try AccountStore(server.application.database).find(email: "ann@example.com"))

            let browser = Browser(port: server.port)
            _ = try browser.get("/account/login")
            #expect(
                try browser.post("/account/login", ["email": "root@example.com", "password": "correct horse battery"])
                    .status == 303)
            #expect(try browser.get("/account").text.contains("/account/signups"), "the account page links the queue")
            let queue = try browser.get("/account/signups")
            #expect(queue.status == 200 && queue.text.contains("ann@example.com") && !queue.text.contains("eve@"))
            let decided = try browser.post("/account/signups", ["id": String(ann.id), "decision": "approve"])
            #expect(decided.status == 303)
            #expect(try AccountStore(server.application.database).find(id: ann.id)?.approval == .approved)
            #expect(!(try browser.get("/account/signups").text.contains("ann@example.com")))
            let again = try browser.post("/account/signups", ["id": String(ann.id), "decision": "hold"])
            #expect(again.status == 404, "approved: no longer in the queue")
            #expect(try browser.post("/account/signups", ["id": "x", "decision": "approve"]).status == 400)
            #expect(try browser.post("/account/signups", ["id": String(ann.id), "decision": "delete"]).status == 400)

            let stranger = Browser(port: server.port)
            _ = try stranger.get("/account/login")
            _ = try stranger.post("/account/login", ["email": "eve@example.com", "password": "correct horse battery"])
            #expect(!(try stranger.get("/account").text.contains("/account/signups")))
            #expect(try stranger.get("/account/signups").status == 403)
            #expect(try stranger.post("/account/signups", ["id": String(ann.id), "decision": "hold"]).status == 403)
            #expect(try AccountStore(server.application.database).find(id: ann.id)?.approval == .approved)
        }
    }
}
