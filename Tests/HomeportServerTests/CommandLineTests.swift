import Foundation
import HomeportCrypto
import HomeportTestSupport
import HomeportWire
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("homeport-server command line", .tags(.process, .postgres))
struct CommandLineTests {
    @Test(
        "--help explains every command and exits 0",
        arguments: [
            ["--help"], ["serve", "--help"], ["migrate", "--help"], ["identity", "show", "--help"],
            ["identity", "reset", "--help"], ["identity", "--help"], ["users", "--help"], ["users", "list", "--help"],
            ["users", "approve", "--help"],
        ])
    func help(arguments: [String]) throws {
        let result = try ServerProcess.run(arguments)
        #expect(result.status == 0)
        #expect(result.output.contains("Usage: homeport-server"))
        #expect(result.error.isEmpty)
    }

    @Test("serve --help names every option with its environment variable")
    func serveHelpListsEnvironment() throws {
        let help = try ServerProcess.run(["serve", "--help"]).output
        for name in ["--listen", "--database", "--product", "HOMEPORT_LISTEN", "HOMEPORT_DATABASE", "HOMEPORT_PRODUCT"]
        {
            #expect(help.contains(name), "\(name)")
        }
    }

    @Test(
        "a bad command line exits 2 with a message and starts nothing",
        arguments: [
            (["frobnicate"], "unknown command"),
            (["serve", "--listen", "nonsense"], "not a listen address"),
            (["serve", "--database", "mysql://u:pw@h/db"], "sqlite:PATH"),
            (["serve", "--product", "has spaces"], "not a product name"),
            (["serve", "--workers", "zero"], "--workers must be a whole number"),
            (["serve", "--bogus"], "unknown option '--bogus'"),
            (["serve", "--listen"], "--listen needs a value"),
            (["identity"], "identity needs an action"),
            (["identity", "explode"], "unknown identity action"),
            (["migrate", "extra"], "takes no arguments"),
            (["serve", "--signup", "maybe"], "--signup must be open, approval or closed"),
            (["serve", "--session-lifetime", "forever"], "--session-lifetime must be a duration"),
            (["serve", "--rate-limits", "bogus=1/1"], "--rate-limits takes NAME=N/SECONDS"),
            (["serve", "--rate-limits", "reset-per-email=1/999999999999"], "--rate-limits takes NAME=N/SECONDS"),
            (["serve", "--session-lifetime", "9223372036854775807"], "--session-lifetime must be a duration"),
            (["serve", "--public-url", "ftp://x"], "--public-url must start with http"),
            (["serve", "--forwarded-header", "x-real-ip"], "is not x-forwarded-for or forwarded"),
            (["serve", "--max-streams-per-session", "-1"], "--max-streams-per-session"),
            (["users", "promote", "a@example.com"], "unknown users action"),
            (["serve", "--listen", "/tmp/homeport-usage.sock"], "needs --public-url"),
            (
                [
                    "serve", "--listen", "/tmp/homeport-usage.sock", "--public-url", "https://a.example", "--tls-cert",
                    "c.pem",
                ],
                "TLS is the proxy's"
            ),
            (["serve", "--scheduling", "fifo"], "'fifo' is not normal or batch"),
            (["serve", "--listen", "relative.sock"], "or a Unix socket's absolute path"),
        ])
    func usageErrors(arguments: [String], message: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // Should a check break, the server would start: on a free port, in a scratch directory, and killed.
        let result = try ServerProcess.run(
            arguments, environment: ["HOMEPORT_DATA_DIR": directory.path, "HOMEPORT_LISTEN": "127.0.0.1:0"], timeout: 20
        )
        #expect(result.status == 2)
        #expect(result.error.contains(message), "\(result.error)")
        #expect(!result.error.contains("pw@"), "a password never appears in a message")
    }

    @Test("the environment configures serve when flags are absent")
    func environmentConfiguration() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ServerProcess(
            serve: [],
            environment: [
                "HOMEPORT_LISTEN": "127.0.0.1:0", "HOMEPORT_DATABASE": "sqlite:" + directory.file("env.sqlite"),
                "HOMEPORT_PRODUCT": "familyhub",
            ])
        let response = try RawHTTP.request(port: server.port, path: "/api/v1/server-identity")
        #expect(response.jsonObject?["product"] as? String == "familyhub")
        #expect(FileManager.default.fileExists(atPath: directory.file("env.sqlite")))
        #expect(server.stop() == 0)
    }

    @Test("without --database the server uses SQLite in the data directory")
    func defaultDatabase() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ServerProcess(serve: [], environment: ["HOMEPORT_DATA_DIR": directory.file("data")])
        #expect(server.banner.contains("sqlite:\(directory.file("data"))/homeport.sqlite"))
        #expect(FileManager.default.fileExists(atPath: directory.file("data/homeport.sqlite")))
        #expect(server.stop() == 0)
    }

    @Test("a port in use fails at start with exit 1 and says so")
    func portInUse() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = "sqlite:" + directory.file("h.sqlite")
        let server = try ServerProcess(serve: ["--database", database])
        let result = try ServerProcess.run(["serve", "--listen", "127.0.0.1:\(server.port)", "--database", database])
        #expect(result.status == 1)
        #expect(result.error.contains("cannot listen on 127.0.0.1:\(server.port)"))
        #expect(server.stop() == 0)
    }

    @Test("migrate applies once and then reports up to date", arguments: Backend.allCases)
    func migrate(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let first = try ServerProcess.run(["migrate", "--database", url.rawText])
        #expect(first.status == 0)
        #expect(first.output.contains("applied 1"))
        let second = try ServerProcess.run(["migrate", "--database", url.rawText])
        #expect(second.status == 0)
        #expect(second.output.contains("up to date"))
    }

    @Test(
        "identity show prints the id the route answers; reset refuses without confirmation", arguments: Backend.allCases
    )
    func identityCommands(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let before = try ServerProcess.run(["identity", "show", "--database", url.rawText])
        #expect(before.status == 0)
        #expect(before.output.contains("none yet"))

        // PostgreSQL has no key file beside it: a secrets key is given.
        let keyFile = try TemporaryDirectory()
        defer { keyFile.remove() }
        try Data((String(repeating: "5e", count: 32) + "\n").utf8).write(to: URL(fileURLWithPath: keyFile.file("key")))
        chmod(keyFile.file("key"), 0o600)
        let secrets = backend == .postgres ? ["--secrets-key-file", keyFile.file("key")] : []
        let server = try ServerProcess(serve: ["--database", url.rawText] + secrets)
        let id = try ServerProcessTests.identity(server.port)
        let challenge = "?challenge=" + IdentityProof.base64URL(Array(repeating: 1, count: 16))
        let answered = try RawHTTP.request(port: server.port, path: HomeportPath.serverIdentity + challenge)
        let publicKey = try #require(answered.jsonObject?["publicKey"] as? String)
        #expect(server.stop() == 0)
        let fingerprint = IdentityProof.fingerprint(
            sha256: Digest.sha256(try #require(IdentityProof.readKey(publicKey))))

        let shown = try ServerProcess.run(["identity", "show", "--database", url.rawText])
        #expect(shown.output.split(separator: "\n") == [Substring(id), Substring("key \(fingerprint)")])
        let json = try ServerProcess.run(["identity", "show", "--json", "--database", url.rawText])
        let object = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        #expect(object?["instanceId"] as? String == id)
        #expect(object?["publicKey"] as? String == publicKey)
        #expect(object?["keyFingerprint"] as? String == fingerprint)

        let refused = try ServerProcess.run(["identity", "reset", "--database", url.rawText])
        #expect(refused.status == 3)
        #expect(refused.error.contains("--replicas-stopped"))
        #expect(refused.error.contains("Nothing was changed"))
        let unchanged = try ServerProcess.run(["identity", "show", "--database", url.rawText])
        #expect(unchanged.output.contains(id))

        let reset = try ServerProcess.run(["identity", "reset", "--replicas-stopped", "--database", url.rawText])
        #expect(reset.status == 0)
        #expect(reset.output.contains("Removed instanceId \(id)"))
        #expect(reset.output.contains("verify every alternative address again"))

        let restarted = try ServerProcess(serve: ["--database", url.rawText] + secrets)
        let fresh = try ServerProcessTests.identity(restarted.port)
        #expect(fresh != id)
        let renewed = try RawHTTP.request(port: restarted.port, path: HomeportPath.serverIdentity + challenge)
        #expect(renewed.jsonObject?["publicKey"] as? String != nil)
        #expect(renewed.jsonObject?["publicKey"] as? String != publicKey, "a reset makes a new key with the new id")
        #expect(restarted.stop() == 0)
    }
}

@Suite("homeport-server identity reset and live replicas", .tags(.process, .postgres))
struct IdentityResetTests {
    @Test(
        "reset refuses while a replica's heartbeat is fresh, even with --replicas-stopped; --force after a crash",
        arguments: Backend.allCases)
    func refusesWhileReplicasServe(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let server = try ServerProcess(serve: ["--database", url.rawText])
        let id = try ServerProcessTests.identity(server.port)
        let refused = try ServerProcess.run(["identity", "reset", "--replicas-stopped", "--database", url.rawText])
        #expect(refused.status == 3)
        #expect(refused.error.contains("pid \(server.pid)"), "\(refused.error)")
        #expect(refused.error.contains("Nothing was changed"))
        #expect(try ServerProcessTests.identity(server.port) == id)
        #expect(try ServerProcess.run(["identity", "show", "--database", url.rawText]).output.contains(id))

        // Killed: its row stays fresh for a while, and only --force overrides it.
        server.stop(signal: SIGKILL)
        let stillRefused = try ServerProcess.run(["identity", "reset", "--replicas-stopped", "--database", url.rawText])
        #expect(stillRefused.status == 3)
        #expect(stillRefused.error.contains("--force"))
        let forced = try ServerProcess.run([
            "identity", "reset", "--replicas-stopped", "--force", "--database", url.rawText,
        ])
        #expect(forced.status == 0)
        #expect(forced.output.contains("Removed instanceId \(id)"))
    }

    @Test(
        "a damaged identity row is cleared by reset, and the next request makes a fresh one",
        arguments: Backend.allCases)
    func clearsDamagedRow(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        #expect(try ServerProcess.run(["migrate", "--database", url.rawText]).status == 0)
        let database = try url.open()
        defer { database.close() }
        try database.execute(
            "INSERT INTO server_identity (id, instance_id, created_at) VALUES (1, $1, 0)",
            [.text("not-a-uuid\u{1B}[2J")])
        let broken = try ServerProcess(serve: ["--database", url.rawText])
        #expect(try RawHTTP.request(port: broken.port, path: "/api/v1/server-identity").status == 503)
        #expect(broken.stop() == 0)

        let reset = try ServerProcess.run(["identity", "reset", "--replicas-stopped", "--database", url.rawText])
        #expect(reset.status == 0, "\(reset.error)")
        #expect(reset.output.contains("damaged"))
        #expect(!reset.output.contains("\u{1B}"), "the damaged text cannot drive the terminal")
        let fixed = try ServerProcess(serve: ["--database", url.rawText])
        #expect(try RawHTTP.request(port: fixed.port, path: "/api/v1/server-identity").status == 200)
        #expect(fixed.stop() == 0)
    }
}

@Suite("homeport-server users", .tags(.process, .postgres))
struct UsersCommandTests {
    @Test("operators list accounts and move them between approval stages", arguments: Backend.allCases)
    func approvalCommands(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        #expect(try ServerProcess.run(["users", "list", "--database", url.rawText]).output.contains("no accounts yet"))

        let server = try ServerProcess(serve: [
            "--database", url.rawText, "--password-iterations", "1000", "--outbox", directory.file("outbox"),
        ])
        func login() throws -> RawResponse {
            try RawHTTP.request(
                port: server.port, method: "POST", path: "/_allauth/app/v1/auth/login",
                headers: [("Content-Type", "application/json")],
                body: Data(#"{"email":"ada@example.com","password":"correct horse battery"}"#.utf8))
        }
        let signup = try RawHTTP.request(
            port: server.port, method: "POST", path: "/_allauth/app/v1/auth/signup",
            headers: [("Content-Type", "application/json")],
            body: Data(#"{"email":"ada@example.com","password":"correct horse battery"}"#.utf8))
        #expect(signup.status == 401, "approval is the default: the account waits")
        #expect(
            try ServerProcess.run(["users", "list", "--database", url.rawText]).output.contains(
                "waiting   ada@example.com"))

        let approve = try ServerProcess.run(["users", "approve", "ADA@example.com", "--database", url.rawText])
        #expect(approve.status == 0)
        let loggedIn = try login()
        #expect(loggedIn.status == 200)
        let token = try #require(loggedIn.sessionToken)

        #expect(try ServerProcess.run(["users", "hold", "ada@example.com", "--database", url.rawText]).status == 0)
        let info = try RawHTTP.request(
            port: server.port, path: "/api/v1/app-info", headers: [("X-Session-Token", token)])
        #expect(info.status == 401, "holding ends the sessions at once")
        #expect(try login().status == 401)

        let json = try ServerProcess.run(["users", "list", "--json", "--database", url.rawText])
        let accounts = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [[String: Any]]
        #expect(accounts?.first?["approval"] as? String == "held")
        #expect(accounts?.first?["email"] as? String == "ada@example.com")

        #expect(accounts?.first?["emailVerified"] as? Bool == false, "verification was off: nobody verified it")

        let missing = try ServerProcess.run(["users", "reject", "nobody@example.com", "--database", url.rawText])
        #expect(missing.status == 1)
        #expect(missing.error.contains("no account uses"))
        #expect(try ServerProcess.run(["users", "approve", "--database", url.rawText]).status == 2)
        #expect(server.stop() == 0)
    }
}

@Suite("homeport-server users verify", .tags(.process, .postgres))
struct UsersVerifyCommandTests {
    @Test("an operator marks an address verified; its next sign-in needs no code")
    func operatorVerifies() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = "sqlite:" + directory.file("h.sqlite")
        let server = try ServerProcess(serve: [
            "--database", database, "--signup", "open", "--email-verification", "code", "--password-iterations",
            "1000", "--outbox", directory.file("outbox"),
        ])
        func signIn(_ path: String) throws -> RawResponse {
            try RawHTTP.request(
                port: server.port, method: "POST", path: "/_allauth/app/v1/" + path,
                headers: [("Content-Type", "application/json")],
                body: Data(#"{"email":"ada@example.com","password":"correct horse battery"}"#.utf8))
        }
        #expect(try signIn("auth/signup").status == 401, "a code is due")
        let verify = try ServerProcess.run(["users", "verify", "ADA@example.com", "--database", database])
        #expect(verify.status == 0, "\(verify.error)")
        let json = try ServerProcess.run(["users", "list", "--json", "--database", database])
        let accounts = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [[String: Any]]
        #expect(accounts?.first?["emailVerified"] as? Bool == true)
        let login = try signIn("auth/login")
        #expect(login.status == 200 && login.sessionToken != nil, "\(login.text)")

        let missing = try ServerProcess.run(["users", "verify", "nobody@example.com", "--database", database])
        #expect(missing.status == 1 && missing.error.contains("no account uses"))
        #expect(server.stop() == 0)
    }
}

@Suite("homeport-server serve refuses a verification window shorter than a code's life", .tags(.process, .postgres))
struct VerificationWindowTests {
    @Test("verification-attempt-per-session with a window under 900 s is a usage error")
    func shortWindow() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let result = try ServerProcess.run([
            "serve", "--database", "sqlite:" + directory.file("h.sqlite"), "--email-verification", "code",
            "--rate-limits", "verification-attempt-per-session=3/2",
        ])
        #expect(result.status == 2)
        #expect(result.error.contains("at least 900 seconds"), "\(result.error)")
    }
}
