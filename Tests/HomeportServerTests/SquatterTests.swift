import Foundation
import HomeportCrypto
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// Someone who once held an account, or made one under another person's address, keeps no way in
/// once the owner acts: a reset by mailed key leaves the passkeys added before the address was
/// proven second factors only, and ends the app sign-ins approved before it; sessions minted from
/// a stolen one share one budget of password guesses; strangers cannot fill a mailbox with
/// "waiting for approval"; a key added as a second factor only never signs in alone.
@Suite("A way in a squatter or a thief kept ends when the owner acts", .tags(.postgres, .browser))
struct SquatterTests {
    static let password = "correct horse battery"
    static let url = passkeyOrigin

    private func count(_ server: AccountsHarness, _ table: String) throws -> Int64 {
        try server.application.database.execute("SELECT COUNT(*) AS n FROM \(table)").first?.int("n") ?? -1
    }

    @Test(
        "a reset by mailed key leaves a passkey added before the address was proven a second factor only: whoever planted it cannot sign in with it alone, and one the owner added still guards against whoever reads the mailbox; one added after stays a passkey",
        arguments: Backend.allCases)
    func plantedPasskeys(backend: Backend) throws {
        try withAccounts(backend, publicURL: Self.url) { server in
            // Somebody signs up with ada's address (no verification asked) and adds a passkey
            // that signs in alone.
            let token = try confirmedSession(server, "ada@example.com")
            let planted = try SoftAuthenticator()
            #expect(try addPasskey(server, token, planted).status == 200)
            #expect(try passkeySignIn(server, planted).status == 200, "the planted passkey signs in before the reset")

            // The reset by the mail that reaches ada's mailbox.
            #expect(try server.resetPassword("ada@example.com", to: "ada's own password").status != 400)
            let again = try passkeySignIn(server, planted)
            #expect(again.status == 400 && again.errorCodes == ["incorrect_code"], "\(again.text)")
            // It stays as the second factor: a password sign-in waits for it (had the owner added
            // it, the mailbox's reader would be stopped here; a squatter's is the operator's
            // `users reset-2fa` to remove).
            let login = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": "ada's own password"])
            #expect(login.status == 401 && login.text.contains("mfa_authenticate"), "\(login.text)")
            let passwordless = try server.application.database.execute(
                "SELECT passwordless FROM webauthn_credentials"
            ).map { $0.int("passwordless") }
            #expect(passwordless == [0])

            // Added after the reset proved the address, a passkey signs in alone, and keeps doing
            // so through the next reset.
            try server.application.database.execute("DELETE FROM webauthn_credentials")
            let signedIn = try confirmedSession(server, "ada@example.com", password: "ada's own password")
            let hers = try SoftAuthenticator()
            #expect(try addPasskey(server, signedIn, hers).status == 200)
            server.clock.advance(by: 60)
            #expect(try server.resetPassword("ada@example.com", to: "ada's newer password").status != 400)
            #expect(try passkeySignIn(server, hers).status == 200)
        }
    }

    @Test(
        "a reset that lands during a passkey ceremony wins: the counter's move refuses a sign-in alone once the passkey is a second factor",
        arguments: Backend.allCases)
    func resetDuringTheCeremony(backend: Backend) throws {
        try withAccounts(backend, publicURL: Self.url) { server in
            let token = try confirmedSession(server, "ada@example.com")
            #expect(try addPasskey(server, token, try SoftAuthenticator()).status == 200)
            let database = server.application.database
            let row = try #require(
                try database.execute("SELECT id, user_id, sign_count FROM webauthn_credentials").first)
            let (id, user, count) = (row.int("id") ?? 0, row.int("user_id") ?? 0, row.int("sign_count") ?? 0)
            // The reset's demotion, between the ceremony's read of the passkey and its use.
            #expect(try PasskeyStore(database).demoteUnproven(userID: user) == 1)
            #expect(try !PasskeyStore(database).use(id: id, stored: count, presented: count + 1, at: 0, alone: true))
            #expect(try PasskeyStore(database).use(id: id, stored: count, presented: count + 1, at: 0, alone: false))
        }
    }

    @Test(
        "an app sign-in approved in the browser brings no session after a reset, a password change, a hold, or the browser's signing out",
        arguments: ["reset", "change", "hold", "logout"])
    func approvedHandoffEnds(ending: String) throws {
        try withAccounts(.sqlite) { server in
            let handoff = HandoffTests()
            let (verifier, challenge) = try HandoffTests.pkce()
            let path = try handoff.pagePath(try handoff.begin(server, challenge: challenge), port: server.port)
            let browser = Browser(port: server.port)
            try handoff.signIn(browser, server)
            let code = try handoff.confirm(browser, server, path: path)
            switch ending {
            case "reset":
                #expect(try server.resetPassword("ada@example.com", to: "a brand new password").status != 400)
            case "change":
                let token = try server.signIn("ada@example.com")
                let changed = try server.app(
                    "POST", "account/password/change", token: token,
                    json: ["current_password": Self.password, "new_password": "a brand new password"])
                #expect(changed.status == 200 || changed.status == 401, "\(changed.text)")
            case "hold":
                #expect(try server.application.accounts.setApproval(.held, email: "ada@example.com"))
            default:
                _ = try browser.get("/account")
                #expect(try browser.post("/account/logout", [:]).status == 303)
            }
            let exchanged = try handoff.exchange(server, code: code, verifier: verifier)
            #expect(exchanged.status == 400 && exchanged.sessionToken == nil, "\(ending): \(exchanged.text)")
            if ending != "logout" { #expect(try count(server, "handoffs") == 0, "ended with the account's sessions") }
        }
    }

    @Test(
        "wrong current passwords of every session of one account share one budget: sessions minted from a stolen one cannot guess for days; a right one gives its try back"
    )
    func guessesAcrossSessions() throws {
        #expect(RateLimitPolicy().failedPasswordConfirmationPerAccount == RateLimit(100, per: 3600))
        let session = RateLimitPolicy().failedPasswordChangePerSession
        #expect(
            Int64(RateLimitPolicy().failedPasswordConfirmationPerAccount.limit)
                > Int64(session.limit) * 3600 / session.windowSeconds,
            "one session alone cannot spend the account's budget")
        var limits = RateLimitPolicy()
        limits.failedPasswordConfirmationPerAccount = RateLimit(10, per: 3600)
        try withAccounts(.sqlite, rateLimits: limits) { server in
            _ = try server.signIn("ada@example.com")
            func wrong(_ token: String) throws -> RawResponse {
                try server.app("POST", "auth/reauthenticate", token: token, json: ["password": "a guess, wrong"])
            }
            // Three sessions, each within its own five tries: nine wrong in all.
            let sessions = try (0..<3).map { _ in try server.signIn("ada@example.com") }
            for (index, token) in sessions.enumerated() {
                for _ in 0..<(index == 2 ? 1 : 4) {
                    let answer = try wrong(token)
                    #expect(answer.status == 400 && answer.errorCodes == ["incorrect_password"], "\(answer.text)")
                }
            }
            // A right one between them gives its try back; the tenth wrong one is still answered.
            let right = try server.app(
                "POST", "auth/reauthenticate", token: sessions[2], json: ["password": Self.password])
            #expect(right.status == 200, "\(right.text)")
            #expect(try wrong(sessions[2]).status == 400)
            // The eleventh wrong one, from a fresh session with all five of its own, is refused;
            // so is a password change's.
            let fresh = try server.signIn("ada@example.com")
            #expect(try wrong(fresh).status == 429)
            let change = try server.app(
                "POST", "account/password/change", token: fresh,
                json: ["current_password": "another guess", "new_password": "a brand new password"])
            #expect(change.status == 429, "\(change.text)")
            server.clock.advance(by: 3601)
            #expect(try wrong(fresh).status == 400, "the hour is over")
        }
    }

    @Test("strangers signing up with one mailbox's addresses send it no more waiting mail than its day allows")
    func waitingMailBudget() throws {
        var limits = RateLimitPolicy()
        limits.mailPerMailbox = RateLimit(2, per: 86400)
        try withAccounts(.sqlite, signup: .approval, rateLimits: limits) { server in
            for tag in 1...4 {
                let signup = try server.app(
                    "POST", "auth/signup", json: ["email": "ada+\(tag)@example.com", "password": Self.password])
                #expect(signup.status == 401, "each sign-up stands, waiting: \(signup.text)")
            }
            let waiting = server.mailer.mails.filter { $0.kind == "signup_waiting" }
            #expect(waiting.count == 2, "\(waiting.map(\.to))")
            #expect(try count(server, "users") == 4)
            #expect(server.log.lines.contains { $0.contains("mailbox's day of mail is spent") })
        }
    }

    @Test(
        "a key added as a second factor only never signs in alone, even when a later answer says its person was verified"
    )
    func secondFactorKeyNotAlone() throws {
        try withAccounts(.sqlite, publicURL: Self.url) { server in
            let token = try confirmedSession(server, "ada@example.com")
            let key = try SoftAuthenticator()
            let added = try addPasskey(server, token, key, passwordless: false, verified: false)
            #expect(added.status == 200 && added.text.contains("\"is_passwordless\":false"), "\(added.text)")
            let alone = try passkeySignIn(server, key)
            #expect(alone.status == 400 && alone.sessionToken == nil, "\(alone.text)")
            // As the second factor it serves.
            let login = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": Self.password])
            #expect(login.status == 401, "\(login.text)")
        }
    }
}
