import Foundation
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// An Idempotency-Key of the product API is written with its notification, in one transaction:
/// a crash never leaves a key that answers 409 for ever, nor a notification made twice, nor one
/// acknowledged and lost; and a key is forgotten with the account it notified.
@Suite("Product API Idempotency-Keys: crashes and deleted accounts", .serialized, .tags(.process, .postgres))
struct ProductAPIIdempotencyTests {
    /// A server with the product API, on `url`, with one product code.
    static func serve(_ url: DatabaseURL, _ directory: TemporaryDirectory) throws -> (ServerProcess, Int) {
        let catalogue = directory.file("catalogue.json")
        if !FileManager.default.fileExists(atPath: catalogue) {
            try #"{"codes": [{"code": "journal:entry.shared", "title": "An entry was shared with you"}]}"#.write(
                toFile: catalogue, atomically: true, encoding: .utf8)
        }
        let productPort = try RawHTTP.freePort()
        let server = try ServerProcess(serve: [
            "--database", url.rawText, "--signup", "open", "--password-iterations", "1000", "--log-level", "error",
            "--catalogue", catalogue, "--product-listen", "127.0.0.1:\(productPort)",
            "--rate-limits", "signup-per-address=1000000/60",
        ])
        return (server, productPort)
    }

    /// A new product key named `name`, made as an operator makes one.
    static func productKey(_ name: String, _ url: DatabaseURL) throws -> String {
        try ServerProcess.run(["product-keys", "create", name, "--database", url.rawText]).output
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func notify(
        port: Int, key: String, idempotency: String, title: String, email: String = "ada@example.com",
        code: String = "journal:entry.shared"
    ) throws -> RawResponse {
        try RawHTTP.request(
            port: port, method: "POST", path: ProductAPIPath.notifications,
            headers: [
                ("Content-Type", "application/json"), ("Authorization", "Bearer \(key)"),
                ("Idempotency-Key", idempotency), ("Connection", "close"),
            ],
            body: Data(#"{"email":"\#(email)","code":"\#(code)","title":"\#(title)"}"#.utf8), timeout: 5)
    }

    static func signUp(_ email: String, port: Int) throws -> String {
        let answer = try RawHTTP.request(
            port: port, method: "POST", path: AllauthAppPath.base + "/" + AllauthAppPath.signup,
            headers: [("Content-Type", "application/json")],
            body: Data(#"{"email":"\#(email)","password":"correct horse battery"}"#.utf8))
        return try #require(answer.sessionToken)
    }

    @Test(
        "kill -9 under notify load, three times: every key's retry answers 202, acknowledged ones with their first id, and each key made one notification",
        arguments: Backend.allCases)
    func killUnderLoad(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var (server, port) = try Self.serve(url, directory)
        let key = try Self.productKey("load", url)
        _ = try Self.signUp("ada@example.com", port: server.port)

        let sent = LockedBox<Set<String>>([])
        let acknowledged = LockedBox<[String: Int64]>([:])
        for cycle in 1...3 {
            let stop = Atomic<Bool>(false)
            let group = DispatchGroup()
            for client in 0..<4 {
                group.enter()
                Thread.detachNewThread { [port] in
                    defer { group.leave() }
                    var count = 0
                    while !stop.load(ordering: .relaxed) {
                        count += 1
                        let name = "c\(cycle)-\(client)-\(count)"
                        sent.mutate { _ = $0.insert(name) }
                        guard let answer = try? Self.notify(port: port, key: key, idempotency: name, title: name),
                            answer.status == 202,
                            let id = try? JSONDecoder().decode(ProductNotificationAnswer.self, from: answer.body).id
                        else { continue }
                        acknowledged.mutate { $0[name] = id }
                    }
                }
            }
            usleep(UInt32.random(in: 400_000...1_200_000))
            #expect(server.stop(signal: SIGKILL) == SIGKILL)
            stop.store(true, ordering: .relaxed)
            #expect(group.wait(timeout: .now() + 30) == .success)
            (server, port) = try Self.serve(url, directory)
        }
        defer { server.stop() }

        let names = sent.value
        let firstAnswers = acknowledged.value
        #expect(firstAnswers.count > 50, "the load notified too little to prove anything: \(firstAnswers.count)")
        var retried: [String: Int64] = [:]
        for name in names {
            let answer = try Self.notify(port: port, key: key, idempotency: name, title: name)
            #expect(answer.status == 202, "\(name) answers \(answer.status) after the crashes: \(answer.text)")
            retried[name] = try? JSONDecoder().decode(ProductNotificationAnswer.self, from: answer.body).id
        }
        for (name, id) in firstAnswers {
            #expect(retried[name] == id, "\(name) was acknowledged as \(id), and its retry says \(retried[name] ?? -1)")
        }
        let database = try url.open()
        defer { database.close() }
        let counts = try database.execute("SELECT title, COUNT(*) AS n FROM notifications GROUP BY title")
        let made = Dictionary(
            uniqueKeysWithValues: counts.compactMap { row in row.string("title").map { ($0, row.int("n") ?? 0) } })
        #expect(
            Set(made.keys) == names, "a key whose retry was answered has no notification, or one was made without a key"
        )
        #expect(made.values.allSatisfy { $0 == 1 }, "a notification made twice: \(made.filter { $0.value > 1 })")
    }

    @Test(
        "a key left claimed without a notification (a crash before the claim and the notification were one transaction) is taken over"
    )
    func leftoverClaim() throws {
        let (url, cleanUp) = try Backend.sqlite.makeDatabaseURL()
        defer { cleanUp() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (server, port) = try Self.serve(url, directory)
        defer { server.stop() }
        let key = try Self.productKey("journal", url)
        _ = try Self.signUp("ada@example.com", port: server.port)
        let database = try url.open()
        defer { database.close() }
        try database.execute(
            """
            INSERT INTO product_notifications (key_id, idempotency_key, request_hash, seq, queued, created_at)
            SELECT id, 'stuck', 'x', 0, 0, 1 FROM product_keys WHERE name = 'journal'
            """)
        let answer = try Self.notify(port: port, key: key, idempotency: "stuck", title: "Made at last")
        #expect(answer.status == 202, "\(answer.text)")
        #expect(try database.execute("SELECT 1 FROM notifications WHERE title = 'Made at last'").count == 1)
        let again = try Self.notify(port: port, key: key, idempotency: "stuck", title: "Made at last")
        #expect(again.status == 202)
        #expect(again.body == answer.body, "the retry answers the first request's 202")
    }

    @Test("a retry of a delivered notification answers its 202 even after its code left the catalogue")
    func retryAfterTheRulesChanged() throws {
        let (url, cleanUp) = try Backend.sqlite.makeDatabaseURL()
        defer { cleanUp() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (server, port) = try Self.serve(url, directory)
        defer { server.stop() }
        let key = try Self.productKey("diary", url)
        _ = try Self.signUp("ada@example.com", port: server.port)
        func declare(_ codes: String) throws -> Int {
            try RawHTTP.request(
                port: port, method: "PUT", path: ProductAPIPath.catalogue,
                headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(key)")],
                body: Data(#"{"codes":[\#(codes)]}"#.utf8)
            ).status
        }
        #expect(try declare(#"{"code":"diary:shared","title":"Shared"},{"code":"diary:liked","title":"Liked"}"#) == 200)
        func notify(_ idempotency: String) throws -> RawResponse {
            try Self.notify(port: port, key: key, idempotency: idempotency, title: "Shared", code: "diary:shared")
        }
        let first = try notify("k1")
        #expect(first.status == 202)
        #expect(try declare(#"{"code":"diary:liked","title":"Liked"}"#) == 200)
        let retry = try notify("k1")
        #expect(retry.status == 202 && retry.body == first.body, "\(retry.text)")
        #expect(try notify("k2").status == 400, "a new request with the dropped code is refused")
    }

    @Test(
        "a key is forgotten with the account it notified: the same retry after the account was deleted and its address signed up again notifies the new account, not with the old id",
        arguments: Backend.allCases)
    func forgottenWithTheAccount(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (server, port) = try Self.serve(url, directory)
        defer { server.stop() }
        let key = try Self.productKey("journal", url)
        _ = try Self.signUp("bo@example.com", port: server.port)
        for number in 1...3 {
            #expect(
                try Self.notify(
                    port: port, key: key, idempotency: "warm-\(number)", title: "Warm", email: "bo@example.com"
                ).status == 202)
        }
        let share = try Self.notify(
            port: port, key: key, idempotency: "share-1", title: "Bo shared an entry", email: "bo@example.com")
        #expect(share.status == 202)
        #expect(try JSONDecoder().decode(ProductNotificationAnswer.self, from: share.body).id == 4)

        let deleted = try ServerProcess.run(["users", "delete", "bo@example.com", "--yes", "--database", url.rawText])
        #expect(deleted.status == 0, "\(deleted.error)")
        let database = try url.open()
        defer { database.close() }
        #expect(try database.execute("SELECT 1 FROM product_notification_accounts").isEmpty)
        #expect(try database.execute("SELECT 1 FROM product_notifications").isEmpty)

        _ = try Self.signUp("bo@example.com", port: server.port)
        let retry = try Self.notify(
            port: port, key: key, idempotency: "share-1", title: "Bo shared an entry", email: "bo@example.com")
        #expect(retry.status == 202)
        #expect(try JSONDecoder().decode(ProductNotificationAnswer.self, from: retry.body).id == 1, "\(retry.text)")
        let titles = try database.execute(
            "SELECT n.title FROM notifications n JOIN users u ON u.id = n.user_id WHERE u.email = 'bo@example.com'"
        ).compactMap { $0.string("title") }
        #expect(titles == ["Bo shared an entry"], "the new account sees nothing of the old one's: \(titles)")
    }
}
