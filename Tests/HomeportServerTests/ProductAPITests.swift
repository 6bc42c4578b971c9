import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A product in another language, as it uses the product API: a key from the command line,
/// notifications that reach the account's stream, retries that deliver once, bad input and bad
/// keys refused with nothing queued.
@Suite("The product API: product keys, notifications from a product in any language", .tags(.process))
struct ProductAPITests {
    /// A server with the product API on a port of its own and a product's code in its catalogue.
    final class Stage: @unchecked Sendable {
        let data: TemporaryDirectory
        let server: ServerProcess
        let productPort: Int
        var database: String { "sqlite:" + data.file("h.sqlite") }

        init(_ extra: [String] = []) throws {
            data = try TemporaryDirectory()
            try #"{"codes": [{"code": "journal:entry.shared", "title": "An entry was shared with you"}]}"#.write(
                toFile: data.file("catalogue.json"), atomically: true, encoding: .utf8)
            productPort = try RawHTTP.freePort()
            server = try ServerProcess(
                serve: [
                    "--database", "sqlite:" + data.file("h.sqlite"), "--signup", "open", "--password-iterations",
                    "1000", "--catalogue", data.file("catalogue.json"), "--product-listen",
                    "127.0.0.1:\(productPort)",
                ] + extra)
        }

        deinit {
            server.stop()
            data.remove()
        }

        func keys(_ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
            try ServerProcess.run(["product-keys"] + arguments + ["--database", database])
        }

        func declare(_ json: String, key: String) throws -> RawResponse {
            try RawHTTP.request(
                port: productPort, method: "PUT", path: ProductAPIPath.catalogue,
                headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(key)")],
                body: Data(json.utf8))
        }

        func notify(_ json: String, key: String?, headers: [(String, String)] = []) throws -> RawResponse {
            var all = headers + [("Content-Type", "application/json")]
            if let key { all.append(("Authorization", "Bearer \(key)")) }
            return try RawHTTP.request(
                port: productPort, method: "POST", path: ProductAPIPath.notifications, headers: all,
                body: Data(json.utf8))
        }

        func signUp(_ email: String) throws -> String {
            let answer = try RawHTTP.request(
                port: server.port, method: "POST", path: AllauthAppPath.base + "/" + AllauthAppPath.signup,
                headers: [("Content-Type", "application/json")],
                body: Data(#"{"email":"\#(email)","password":"correct horse battery"}"#.utf8))
            return try #require(answer.sessionToken)
        }

        func stream(_ token: String) throws -> StreamReader {
            let fd = try RawHTTP.connect(port: server.port, timeout: 10)
            RawHTTP.send(
                fd, "GET \(HomeportPath.notificationsStream) HTTP/1.1\r\nHost: x\r\nX-Session-Token: \(token)\r\n\r\n")
            let reader = StreamReader(fd: fd)
            #expect(reader.wait(for: ": connected"))
            return reader
        }
    }

    @Test("product-keys: a key is shown once and stored hashed; names are unique; list never shows a key")
    func keysCommand() throws {
        let stage = try Stage()
        let made = try stage.keys(["create", "journal"])
        #expect(made.status == 0, "\(made.error)")
        let key = made.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(key.count == 43)
        #expect(try stage.keys(["create", "journal"]).status == 1)
        #expect(try stage.keys(["create", "Not A Name"]).status == 2)
        let list = try stage.keys(["list", "--json"])
        #expect(list.status == 0 && list.output.contains(#""name":"journal""#) && !list.output.contains(key))
        let stored = try ServerProcess.runProgram(
            "/usr/bin/sqlite3", [stage.data.file("h.sqlite"), "SELECT key_hash FROM product_keys"])
        #expect(
            !stored.output.contains(key) && stored.output.trimmingCharacters(in: .whitespacesAndNewlines).count == 64)
        #expect(try stage.keys(["revoke", "nothing"]).status == 1)
        #expect(try stage.keys(["--help"]).status == 0)
    }

    @Test(
        "a notification reaches the account's stream; a retry with the same Idempotency-Key, even at the same instant, delivers once"
    )
    func notifyOnce() throws {
        let stage = try Stage()
        let key = try stage.keys(["create", "journal"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let ada = try stage.signUp("ada@example.com")
        let stream = try stage.stream(ada)
        defer { close(stream.fd) }

        let body =
            #"{"email":"ada@example.com","code":"journal:entry.shared","title":"Bo shared an entry","thread":"journal:7","id":7}"#
        let first = try stage.notify(body, key: key)
        #expect(first.status == 202, "\(first.text)")
        let answer = try JSONDecoder().decode(ProductNotificationAnswer.self, from: first.body)
        #expect(stream.wait(for: #""title":"Bo shared an entry""#))
        #expect(stream.text.contains("id: \(answer.id)\n"))

        // Five retries at once with one Idempotency-Key: one notification, the same id for all that got through.
        let body2 = body.replacingOccurrences(of: "Bo shared an entry", with: "Cy shared an entry")
        let answers = LockedBox<[RawResponse]>([])
        DispatchQueue.concurrentPerform(iterations: 5) { _ in
            if let response = try? stage.notify(body2, key: key, headers: [("Idempotency-Key", "share-42")]) {
                answers.mutate { $0.append(response) }
            }
        }
        let got = answers.value
        // A retry that comes while the first is at work waits for it, and gets its answer.
        #expect(got.count == 5 && got.allSatisfy { $0.status == 202 }, "\(got.map(\.status))")
        let ids = Set(
            got.filter { $0.status == 202 }.compactMap {
                try? JSONDecoder().decode(ProductNotificationAnswer.self, from: $0.body).id
            })
        #expect(ids.count == 1)
        let again = try stage.notify(body2, key: key, headers: [("Idempotency-Key", "share-42")])
        #expect(again.status == 202)
        #expect(try JSONDecoder().decode(ProductNotificationAnswer.self, from: again.body).id == ids.first)
        // The same key with another request is refused, and delivers nothing.
        let reused = try stage.notify(body, key: key, headers: [("Idempotency-Key", "share-42")])
        #expect(reused.status == 422)
        #expect((reused.jsonObject?["error"] as? [String: Any])?["code"] as? String == "idempotency_key_reused")
        #expect(stream.wait(for: #""title":"Cy shared an entry""#))
        usleep(500_000)
        #expect(stream.count(of: #""title":"Cy shared an entry""#) == 1, "delivered once")

        // By account id, as forward auth names it.
        let account = try RawHTTP.request(
            port: stage.productPort, path: ProductAPIPath.accounts + "/1", headers: [("Authorization", "Bearer \(key)")]
        )
        #expect(account.status == 200)
        let described = try JSONDecoder().decode(ProductAccount.self, from: account.body)
        #expect(
            described
                == ProductAccount(id: 1, email: "ada@example.com", verified: false, standing: "approved", groups: []))
        // By address, as a product resolves one at the moment it acts.
        for (query, status) in [
            ("email=ada%40example.com", 200), ("email=%20ADA%40Example.com", 200), ("email=nobody%40example.com", 404),
            ("email=not-an-address", 400), ("", 400),
        ] {
            let found = try RawHTTP.request(
                port: stage.productPort, path: ProductAPIPath.accounts + (query.isEmpty ? "" : "?" + query),
                headers: [("Authorization", "Bearer \(key)")])
            #expect(found.status == status, "\(query): \(found.text)")
            if status == 200 {
                #expect(try JSONDecoder().decode(ProductAccount.self, from: found.body) == described)
            }
        }
        #expect(
            try RawHTTP.request(port: stage.productPort, path: ProductAPIPath.accounts + "?email=ada%40example.com")
                .status == 401)
        #expect(
            try stage.notify(#"{"accountId":1,"code":"journal:entry.shared","title":"By id"}"#, key: key).status == 202)
        #expect(stream.wait(for: #""title":"By id""#))
        #expect(
            try RawHTTP.request(
                port: stage.productPort, path: ProductAPIPath.accounts + "/99",
                headers: [("Authorization", "Bearer \(key)")]
            ).status == 404)
        #expect(!stage.server.standardError.contains(key), "the key is never logged")
    }

    @Test("bad input is a 400 naming the field, and nothing is queued; a bad, doubled or revoked key is 401 at once")
    func refusals() throws {
        let stage = try Stage()
        let key = try stage.keys(["create", "journal"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try stage.signUp("ada@example.com")
        let cases: [(String, String)] = [
            (#"{"email":"ada@example.com","title":"x"}"#, "code"),
            (#"{"email":"ada@example.com","code":"journal:no.such","title":"x"}"#, "code"),
            (#"{"email":"ada@example.com","code":"journal:entry.shared"}"#, "title"),
            (#"{"email":"ada@example.com","code":"journal:entry.shared","title":""}"#, "title"),
            (#"{"email":"ada@example.com","accountId":1,"code":"journal:entry.shared","title":"x"}"#, "email"),
            (#"{"code":"journal:entry.shared","title":"x"}"#, "email"),
            (#"{"accountId":99,"code":"journal:entry.shared","title":"x"}"#, "accountId"),
            (#"{"accountId":true,"code":"journal:entry.shared","title":"x"}"#, "accountId"),
            (#"{"email":"nobody@example.com","code":"journal:entry.shared","title":"x"}"#, "email"),
            (#"{"email":"ada@example.com","code":"journal:entry.shared","title":"x","thread":"no spaces"}"#, "thread"),
            // Hidden or reordering characters, in the title or the body (a body may break lines).
            (#"{"email":"ada@example.com","code":"journal:entry.shared","title":"\u202Eevil"}"#, "title"),
            (#"{"email":"ada@example.com","code":"journal:entry.shared","title":"a\u2028b"}"#, "title"),
            (#"{"email":"ada@example.com","code":"journal:entry.shared","title":"a\u007Fb"}"#, "title"),
            (#"{"email":"ada@example.com","code":"journal:entry.shared","title":"a\u0085b"}"#, "title"),
            (#"{"email":"ada@example.com","code":"journal:entry.shared","title":"a\nb"}"#, "title"),
            (#"{"email":"ada@example.com","code":"journal:entry.shared","title":"x","body":"a\u2066b"}"#, "body"),
            (#"{"email":"ada@example.com","code":"journal:entry.shared","title":"x","body":"a\u0000b"}"#, "body"),
            (#"[1,2]"#, "body"), ("<html>", "body"),
            // A key named twice: Foundation would read the first, Python and JavaScript the last.
            (
                #"{"email":"nobody@example.com","email":"ada@example.com","code":"journal:entry.shared","title":"x"}"#,
                "body"
            ),
            (#"{"email":"ada@example.com","code":"journal:entry.shared","title":"x","title":"y"}"#, "body"),
        ]
        for (body, field) in cases {
            let answer = try stage.notify(body, key: key)
            #expect(answer.status == 400, "\(body)")
            #expect(
                (answer.jsonObject?["error"] as? [String: Any])?["field"] as? String == field, "\(body): \(answer.text)"
            )
        }
        let doubled = try stage.notify(
            #"{"email":"ada@example.com","code":"journal:entry.shared","title":"x"}"#, key: key,
            headers: [("Idempotency-Key", "a"), ("Idempotency-Key", "b")])
        #expect(doubled.status == 400)
        let count = try ServerProcess.runProgram(
            "/usr/bin/sqlite3", [stage.data.file("h.sqlite"), "SELECT COUNT(*) FROM notifications"])
        #expect(count.output.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "nothing was queued")

        let good = #"{"email":"ada@example.com","code":"journal:entry.shared","title":"x"}"#
        for headers in [
            [(String, String)](), [("Authorization", "Bearer not-a-key")], [("Authorization", "Basic \(key)")],
            [("Authorization", "Bearer \(key)"), ("Authorization", "Bearer \(key)")],
        ] {
            let answer = try stage.notify(good, key: nil, headers: headers)
            #expect(answer.status == 401, "\(headers.map(\.0))")
            #expect(answer.header("WWW-Authenticate") == "Bearer")
        }
        #expect(try stage.notify(good, key: key).status == 202)
        let lines = #"{"email":"ada@example.com","code":"journal:entry.shared","title":"x","body":"two\nlines 👨‍👩‍👧"}"#
        #expect(try stage.notify(lines, key: key).status == 202, "a body breaks lines; a family emoji joins")
        #expect(try stage.keys(["revoke", "journal"]).status == 0)
        #expect(try stage.notify(good, key: key).status == 401, "refused at once after the revocation")
        // The product API is not on the app's listener.
        #expect(
            try RawHTTP.request(port: stage.server.port, method: "POST", path: ProductAPIPath.notifications).status
                == 404)
    }
}
