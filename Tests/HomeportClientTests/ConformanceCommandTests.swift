import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

/// `homeport conformance` run as a process against a real homeport-server, a stock
/// django-allauth, servers that lie, and bad command lines.
@Suite("homeport conformance", .tags(.process, .interop))
struct ConformanceCommandTests {
    typealias Run = (status: Int32, output: String, error: String)

    static let email = "ada@example.com"
    static let temporaryPassword = "a temporary good password"
    /// Every check, in the order of the table.
    static let ids = [
        "identity-shape", "identity-headers", "identity-credential-blind", "identity-proof", "app-info-anonymous",
        "standing-stranger",
        "app-door-config", "app-door-invalid-token", "app-door-no-token", "app-door-empty-token", "handoff", "login",
        "session-status", "app-info-signed-in", "api-header-only", "push-registration", "catalogue-etag", "mutes",
        "stream", "login-while-signed-in", "second-login", "password-change", "household", "logout", "wrong-password",
        "invitation-refused", "verification-by-code",
    ]
    /// The checks that need `--mailbox` (skipped without it).
    static let mailboxChecks: Set = ["verification-by-code"]
    /// The checks that need the identity route and the `/api/v1` prefix.
    static let prefixChecks: Set = [
        "identity-shape", "identity-headers", "identity-credential-blind", "identity-proof", "app-info-anonymous",
        "standing-stranger",
        "app-info-signed-in", "api-header-only", "push-registration", "catalogue-etag", "mutes", "stream",
        "household", "invitation-refused",
    ]
    /// The checks of Homeport's own extensions of the app door (older-server on django-allauth).
    static let extensionChecks: Set = ["handoff"]
    /// The checks that sign the test account in.
    static let sessionChecks: Set = [
        "login", "session-status", "app-info-signed-in", "api-header-only", "push-registration", "catalogue-etag",
        "mutes", "stream", "login-while-signed-in", "second-login", "password-change", "household", "logout",
        "wrong-password",
    ]

    func conformance(_ url: String, _ extra: [String] = [], input: String = "", timeout: Double = 120) throws -> Run {
        try ServerProcess.runClient(["conformance", url] + extra, input: input, timeout: timeout)
    }

    /// The rows of a `--json` run, by check id: (result, detail).
    func rows(_ run: Run) throws -> [String: (result: String, detail: String)] {
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any],
            "\(run.output)\(run.error)")
        let checks = try #require(object["checks"] as? [[String: Any]])
        #expect(checks.map { $0["id"] as? String } == Self.ids)
        #expect(object["passed"] as? Bool == (run.status == 0))
        var rows: [String: (String, String)] = [:]
        for check in checks {
            #expect(check["title"] is String)
            rows[check["id"] as? String ?? ""] = (check["result"] as? String ?? "", check["detail"] as? String ?? "")
        }
        return rows
    }

    /// The rows of a table run, by check id: the result word at the start of the check's line.
    func tableRows(_ run: Run) -> [String: String] {
        var rows: [String: String] = [:]
        for line in run.output.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count > 2, Self.ids.contains(String(words[1])) { rows[String(words[1])] = String(words[0]) }
        }
        return rows
    }

    /// Signs the test account up at the app door on `port` (open sign-up), and signs that session out.
    func signUp(port: Int) throws {
        let body = try JSONSerialization.data(withJSONObject: ["email": Self.email, "password": password])
        let answer = try RawHTTP.request(
            port: port, method: "POST", path: AllauthAppPath.path(AllauthAppPath.signup),
            headers: [("Content-Type", "application/json")], body: body)
        #expect(answer.status == 200, "\(answer.text)")
        let json = answer.jsonObject
        let token = try #require((json?["meta"] as? [String: Any])?["session_token"] as? String)
        _ = try RawHTTP.request(
            port: port, method: "DELETE", path: AllauthAppPath.path(AllauthAppPath.session),
            headers: [(HomeportHeader.sessionToken, token)])
    }

    /// Whether `text` holds something shaped like a session token: 32 or more base64url characters
    /// in a row, once the UUIDs (the public instance id) are taken out.
    func holdsTokenLike(_ text: String) -> Bool {
        let uuid = #"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"#
        // A public key's fingerprint is meant to be read and compared.
        let fingerprint = #"SHA256:[A-Za-z0-9+/]{43}"#
        return text.replacingOccurrences(of: uuid, with: " ", options: .regularExpression)
            .replacingOccurrences(of: fingerprint, with: " ", options: .regularExpression)
            .range(of: #"[A-Za-z0-9_-]{32,}"#, options: .regularExpression) != nil
    }

    @Test("against homeport-server every row passes (exit 0), and nothing secret is printed")
    func homeportServer() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ServerProcess(serve: [
            "--database", "sqlite:" + directory.file("h.sqlite"), "--signup", "open", "--password-iterations", "1000",
            "--outbox", directory.file("outbox"),
        ])
        try signUp(port: server.port)
        let url = "http://127.0.0.1:\(server.port)"
        let account = ["--allow-http", "--email", Self.email, "--password-stdin"]

        let table = try conformance(
            url, account + ["--change-password"], input: password + "\n" + Self.temporaryPassword + "\n")
        #expect(table.status == 0, "\(table.output)\(table.error)")
        let results = tableRows(table)
        #expect(results.count == Self.ids.count, "\(table.output)")
        #expect(
            results.allSatisfy { $0.value == (Self.mailboxChecks.contains($0.key) ? "skipped" : "pass") },
            "\(table.output)")
        #expect(table.output.contains("27 checks: 26 pass, 0 fail, 0 older-server, 1 skipped"))
        #expect(table.output.contains("browser session from /account/login"), "a real web-door session was refused")
        for text in [table.output, table.error] {
            #expect(!text.contains(password) && !text.contains(Self.temporaryPassword))
            #expect(!holdsTokenLike(text), "\(text)")
        }

        // The password was changed back: the same account runs again, as JSON, without the change.
        let json = try conformance(url, account + ["--json"], input: password + "\n")
        #expect(json.status == 0, "\(json.output)\(json.error)")
        for (id, row) in try rows(json) {
            let skipped = id == "password-change" || Self.mailboxChecks.contains(id)
            #expect(row.result == (skipped ? "skipped" : "pass"), "\(id): \(row.detail)")
        }

        let anonymous = try conformance(url, ["--allow-http", "--json"])
        #expect(anonymous.status == 0, "\(anonymous.output)\(anonymous.error)")
        for (id, row) in try rows(anonymous) {
            let skipped = Self.sessionChecks.contains(id) || Self.mailboxChecks.contains(id)
            #expect(row.result == (skipped ? "skipped" : "pass"), "\(id): \(row.detail)")
        }
    }

    @Test("against a stock django-allauth the identity and API rows are older-server; the app door passes (exit 0)")
    func allauth() throws {
        let peer = try AllauthPeer()
        try signUp(port: peer.port)
        let run = try conformance(
            "http://127.0.0.1:\(peer.port)",
            ["--allow-http", "--email", Self.email, "--password-stdin", "--change-password", "--json"],
            input: password + "\n" + Self.temporaryPassword + "\n")
        #expect(run.status == 0, "\(run.output)\(run.error)")
        for (id, row) in try rows(run) {
            let expected =
                Self.prefixChecks.contains(id) || Self.extensionChecks.contains(id)
                ? "older-server" : Self.mailboxChecks.contains(id) ? "skipped" : "pass"
            #expect(row.result == expected, "\(id): \(row.detail)")
        }
        let table = try conformance("http://127.0.0.1:\(peer.port)", ["--allow-http"])
        #expect(table.status == 0, "\(table.output)")
        #expect(table.output.contains("404: no identity route"))
    }

    @Test(
        "verification by code with --mailbox: a fresh address, a wrong code refused, the mailed code signs in, the account deleted after"
    )
    func verificationByCode() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let outbox = directory.file("outbox")
        try FileManager.default.createDirectory(atPath: outbox, withIntermediateDirectories: true)
        let database = "sqlite:" + directory.file("h.sqlite")
        let server = try ServerProcess(serve: [
            "--database", database, "--signup", "open", "--password-iterations", "1000", "--outbox", outbox,
            "--email-verification", "code",
        ])
        let url = "http://127.0.0.1:\(server.port)"
        let run = try conformance(url, ["--allow-http", "--mailbox", outbox, "--json"])
        #expect(run.status == 0, "\(run.output)\(run.error)")
        let row = try #require(try rows(run)["verification-by-code"])
        #expect(row.result == "pass" && row.detail.contains("deleted"), "\(row.detail)")
        let accounts = try ServerProcess.run(["users", "list", "--json", "--database", database])
        #expect(!accounts.output.contains("conformance-"), "the account made for the check is gone")
        // Without verification by code the row is skipped; a mailbox that is not a directory is a usage error.
        let plain = try ServerProcess(serve: ["--database", "sqlite:" + directory.file("p.sqlite"), "--signup", "open"])
        let skipped = try conformance(
            "http://127.0.0.1:\(plain.port)", ["--allow-http", "--mailbox", outbox, "--json"])
        #expect(try rows(skipped)["verification-by-code"]?.result == "skipped")
        #expect(try conformance(url, ["--allow-http", "--mailbox", directory.file("none")]).status == 2)
    }

    @Test("over HTTPS the --ca-file CA is trusted for this run only; without it every request fails, nothing skipped")
    func privateCA() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let server = try ServerProcess(serve: [
            "--database", "sqlite:" + directory.file("h.sqlite"), "--signup", "open", "--password-iterations", "1000",
            "--outbox", directory.file("outbox"), "--tls-cert", certificates.certificateFile, "--tls-key",
            certificates.keyFile,
        ])
        let url = "https://127.0.0.1:\(server.port)"
        let signup = try ServerProcess.runProgram(
            "/usr/bin/curl",
            [
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", certificates.caFile, "-H",
                "Content-Type: application/json", "--data-binary",
                #"{"email":"ada@example.com","password":"correct horse battery"}"#,
                url + AllauthAppPath.path(AllauthAppPath.signup),
            ])
        #expect(signup.output == "200")

        let trusted = try conformance(
            url, ["--ca-file", certificates.caFile, "--email", Self.email, "--password-stdin", "--json"],
            input: password + "\n")
        #expect(trusted.status == 0, "\(trusted.output)\(trusted.error)")
        for (id, row) in try rows(trusted) {
            let expected =
                ["password-change", "app-door-empty-token"].contains(id) || Self.mailboxChecks.contains(id)
                ? "skipped" : "pass"
            #expect(row.result == expected, "\(id): \(row.detail)")
        }

        let untrusted = try conformance(url, ["--json"])
        #expect(untrusted.status == 1)
        let rows = try rows(untrusted)
        #expect(rows["identity-shape"]?.result == "fail")
        #expect(rows["identity-shape"]?.detail.contains("TLS") == true, "\(rows["identity-shape"]?.detail ?? "")")
        #expect(rows["app-door-config"]?.result == "fail")
    }

    @Test("web pages, a bad identity, garbage and silence fail the matching rows (exit 1), never crash or hang")
    func lyingServers() throws {
        let page = try RecordingListener(
            behaviour: .respond(
                status: 200, headers: ["Content-Type": "text/html"],
                body: "<!doctype html><html><body>Sign in to the proxy</body></html>"))
        let html = try rows(try conformance(page.url, ["--allow-http", "--json"]))
        for id in ["identity-shape", "app-info-anonymous", "standing-stranger", "app-door-config", "app-door-no-token"]
        {
            #expect(html[id]?.result == "fail", "\(id)")
            #expect(html[id]?.detail.contains("web page") == true, "\(id): \(html[id]?.detail ?? "")")
        }

        let identityHeaders = [
            "Content-Type": "application/json", "Cache-Control": "no-store", "Set-Cookie": "tracker=1; Path=/",
        ]
        let liar = try RecordingListener(
            behaviour: .routes([
                HomeportPath.serverIdentity: .init(
                    200, identityHeaders, #"{"instanceId":"not-a-uuid","product":"homeport","protocolVersion":"1"}"#)
            ]))
        let lies = try conformance(liar.url, ["--allow-http", "--json"])
        #expect(lies.status == 1)
        let lied = try rows(lies)
        #expect(
            lied["identity-shape"]?.detail.contains("not a UUID") == true, "\(lied["identity-shape"]?.detail ?? "")")
        #expect(lied["identity-shape"]?.detail.contains("not the integer 1") == true)
        #expect(lied["identity-headers"]?.result == "fail")
        #expect(lied["identity-headers"]?.detail.contains("sets a cookie (tracker)") == true)
        #expect(lied["identity-credential-blind"]?.result == "fail", "it sets a cookie with credentials too")

        let garbage = try RecordingListener(
            behaviour: .respond(
                status: 200, headers: ["Content-Type": "application/json"], body: "\u{1B}]0;owned\u{7}{no"))
        let garbled = try conformance(garbage.url, ["--allow-http"])
        #expect(garbled.status == 1)
        #expect(tableRows(garbled)["identity-shape"] == "fail")
        #expect(garbled.output.contains("not a JSON object"))
        #expect(!garbled.output.contains("\u{1B}"), "no terminal control reaches the table")

        let silent = try RecordingListener(behaviour: .blackhole)
        let started = Date()
        let hung = try conformance(
            silent.url, ["--allow-http", "--timeout", "1", "--email", Self.email, "--password-stdin", "--json"],
            input: password + "\n", timeout: 60)
        #expect(Date().timeIntervalSince(started) < 20, "three silences stop the run")
        #expect(hung.status == 1)
        let unanswered = try rows(hung)
        #expect(unanswered["identity-shape"]?.detail.contains("no answer") == true)
        #expect(unanswered["login"]?.detail.contains("not sent") == true, "\(unanswered["login"]?.detail ?? "")")
        #expect(!silent.requests.contains { $0.contains(password) }, "no password went to a server that hangs")
    }

    @Test("servers that lie about the handoff fail its row: a web page as the way back, a page that is not one")
    func lyingHandoffs() throws {
        let path = AllauthAppPath.path(AllauthAppPath.handoff)
        let json = ["Content-Type": "application/json"]
        for (answer, expected) in [
            // Hands the code to any way back, a web site's included.
            (
                #"{"status":200,"data":{"url":"https://liar.invalid/account/handoff/x","expires_in":120}}"#,
                "a web page as the way back answered 200"
            ),
            // A page to open that a browser would run, not show.
            (#"{"status":200,"data":{"url":"javascript:alert(1)","expires_in":120}}"#, "not a web page to open"),
            (#"{"status":200,"data":{"url":"https://liar.invalid/h","expires_in":0}}"#, "data.expires_in is 0"),
            (#"{"status":200}"#, "200 without data.url and data.expires_in"),
        ] {
            let liar = try RecordingListener(behaviour: .routes([path: .init(200, json, answer)]))
            let run = try conformance(liar.url, ["--allow-http", "--json"])
            #expect(run.status == 1)
            let row = try rows(run)["handoff"]
            #expect(row?.result == "fail", "\(answer)")
            #expect(row?.detail.contains(expected) == true, "\(answer): \(row?.detail ?? "")")
        }
    }

    @Test(
        "a made-up invitation: a server that signs it in, or says more than invalid_invitation, fails; one without invitations is older"
    )
    func lyingInvitations() throws {
        let json = ["Content-Type": "application/json"]
        let identity = RecordingListener.Canned(
            200, json.merging(["Cache-Control": "no-store"]) { $1 },
            #"{"instanceId":"0f6e3c52-8d4b-4f55-9a4c-2f0c2b1e7a11","product":"homeport","protocolVersion":1}"#)
        for (status, answer, result, expected) in [
            (
                200,
                #"{"status":200,"data":{},"meta":{"is_authenticated":true,"session_token":"t0k3n-of-a-liar-t0k3n-of-a-liar"}}"#,
                "fail", "session token for a made-up invitation"
            ),
            (
                400,
                #"{"status":400,"errors":[{"code":"invalid_invitation","param":"invitation"},{"code":"password_too_short","param":"password"}]}"#,
                "fail", "must be the one error"
            ),
            (
                400, #"{"status":400,"errors":[{"code":"password_too_short","param":"password"}]}"#, "older-server",
                "without invitations"
            ),
        ] {
            let liar = try RecordingListener(
                behaviour: .routes([
                    HomeportPath.serverIdentity: identity,
                    AllauthAppPath.path(AllauthAppPath.signup): .init(status, json, answer),
                ]))
            let row = try rows(try conformance(liar.url, ["--allow-http", "--json"]))["invitation-refused"]
            #expect(row?.result == result, "\(answer): \(row?.detail ?? "")")
            #expect(row?.detail.contains(expected) == true, "\(answer): \(row?.detail ?? "")")
            #expect(row?.detail.contains("t0k3n") == false, "a token is never printed")
        }
    }

    @Test("misuse is a usage error (exit 2) saying what to fix; --help explains every check and flag")
    func usage() throws {
        for (arguments, input, message) in [
            (["http://127.0.0.1:1", "--allow-http", "--password-stdin"], "", "--password-stdin needs --email"),
            (["http://127.0.0.1:1", "--allow-http", "--email", Self.email], "", "--email needs --password-stdin"),
            (["http://127.0.0.1:1", "--allow-http", "--change-password"], "", "--change-password needs --email"),
            (["http://127.0.0.1:1"], "", "add --allow-http"),
            (["ftp://example.net"], "", "not an http:// or https:// address"),
            (["https://example.net", "--timeout", "soon"], "", "--timeout needs a number"),
            (["https://example.net", "--timeout", "0"], "", "--timeout needs a number"),
            (["https://example.net", "--ca-file", "/nonexistent/ca.pem"], "", "--ca-file /nonexistent/ca.pem"),
            (["https://example.net", "--frobnicate"], "", "unknown option '--frobnicate'"),
            (["https://example.net", "--email", Self.email, "--password-stdin"], "", "no password on standard input"),
            (
                ["https://example.net", "--email", Self.email, "--password-stdin", "--change-password"],
                password + "\n" + password + "\n", "differs from the first"
            ),
        ] {
            let run = try ServerProcess.runClient(["conformance"] + arguments, input: input)
            #expect(run.status == 2, "\(arguments)")
            #expect(run.error.contains(message), "\(arguments): \(run.error)")
            #expect(run.output.isEmpty, "\(arguments)")
        }
        let missing = try ServerProcess.runClient(["conformance"])
        #expect(missing.status == 2 && missing.error.contains("takes URL"))

        let help = try ServerProcess.runClient(["conformance", "--help"])
        #expect(help.status == 0)
        for word in Self.ids + ["--email", "--password-stdin", "--change-password", "--timeout", "--ca-file", "--json"]
        {
            #expect(help.output.contains(word), "\(word)")
        }
        #expect(help.output.contains("older-server") && help.output.contains("Exit codes"))
        #expect(try ServerProcess.runClient(["--help"]).output.contains("conformance URL"))
    }
}
