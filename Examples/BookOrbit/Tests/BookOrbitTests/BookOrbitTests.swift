import BookOrbit
import Foundation
import HomeportClient
import HomeportTestSupport
import Testing

/// BookOrbit as its users meet it: a real `bookorbit-server` on one SQLite database, served on
/// two loopback addresses (the "home" and the "public" one), the APNs stand-in behind it, and
/// HomeportClient in front.
@Suite("BookOrbit, a product built on Homeport, end to end")
struct BookOrbitTests {
    static let device = String(repeating: "ab", count: 32)
    static let password = "correct horse battery"

    /// The `bookorbit-server` built beside this test bundle.
    static var binary: String {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = bundle.deletingLastPathComponent()
        while directory.path.contains(".xctest") { directory = directory.deletingLastPathComponent() }
        return directory.appendingPathComponent("bookorbit-server").path
    }

    /// One installation: a process per host on one database, pushing to `standIn`.
    final class Installation {
        let files: TemporaryDirectory
        let standIn: APNsStandIn
        var processes: [String: ServerProcess] = [:]

        init(hosts: [String], arguments: [String] = []) throws {
            files = try TemporaryDirectory()
            standIn = try APNsStandIn()
            let common =
                [
                    "--database", "sqlite:" + files.file("bookorbit.sqlite"), "--signup", "open",
                    "--password-iterations", "1000", "--outbox", files.file("outbox"),
                ] + standIn.serverArguments
            for host in hosts {
                processes[host] = try ServerProcess(
                    binary: BookOrbitTests.binary, serve: common + arguments + ["--listen", "\(host):0"])
            }
        }

        deinit { files.remove() }

        func address(_ host: String) throws -> ServerAddress {
            try ServerAddress(parsing: "http://\(host):\(processes[host]?.port ?? 0)", allowHTTP: true)
        }

        var database: String { "sqlite:" + files.file("bookorbit.sqlite") }
    }

    func client(_ home: TemporaryDirectory) throws -> HomeportClient {
        var configuration = ClientConfiguration()
        configuration.probeDeadline = .seconds(2)
        configuration.requestDeadline = .seconds(5)
        configuration.pushAppDataKey = "bookorbit"
        configuration.deepLinkScheme = "bookorbit"
        return HomeportClient(
            directory: try ServerDirectory(directory: home.path), vault: try FileVault(directory: home.file("vault")),
            transport: HomeportClient.defaultTransport(), configuration: configuration, networkPath: "home")
    }

    /// Signs ada up at `address` (open sign-up) and returns the enrolled record.
    func signUp(_ client: HomeportClient, at address: ServerAddress) async throws -> ServerRecord {
        guard
            case .signedIn(let record) = try await client.signup(
                at: address, email: "ada@example.com", password: Self.password)
        else { throw RawHTTPError("no session at \(address.url)") }
        return record
    }

    /// A session token from a sign-up sent as raw HTTP (for requests no client would send).
    func rawToken(port: Int, email: String) throws -> String {
        let answer = try RawHTTP.request(
            port: port, method: "POST", path: "/_allauth/app/v1/auth/signup",
            headers: [("Content-Type", "application/json")],
            body: Data(#"{"email":"\#(email)","password":"\#(Self.password)"}"#.utf8))
        return try #require((answer.jsonObject?["meta"] as? [String: Any])?["session_token"] as? String)
    }

    func json(_ answer: HomeportClient.Answer) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: answer.response.body)) as? [String: Any] ?? [:]
    }

    @Test(
        "sign in at one address, add a book through a verified alternative, and hear the loan at APNs and on the stream"
    )
    func readingListAndLoan() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let books = try Installation(hosts: ["127.0.0.1", "127.0.0.2"])
        let client = try client(home)
        let record = try await signUp(client, at: try books.address("127.0.0.1"))
        #expect(record.product == "bookorbit")
        _ = try await client.setDeviceToken(Self.device, environment: .sandbox)
        _ = try await client.addAddress(try books.address("127.0.0.2"), to: record.key)

        // The home address goes away: the book goes through the verified alternative.
        books.processes["127.0.0.1"]?.stop()
        let added = try await client.send(
            "POST", "/api/v1/books", to: record.key, json: Data(#"{"title":"The Left Hand of Darkness"}"#.utf8))
        #expect(added.response.status == 201)
        #expect(added.via.url == (try books.address("127.0.0.2")).url)
        let bookID = try #require(json(added)["id"] as? Int)

        // The stream is open before the loan starts, so its notification arrives on it.
        let stream = client.notificationStream(record.key)
        var events = stream.makeAsyncIterator()
        guard case .connected = try await events.next() else {
            Issue.record("the stream did not connect")
            return
        }
        let loan = try await client.send("POST", "/api/v1/books/\(bookID)/loan", to: record.key)
        #expect(loan.response.status == 202)
        let loanID = try #require((json(loan)["loan"] as? [String: Any])?["id"] as? Int)
        let second = try await client.send("POST", "/api/v1/books/\(bookID)/loan", to: record.key)
        #expect(second.response.status == 409, "one loan per book")

        var heard: StreamNotification?
        while heard == nil, let event = try await events.next() {
            if case .notification(let notification) = event { heard = notification }
        }
        let notification = try #require(heard)
        #expect(notification.c == BookOrbitCode.loanReady)
        #expect(notification.thread == "loan:\(loanID)")
        #expect(notification.object == Int64(loanID))
        #expect(notification.s == record.instanceID)

        #expect(books.standIn.waitForRequests(1))
        let payload = try #require(books.standIn.requests().first?["payload"] as? [String: Any])
        let appData = try #require(payload["bookorbit"] as? [String: Any])
        #expect(appData["s"] as? String == record.instanceID?.description)
        #expect(appData["c"] as? String == BookOrbitCode.loanReady)
        let routed = try await client.receivePush(try JSONSerialization.data(withJSONObject: payload))
        #expect(routed.server == record.key)
        #expect(routed.deepLink?.absoluteString == "bookorbit://session/\(loanID)")
        #expect(routed.threadID == "\(record.key):loan:\(loanID)")

        let list = try await client.send("GET", "/api/v1/books", to: record.key)
        let listed = try #require((json(list)["books"] as? [[String: Any]])?.first)
        #expect((listed["loan"] as? [String: Any])?["state"] as? String == "ready")
    }

    @Test(
        "a loan is ready exactly when its owner is notified: a notification that fails for the 2nd of 3 loans holds back that loan alone, and each is notified once"
    )
    func loansNotifiedInTheirTransaction() async throws {
        let books = try Installation(hosts: ["127.0.0.1"])
        let file = books.files.file("bookorbit.sqlite")
        /// Runs SQL on the server's database beside it, as an operator's shell would.
        func sql(_ statement: String) throws -> String {
            let run = try ServerProcess.runProgram("/usr/bin/sqlite3", [file, ".timeout 10000", statement])
            guard run.status == 0 else { throw RawHTTPError("sqlite3: \(run.error)") }
            return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        // The notification of "Second" fails while the flag is up: a trigger the server does not know.
        _ = try sql(
            """
            CREATE TABLE test_fail (up INTEGER); INSERT INTO test_fail VALUES (1);
            CREATE TRIGGER test_fail_second BEFORE INSERT ON notifications
            WHEN NEW.body LIKE 'Second%' AND EXISTS (SELECT 1 FROM test_fail)
            BEGIN SELECT RAISE(ABORT, 'the notifier failed'); END;
            """)
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let client = try client(home)
        let record = try await signUp(client, at: try books.address("127.0.0.1"))
        for title in ["First", "Second", "Third"] {
            let added = try await client.send(
                "POST", "/api/v1/books", to: record.localID, json: Data(#"{"title":"\#(title)"}"#.utf8))
            let id = try #require(json(added)["id"] as? Int)
            #expect(
                try await client.send("POST", "/api/v1/books/\(id)/loan", to: record.localID).response.status == 202)
        }
        let states =
            "SELECT b.title || '=' || l.state FROM bookorbit_loans l JOIN bookorbit_books b ON b.id = l.book_id ORDER BY l.id"
        let notified = "SELECT group_concat(object_id) FROM (SELECT object_id FROM notifications ORDER BY object_id)"
        #expect(
            await eventually(timeout: .seconds(20)) { () async -> Bool in
                (try? sql(states)) == "First=ready\nSecond=preparing\nThird=ready"
            }, "the loans after the one that failed are readied and notified all the same")
        #expect(try sql(notified) == "1,3")
        // Tried again while it fails: still preparing, never notified twice.
        try await Task.sleep(for: .milliseconds(600))
        #expect(try sql(states) == "First=ready\nSecond=preparing\nThird=ready")

        _ = try sql("DELETE FROM test_fail")
        #expect(
            await eventually(timeout: .seconds(20)) { () async -> Bool in (try? sql(notified)) == "1,2,3" },
            "once the notifier works, the held-back loan is notified")
        #expect(try sql(states) == "First=ready\nSecond=ready\nThird=ready")
        try await Task.sleep(for: .milliseconds(600))
        #expect(try sql(notified) == "1,2,3", "each loan notified once")
    }

    @Test("a signed-out token gets 401 on the product's route; the same token as a cookie is refused")
    func sessionRules() async throws {
        let books = try Installation(hosts: ["127.0.0.1"])
        let port = try #require(books.processes["127.0.0.1"]?.port)
        let token = try rawToken(port: port, email: "bob@example.com")
        #expect(
            try RawHTTP.request(port: port, path: "/api/v1/books", headers: [("X-Session-Token", token)]).status == 200)
        let cookie = try RawHTTP.request(
            port: port, path: "/api/v1/books", headers: [("Cookie", "homeport_session=\(token); sessionid=\(token)")])
        #expect(cookie.status == 401)
        let twice = try RawHTTP.request(
            port: port, path: "/api/v1/books", headers: [("X-Session-Token", token), ("X-Session-Token", token)])
        #expect(twice.status == 401)

        _ = try RawHTTP.request(
            port: port, method: "DELETE", path: "/_allauth/app/v1/auth/session", headers: [("X-Session-Token", token)])
        let after = try RawHTTP.request(port: port, path: "/api/v1/books", headers: [("X-Session-Token", token)])
        #expect(after.status == 401)
        #expect((after.jsonObject?["error"] as? [String: Any])?["code"] as? String == "not_authenticated")
        #expect(after.header("Cache-Control") == "no-store")
    }

    @Test("the books budget refuses and says when to retry; bad input costs nothing and changes nothing")
    func budget() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let books = try Installation(
            hosts: ["127.0.0.1"], arguments: ["--rate-limits", "books-added-per-account=2/3600"])
        let client = try client(home)
        let record = try await signUp(client, at: try books.address("127.0.0.1"))
        let bad = try await client.send("POST", "/api/v1/books", to: record.key, json: Data(#"{"title":""}"#.utf8))
        #expect(bad.response.status == 400)
        let notJSON = try await client.send("POST", "/api/v1/books", to: record.key, json: Data("{".utf8))
        #expect(notJSON.response.status == 400)
        // A title a notification could not carry (a right-to-left override, a zero-width space):
        // refused here, so that its loan's notification never fails.
        for hidden in [#"Evil\u202Etxt.exe"#, #"A\u200Bbook"#] {
            let refused = try await client.send(
                "POST", "/api/v1/books", to: record.key, json: Data(#"{"title":"\#(hidden)"}"#.utf8))
            #expect(refused.response.status == 400, "\(hidden)")
        }
        for title in ["One", "Two"] {
            let added = try await client.send(
                "POST", "/api/v1/books", to: record.key, json: Data(#"{"title":"\#(title)"}"#.utf8))
            #expect(added.response.status == 201)
        }
        let refused = try await client.send(
            "POST", "/api/v1/books", to: record.key, json: Data(#"{"title":"Three"}"#.utf8))
        #expect(refused.response.status == 429)
        let retry = try #require(refused.response.headers["retry-after"].flatMap(Int.init))
        #expect((1...3600).contains(retry))
        let list = try await client.send("GET", "/api/v1/books", to: record.key)
        #expect((json(list)["books"] as? [[String: Any]])?.count == 2)
    }

    @Test("another account's book is not found, never deleted")
    func ownership() async throws {
        let books = try Installation(hosts: ["127.0.0.1"])
        let port = try #require(books.processes["127.0.0.1"]?.port)
        let ada = try rawToken(port: port, email: "ada@example.com")
        let eve = try rawToken(port: port, email: "eve@example.com")
        let added = try RawHTTP.request(
            port: port, method: "POST", path: "/api/v1/books",
            headers: [("X-Session-Token", ada), ("Content-Type", "application/json")],
            body: Data(#"{"title":"Mine"}"#.utf8))
        let id = try #require(added.jsonObject?["id"] as? Int)
        for (method, path) in [("DELETE", "/api/v1/books/\(id)"), ("POST", "/api/v1/books/\(id)/loan")] {
            let stolen = try RawHTTP.request(
                port: port, method: method, path: path, headers: [("X-Session-Token", eve)])
            #expect(stolen.status == 404, "\(method) \(path)")
        }
        let missing = try RawHTTP.request(
            port: port, method: "DELETE", path: "/api/v1/books/999999", headers: [("X-Session-Token", eve)])
        let stolen = try RawHTTP.request(
            port: port, method: "DELETE", path: "/api/v1/books/\(id)", headers: [("X-Session-Token", eve)])
        #expect(missing.status == 404 && missing.text == stolen.text, "the same answer as a book never made")
        let list = try RawHTTP.request(port: port, path: "/api/v1/books", headers: [("X-Session-Token", ada)])
        #expect((list.jsonObject?["books"] as? [[String: Any]])?.count == 1)
    }

    @Test("bookorbit-server has every homeport-server command; migrate applies its own migrations apart")
    func operatorFace() throws {
        let help = try ServerProcess.runProgram(Self.binary, ["--help"])
        #expect(help.status == 0 && help.output.contains("Usage: bookorbit-server COMMAND"))
        for command in [
            ["serve", "--help"], ["migrate", "--help"], ["users", "--help"], ["identity", "show", "--help"],
            ["push", "send", "--help"],
        ] {
            let answer = try ServerProcess.runProgram(Self.binary, command)
            #expect(answer.status == 0 && answer.output.contains("Usage: bookorbit-server"), "\(command)")
            #expect(!answer.output.contains("homeport-server"), "\(command)")
        }
        let files = try TemporaryDirectory()
        defer { files.remove() }
        let database = "sqlite:" + files.file("b.sqlite")
        let migrated = try ServerProcess.runProgram(Self.binary, ["migrate", "--database", database])
        #expect(migrated.status == 0)
        #expect(migrated.output.contains("[bookorbit]: applied 1"))
        let again = try ServerProcess.runProgram(Self.binary, ["migrate", "--database", database])
        #expect(again.output.contains("[bookorbit]: up to date (schema version 1)"))
        let unknownLimit = try ServerProcess.runProgram(
            Self.binary, ["serve", "--database", database, "--rate-limits", "books-per-day=1/60"])
        #expect(unknownLimit.status == 2 && unknownLimit.error.contains("books-added-per-account"))
        // The product's name replaces Homeport's in messages, never in data: a key named after
        // Homeport's command is listed under its own name.
        let made = try ServerProcess.runProgram(
            Self.binary, ["product-keys", "create", "homeport-server", "--database", database])
        #expect(made.status == 0, "\(made.error)")
        let listed = try ServerProcess.runProgram(
            Self.binary, ["product-keys", "list", "--json", "--database", database])
        #expect(listed.status == 0 && listed.output.contains(#""name":"homeport-server""#), "\(listed.output)")
        // A product's executable adds no push gateway: that is homeport-server's.
        let gateway = try ServerProcess.runProgram(Self.binary, ["gateway", "--help"])
        #expect(gateway.status == 2 && gateway.error.contains("unknown command 'gateway'"), "\(gateway.error)")
    }
}
