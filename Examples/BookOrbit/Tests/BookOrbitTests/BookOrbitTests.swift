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
