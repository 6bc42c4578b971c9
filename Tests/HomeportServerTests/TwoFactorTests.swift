import Foundation
import HomeportCrypto
import HomeportServer
import HomeportStorage
import HomeportTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Two-factor sign-in (TOTP and recovery codes) as an attacker meets it: a code is good once, on
/// every replica; tries are charged before comparing, one budget for both doors; the session
/// token appears only after the second factor; secrets are sealed at rest; no code is logged.
@Suite("Two-factor sign-in", .tags(.process, .postgres, .browser))
struct TwoFactorTests {
    static let password = "correct horse battery"

    /// An account with TOTP on: its token, its secret's bytes and its recovery codes.
    struct Enrolled {
        var token: String
        var secret: [UInt8]
        var secretText: String
        var codes: [String]
    }

    /// Signs `email` up, confirms the password and turns TOTP on with the current step's code.
    func enroll(_ server: AccountsHarness, _ email: String) throws -> Enrolled {
        let token = try server.signIn(email)
        let offer = try server.app("GET", "account/authenticators/totp", token: token)
        #expect(offer.status == 404, "\(offer.text)")
        let meta = try #require(offer.jsonObject?["meta"] as? [String: Any])
        let secretText = try #require(meta["secret"] as? String)
        #expect((meta["totp_url"] as? String)?.hasPrefix("otpauth://totp/") == true)
        let secret = try #require(Base32.decode(secretText))
        // The right code without a confirmation: 401, the confirmation asked for, nothing on.
        let early = try server.app(
            "POST", "account/authenticators/totp", token: token, json: ["code": code(secret, server)])
        #expect(early.status == 401, "\(early.text)")
        #expect(flowIDs(early) == ["reauthenticate"])
        #expect(try server.app("GET", "account/authenticators", token: token).dataArray?.isEmpty == true)
        let wrongPassword = try server.app(
            "POST", "auth/reauthenticate", token: token, json: ["password": "nope nope nope"])
        #expect(wrongPassword.status == 400 && wrongPassword.errorCodes == ["incorrect_password"])
        #expect(
            try server.app("POST", "auth/reauthenticate", token: token, json: ["password": Self.password]).status == 200
        )
        let on = try server.app(
            "POST", "account/authenticators/totp", token: token, json: ["code": code(secret, server)])
        #expect(on.status == 200, "\(on.text)")
        let shown = try server.app("GET", "account/authenticators/recovery-codes", token: token)
        let codes = try #require((shown.jsonObject?["data"] as? [String: Any])?["unused_codes"] as? [String])
        #expect(codes.count == 10 && codes.allSatisfy { $0.count == 8 && $0.allSatisfy(\.isNumber) })
        // Shown once: the next answer has the counts only.
        let again = try server.app("GET", "account/authenticators/recovery-codes", token: token)
        #expect(again.status == 200 && (again.jsonObject?["data"] as? [String: Any])?["unused_codes"] == nil)
        return Enrolled(token: token, secret: secret, secretText: secretText, codes: codes)
    }

    func code(_ secret: [UInt8], _ server: AccountsHarness, steps: Int64 = 0) -> String {
        OneTimeCode.code(
            secret: secret, step: OneTimeCode.step(at: Int64(server.clock.now().timeIntervalSince1970)) + steps)
    }

    func flowIDs(_ response: RawResponse) -> [String] {
        ((response.jsonObject?["data"] as? [String: Any])?["flows"] as? [[String: Any]] ?? []).compactMap {
            $0["id"] as? String
        }
    }

    /// Signs in with the password: the pre-login token of the sign-in waiting for its second factor.
    func pendingLogin(_ server: AccountsHarness, _ email: String) throws -> String {
        let login = try server.app("POST", "auth/login", json: ["email": email, "password": Self.password])
        #expect(login.status == 401, "\(login.text)")
        let pending = ((login.jsonObject?["data"] as? [String: Any])?["flows"] as? [[String: Any]])?.first {
            $0["id"] as? String == "mfa_authenticate"
        }
        #expect(pending?["is_pending"] as? Bool == true)
        #expect(pending?["types"] as? [String] == ["recovery_codes", "totp"])
        return try #require(login.sessionToken)
    }

    @Test(
        "a sign-in to an account with TOTP waits for a code; a code is good once, one step of skew either way; a recovery code once; the token only comes after",
        arguments: Backend.allCases)
    func signInWithSecondFactor(backend: Backend) throws {
        try withAccounts(backend) { server in
            let ada = try enroll(server, "ada@example.com")
            let listed = try #require(try server.app("GET", "account/authenticators", token: ada.token).dataArray)
            #expect(listed.compactMap { $0["type"] as? String } == ["totp", "recovery_codes"])

            let pending = try pendingLogin(server, "ada@example.com")
            // The pre-login token opens nothing.
            #expect(try server.appInfo(pending).status == 401)
            #expect(try server.app("GET", "account/authenticators", token: pending).status == 401)
            // The code the set-up used is spent: same step, refused.
            let replay = try server.app(
                "POST", "auth/2fa/authenticate", token: pending, json: ["code": code(ada.secret, server)])
            #expect(replay.status == 400 && replay.errorCodes == ["incorrect_code"], "\(replay.text)")
            server.clock.advance(by: 30)
            let fresh = code(ada.secret, server)
            // As allauth's form: a code sent as a JSON number is read as its digits.
            let other = (fresh.first == "1" ? "2" : "1") + fresh.dropFirst()
            let number = try server.app("POST", "auth/2fa/authenticate", token: pending, json: ["code": Int(other)!])
            #expect(number.status == 400 && number.errorCodes == ["incorrect_code"], "\(number.text)")
            let done = try server.app("POST", "auth/2fa/authenticate", token: pending, json: ["code": fresh])
            #expect(done.status == 200, "\(done.text)")
            let token = try #require(done.sessionToken)
            #expect(token != pending)
            #expect(try server.appInfo(token).status == 200)
            #expect(try server.appInfo(pending).status == 401, "the pre-login token ended")
            let methods = (done.jsonObject?["data"] as? [String: Any])?["methods"] as? [[String: Any]] ?? []
            #expect(methods.compactMap { $0["method"] as? String } == ["password", "mfa"])

            // The same code on another sign-in, in the same step: refused.
            let second = try pendingLogin(server, "ada@example.com")
            #expect(try server.app("POST", "auth/2fa/authenticate", token: second, json: ["code": fresh]).status == 400)
            // The code of the step before or after: let in (clock skew), each once.
            server.clock.advance(by: 60)
            let early = code(ada.secret, server, steps: -1)
            #expect(try server.app("POST", "auth/2fa/authenticate", token: second, json: ["code": early]).status == 200)
            let third = try pendingLogin(server, "ada@example.com")
            let late = code(ada.secret, server, steps: 1)
            #expect(try server.app("POST", "auth/2fa/authenticate", token: third, json: ["code": late]).status == 200)
            // Two steps away: refused.
            let fourth = try pendingLogin(server, "ada@example.com")
            server.clock.advance(by: 90)
            let stale = code(ada.secret, server, steps: -2)
            #expect(try server.app("POST", "auth/2fa/authenticate", token: fourth, json: ["code": stale]).status == 400)

            // A recovery code, once.
            let recovery = ada.codes[3]
            #expect(
                try server.app("POST", "auth/2fa/authenticate", token: fourth, json: ["code": recovery]).status == 200)
            let fifth = try pendingLogin(server, "ada@example.com")
            #expect(
                try server.app("POST", "auth/2fa/authenticate", token: fifth, json: ["code": recovery]).status == 400)
            let counted = try #require(try server.app("GET", "account/authenticators", token: ada.token).dataArray)
            #expect(counted.first { $0["type"] as? String == "recovery_codes" }?["unused_code_count"] as? Int == 9)

            // A sign-in waits 15 minutes, no longer.
            server.clock.advance(by: 901)
            #expect(
                try server.app("POST", "auth/2fa/authenticate", token: fifth, json: ["code": code(ada.secret, server)])
                    .status == 410)
        }
    }

    @Test(
        "tries are charged before comparing, five per account for both doors together; a right code clears them",
        arguments: Backend.allCases)
    func oneBudgetForBothDoors(backend: Backend) throws {
        try withAccounts(backend) { server in
            let ada = try enroll(server, "ada@example.com")
            server.clock.advance(by: 30)
            let app = try pendingLogin(server, "ada@example.com")
            for wrong in ["000000", "111111", "222222"] {
                #expect(
                    try server.app("POST", "auth/2fa/authenticate", token: app, json: ["code": wrong]).status == 400)
            }
            let browser = Browser(port: server.port)
            _ = try browser.get("/account/login")
            let signIn = try browser.post("/account/login", ["email": "ada@example.com", "password": Self.password])
            #expect(signIn.status == 303 && signIn.header("Location") == "/account/2fa/authenticate", "\(signIn.text)")
            _ = try browser.get("/account/2fa/authenticate")
            for wrong in ["333333", "444444"] {
                #expect(try browser.post("/account/2fa/authenticate", ["code": wrong]).status == 400)
            }
            // The sixth try is refused before it is compared, right code or not.
            let spent = try server.app(
                "POST", "auth/2fa/authenticate", token: app, json: ["code": code(ada.secret, server)])
            #expect(spent.status == 400 && spent.errorCodes == ["too_many_login_attempts"], "\(spent.text)")
            #expect(try browser.post("/account/2fa/authenticate", ["code": code(ada.secret, server)]).status == 429)
            server.clock.advance(by: 301)
            let web = try browser.post("/account/2fa/authenticate", ["code": code(ada.secret, server)])
            #expect(web.status == 303 && web.header("Location") == "/account", "\(web.text)")
            #expect(try browser.get("/account").text.contains("ada@example.com"))
        }
    }

    @Test(
        "a signed-in session without the password cannot spend the owner's sign-in budget: its set-up and confirmation tries have their own",
        arguments: Backend.allCases)
    func sessionBudgetIsItsOwn(backend: Backend) throws {
        try withAccounts(backend) { server in
            let ada = try enroll(server, "ada@example.com")
            server.clock.advance(by: 30)
            // A token taken from one of ada's devices: no password, no code.
            let stolen = ada.token
            for wrong in ["000000", "111111", "222222", "333333", "444444", "555555"] {
                let setUp = try server.app(
                    "POST", "account/authenticators/totp", token: stolen, json: ["code": wrong])
                #expect(setUp.status == 400 || setUp.status == 429, "\(setUp.text)")
            }
            let confirmations = try (0..<6).map { _ in
                try server.app("POST", "auth/2fa/reauthenticate", token: stolen, json: ["code": "999999"])
            }
            #expect(
                confirmations.last?.errorCodes == ["too_many_login_attempts"] || confirmations.last?.status == 429,
                "the session's own budget holds: \(confirmations.last?.text ?? "")")
            // The owner signs in on another device with the right code, at once.
            let app = try pendingLogin(server, "ada@example.com")
            let owner = try server.app(
                "POST", "auth/2fa/authenticate", token: app, json: ["code": code(ada.secret, server)])
            #expect(owner.status == 200, "\(owner.text)")

            // More sessions do not buy more guesses: all of an account's sessions share ten an hour.
            let second = try #require(owner.sessionToken)
            for _ in 0..<5 {
                _ = try server.app("POST", "auth/2fa/reauthenticate", token: second, json: ["code": "999999"])
            }
            server.clock.advance(by: 30)
            let third = try #require(
                try server.app(
                    "POST", "auth/2fa/authenticate", token: try pendingLogin(server, "ada@example.com"),
                    json: ["code": code(ada.secret, server)]
                ).sessionToken)
            let refused = try server.app("POST", "auth/2fa/reauthenticate", token: third, json: ["code": "999999"])
            #expect(
                refused.errorCodes == ["too_many_login_attempts"] || refused.status == 429,
                "a fresh session's first guess, past the account's ten: \(refused.text)")
        }
    }

    @Test(
        "the same code sent to two replicas at the same instant signs in once (TOTP and recovery code)",
        arguments: Backend.allCases)
    func oneUseAcrossReplicas(backend: Backend) throws {
        try withAccounts(backend) { first in
            let ada = try enroll(first, "ada@example.com")
            try withAccounts(backend, database: first.url) { second in
                second.clock.advance(by: first.clock.now().timeIntervalSince(second.clock.now()) + 30)
                first.clock.advance(by: 30)
                for code in [self.code(ada.secret, first), ada.codes[0]] {
                    let tokens = [
                        try pendingLogin(first, "ada@example.com"), try pendingLogin(second, "ada@example.com"),
                    ]
                    let statuses = LockedArray<Int>()
                    let start = DispatchSemaphore(value: 0)
                    let group = DispatchGroup()
                    for (server, token) in zip([first, second], tokens) {
                        DispatchQueue.global().async(group: group) {
                            start.wait()
                            let response = try? server.app(
                                "POST", "auth/2fa/authenticate", token: token, json: ["code": code])
                            statuses.append(response?.status ?? -1)
                        }
                    }
                    start.signal()
                    start.signal()
                    group.wait()
                    #expect(statuses.values.sorted() == [200, 400], "\(statuses.values)")
                }
            }
        }
    }

    @Test(
        "secrets are sealed at rest and no code or secret reaches the log; a password reset keeps the second factor",
        arguments: Backend.allCases)
    func sealedAndQuiet(backend: Backend) throws {
        try withAccounts(backend) { server in
            let ada = try enroll(server, "ada@example.com")
            var stored: [String] = []
            for table in ["authenticators", "recovery_codes", "session_factors", "server_secrets", "rate_limits"] {
                for row in try server.application.database.execute("SELECT * FROM \(table)") {
                    stored.append(row.values.map { "\($0)" }.joined(separator: " "))
                }
            }
            let everything = stored.joined(separator: "\n")
            #expect(!everything.isEmpty)
            #expect(!everything.contains(ada.secretText), "the TOTP secret is stored in the clear")
            for code in ada.codes { #expect(!everything.contains(code), "a recovery code is stored in the clear") }

            #expect(try server.app("POST", "auth/password/request", json: ["email": "ada@example.com"]).status == 200)
            let key = try #require(server.mailer.resetKey(for: "ada@example.com"))
            #expect(
                try server.app("POST", "auth/password/reset", json: ["key": key, "password": Self.password]).status
                    == 401)
            server.clock.advance(by: 30)
            let pending = try pendingLogin(server, "ada@example.com")
            let code = code(ada.secret, server)
            #expect(try server.app("POST", "auth/2fa/authenticate", token: pending, json: ["code": code]).status == 200)
            let log = server.log.lines.joined(separator: "\n")
            #expect(!log.contains(ada.secretText) && !log.contains(code))
            for recovery in ada.codes { #expect(!log.contains(recovery)) }
        }
    }

    @Test("turning TOTP off asks for a confirmation within five minutes, and takes the recovery codes with it")
    func turningOff() throws {
        try withAccounts(.sqlite) { server in
            let ada = try enroll(server, "ada@example.com")
            server.clock.advance(by: 301)
            let late = try server.app("DELETE", "account/authenticators/totp", token: ada.token)
            #expect(late.status == 401 && flowIDs(late) == ["reauthenticate", "mfa_reauthenticate"], "\(late.text)")
            #expect(try server.app("GET", "account/authenticators/recovery-codes", token: ada.token).status == 401)
            let confirmed = try server.app(
                "POST", "auth/2fa/reauthenticate", token: ada.token, json: ["code": code(ada.secret, server)])
            #expect(confirmed.status == 200, "\(confirmed.text)")
            #expect(try server.app("DELETE", "account/authenticators/totp", token: ada.token).status == 200)
            #expect(try server.app("GET", "account/authenticators", token: ada.token).dataArray?.isEmpty == true)
            let login = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": Self.password])
            #expect(login.status == 200, "signs in with the password alone again")
            let noCodes = try server.app("POST", "account/authenticators/recovery-codes", token: ada.token)
            #expect(noCodes.status == 400 && noCodes.errorCodes == ["cannot_generate_recovery_codes"])
        }
    }

    @Test(
        "the web door: the set-up page draws the QR code and keeps its key through a wrong password or code; the codes show once; turning off takes the password"
    )
    func webDoorSetUp() throws {
        try withAccounts(.sqlite) { server in
            let browser = Browser(port: server.port)
            _ = try browser.get("/account/signup")
            #expect(
                try browser.post("/account/signup", ["email": "ada@example.com", "password": Self.password]).status
                    == 303)
            let page = try browser.get("/account/2fa/totp")
            #expect(page.status == 200 && page.text.contains("<svg id=\"totp-qr\""), "\(page.text)")
            let secretText = try #require(
                page.text.firstMatch(of: /id="totp-secret">([A-Z2-7]+)</).map { String($0.output.1) })
            let secret = try #require(Base32.decode(secretText))
            let wrongPassword = try browser.post(
                "/account/2fa/totp", ["password": "not the password", "code": code(secret, server)])
            #expect(wrongPassword.status == 400 && wrongPassword.text.contains("not your password"))
            #expect(wrongPassword.text.contains(secretText), "the same key, to finish with")
            let wrongCode = try browser.post("/account/2fa/totp", ["password": Self.password, "code": "000000"])
            #expect(wrongCode.status == 400 && wrongCode.text.contains(secretText))
            let accounts = server.application.accounts
            #expect(try accounts.twoFactor.authenticators(userID: 1).isEmpty, "still off")
            let on = try browser.post("/account/2fa/totp", ["password": Self.password, "code": code(secret, server)])
            #expect(on.status == 200)
            #expect(on.text.matches(of: /class="recovery-code">[0-9]{8}</).count == 10, "\(on.text)")
            let again = try browser.get("/account/2fa/totp")
            #expect(again.text.contains("Two-factor sign-in is on") && !again.text.contains("recovery-code"))
            #expect(
                try browser.post("/account/2fa/totp/disable", ["password": "not the password"]).status == 400)
            #expect(try accounts.twoFactor.authenticators(userID: 1).count == 2, "still on")
            let off = try browser.post("/account/2fa/totp/disable", ["password": Self.password])
            #expect(off.status == 200 && off.text.contains("off"))
            #expect(try accounts.twoFactor.authenticators(userID: 1).isEmpty)
        }
    }

    @Test(
        "users reset-2fa, the operator's way back in: refused without --yes; then the second factor is gone and every session with it",
        arguments: Backend.allCases)
    func operatorReset(backend: Backend) throws {
        try withAccounts(backend) { server in
            let ada = try enroll(server, "ada@example.com")
            let pending = try pendingLogin(server, "ada@example.com")
            let database = server.url.rawText
            let unconfirmed = try ServerProcess.run(["users", "reset-2fa", "ada@example.com", "--database", database])
            #expect(unconfirmed.status == 3 && unconfirmed.error.contains("--yes"), "\(unconfirmed.error)")
            #expect(try server.app("GET", "account/authenticators", token: ada.token).dataArray?.count == 2)
            let unknown = try ServerProcess.run(
                ["users", "reset-2fa", "nobody@example.com", "--yes", "--database", database])
            #expect(unknown.status == 1)
            let done = try ServerProcess.run(["users", "reset-2fa", "ADA@example.com", "--yes", "--database", database])
            #expect(done.status == 0, "\(done.error)")
            // Every session ended (another process: within the session cache's second).
            #expect(
                try eventually(timeout: .seconds(4), every: .milliseconds(100)) {
                    try server.appInfo(ada.token).status == 401
                })
            #expect(
                try server.app("POST", "auth/2fa/authenticate", token: pending, json: ["code": "123456"]).status == 410)
            let login = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": Self.password])
            #expect(login.status == 200, "the password alone signs in: \(login.text)")
        }
    }

    @Test(
        "servers started together on one fresh SQLite file all start, with one secrets key between them: none reads a key file still being written, none gives up on a lock"
    )
    func startTogether() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // Started by the shell in the same instant, as a service manager starts replicas; each
        // round says which of the two were still running a second and a half later.
        let script = """
            for round in 1 2 3 4 5 6; do
              mkdir "$DIR/$round"
              for n in 1 2; do
                "$SERVER" serve --listen 127.0.0.1:0 --database "sqlite:$DIR/$round/h.sqlite" \\
                  --outbox "$DIR/$round/o" >/dev/null 2>"$DIR/$round/$n.log" &
              done
              sleep 1.5
              alive=0
              for pid in $(jobs -p); do kill -0 "$pid" 2>/dev/null && alive=$((alive + 1)); done
              echo "round $round: $alive running"
              kill $(jobs -p) 2>/dev/null; wait
              ls "$DIR/$round" | grep -c '\\.new$' || true
            done
            """
        let run = try ServerProcess.runProgram(
            "/bin/bash", ["-c", script], environment: ["SERVER": ServerProcess.binary, "DIR": directory.path],
            timeout: 60)
        #expect(run.status == 0, "\(run.error)")
        let lines = run.output.split(separator: "\n").map(String.init)
        #expect(lines.filter { $0.hasSuffix(": 2 running") }.count == 6, "\(run.output)")
        #expect(lines.filter { $0 == "0" }.count == 6, "no temporary key file is left: \(run.output)")
        for round in 1...6 {
            let errors = (1...2).compactMap {
                try? String(contentsOfFile: directory.file("\(round)/\($0).log"), encoding: .utf8)
            }
            #expect(!errors.joined().contains(" error: "), "round \(round): \(errors.joined())")
        }
    }

    @Test(
        "a database refuses a secrets key other than its own; PostgreSQL without one refuses once an account has TOTP")
    func keyMismatch() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let other = directory.file("other.key")
        _ = FileManager.default.createFile(
            atPath: other, contents: Data(String(repeating: "7a", count: 32).utf8),
            attributes: [.posixPermissions: 0o600])
        let open = directory.file("open.key")
        _ = FileManager.default.createFile(
            atPath: open, contents: Data(String(repeating: "7a", count: 32).utf8),
            attributes: [.posixPermissions: 0o644])
        // While no account has a second factor, another key simply takes over.
        try withAccounts(.postgres) { server in
            var configuration = ServerConfiguration(listen: .init(host: "127.0.0.1", port: 0), database: server.url)
            configuration.secretsKeyFile = other
            let replaced = try HomeportApplication(
                configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()))
            #expect(replaced.accounts.twoFactor.settings != nil)
        }
        try withAccounts(.postgres) { server in
            _ = try enroll(server, "ada@example.com")
            for (key, words) in [
                (other, "not the one"), (open, "may be read by others"), (nil, "same --secrets-key-file"),
            ] {
                var configuration = ServerConfiguration(listen: .init(host: "127.0.0.1", port: 0), database: server.url)
                configuration.secretsKeyFile = key
                #expect {
                    _ = try HomeportApplication(
                        configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()))
                } throws: { error in
                    String(describing: error).contains(words)
                }
            }
        }
    }
}

extension RawResponse {
    /// `data` of an allauth envelope, when it is a list.
    var dataArray: [[String: Any]]? { jsonObject?["data"] as? [[String: Any]] }
}

/// Values appended from several threads.
final class LockedArray<Element: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Element] = []

    func append(_ element: Element) { lock.withLock { storage.append(element) } }

    var values: [Element] { lock.withLock { storage } }
}
