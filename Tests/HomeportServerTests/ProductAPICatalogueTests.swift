import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The product's own codes (`PUT /product/v1/catalogue`), the values a notification carries
/// (`data`), and the product API on a Unix socket.
@Suite("The product API: a product's catalogue, its data, its socket", .tags(.process))
struct ProductAPICatalogueTests {
    typealias Stage = ProductAPITests.Stage

    func catalogue(_ port: Int, token: String) throws -> NotificationCatalogue {
        let answer = try RawHTTP.request(
            port: port, path: HomeportPath.notificationsCatalogue, headers: [("X-Session-Token", token)])
        return try JSONDecoder().decode(NotificationCatalogue.self, from: answer.body)
    }

    func errorField(_ answer: RawResponse) -> String? {
        (answer.jsonObject?["error"] as? [String: Any])?["field"] as? String
    }

    @Test(
        "declared codes join the catalogue on every replica within a second and change mv; bad, reserved, doubled or taken codes are refused and change nothing"
    )
    func declare() throws {
        let stage = try Stage()
        // A second replica on the same database.
        let other = try ServerProcess(serve: [
            "--database", stage.database, "--signup", "open", "--password-iterations", "1000",
            "--catalogue", stage.data.file("catalogue.json"),
        ])
        defer { other.stop() }
        let key = try stage.keys(["create", "sundown"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let rival = try stage.keys(["create", "rival"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let ada = try stage.signUp("ada@example.com")
        let before = try catalogue(other.port, token: ada)
        let stream = try stage.stream(ada)
        defer { close(stream.fd) }

        let declared = try stage.declare(
            #"{"codes":[{"code":"sundown:entry.shared","title":"An entry was shared"},{"code":"sundown:entry.liked","title":"Liked"}]}"#,
            key: key)
        #expect(declared.status == 200, "\(declared.text)")
        let answer = try JSONDecoder().decode(NotificationCatalogue.self, from: declared.body)
        #expect(answer.version != before.version)
        #expect(answer.codes.map(\.code).contains("sundown:entry.shared"))
        #expect(answer.codes.map(\.code).contains("journal:entry.shared"), "the operator's codes stay")
        #expect(try catalogue(stage.server.port, token: ada) == answer, "at once on the replica that took it")
        usleep(1_100_000)
        #expect(try catalogue(other.port, token: ada) == answer, "within a second on another replica")

        // A notification with the new code carries the new version.
        let sent = try stage.notify(
            #"{"email":"ada@example.com","code":"sundown:entry.shared","title":"Shared"}"#, key: key)
        #expect(sent.status == 202, "\(sent.text)")
        #expect(stream.wait(for: #""mv":"\#(answer.version)""#))

        let refused: [(String, Int, String)] = [
            (#"{"codes":[{"code":"no-colon","title":"x"}]}"#, 400, "codes[0].code"),
            (
                #"{"codes":[{"code":"sundown:ok","title":"x"},{"code":"sundown:bad","title":""}]}"#, 400,
                "codes[1].title"
            ),
            (#"{"codes":[{"code":"sundown:x"}]}"#, 400, "codes[0].title"),
            (#"{"codes":[{"code":"homeport/core:push.test","title":"x"}]}"#, 400, "codes[0].code"),
            // Homeport's namespace in any spelling, and titles with hidden or reordering characters.
            (#"{"codes":[{"code":"homeport/core/evil:x","title":"Your password was changed"}]}"#, 400, "codes[0].code"),
            (#"{"codes":[{"code":"homeport:x","title":"x"}]}"#, 400, "codes[0].code"),
            (#"{"codes":[{"code":"home-port.core:x","title":"x"}]}"#, 400, "codes[0].code"),
            (#"{"codes":[{"code":"h0meport/core:x","title":"x"}]}"#, 400, "codes[0].code"),
            (#"{"codes":[{"code":"sundown:a","title":"\u202Edegnahc saw drowssap"}]}"#, 400, "codes[0].title"),
            (#"{"codes":[{"code":"sundown:a","title":"line\u2028break"}]}"#, 400, "codes[0].title"),
            (#"{"codes":[{"code":"sundown:a","title":"del\u007F"}]}"#, 400, "codes[0].title"),
            (#"{"codes":[{"code":"sundown:a","title":"next\u0085line"}]}"#, 400, "codes[0].title"),
            (#"{"codes":[{"code":"sundown:a","title":"zero\u200Bwidth"}]}"#, 400, "codes[0].title"),
            (#"{"codes":[{"code":"sundown:a","title":"x"},{"code":"sundown:a","title":"y"}]}"#, 400, "codes[1].code"),
            (#"{"codes":[{"code":"journal:entry.shared","title":"mine"}]}"#, 409, "codes[0].code"),
            (#"{"codes":"sundown:a"}"#, 400, "codes"), (#"{}"#, 400, "codes"), ("<html>", 400, "body"),
        ]
        for (body, status, field) in refused {
            let refusal = try stage.declare(body, key: key)
            #expect(refusal.status == status && errorField(refusal) == field, "\(body): \(refusal.text)")
        }
        // Another key cannot take the codes, and its refused declaration changes nothing of its own either.
        #expect(try stage.declare(#"{"codes":[{"code":"rival:ping","title":"Ping"}]}"#, key: rival).status == 200)
        let taken = try stage.declare(
            #"{"codes":[{"code":"rival:pong","title":"Pong"},{"code":"sundown:entry.liked","title":"Mine"}]}"#,
            key: rival)
        #expect(taken.status == 409 && errorField(taken) == "codes[1].code", "\(taken.text)")
        let now = try catalogue(stage.server.port, token: ada)
        #expect(now.codes.map(\.code).contains("rival:ping") && !now.codes.map(\.code).contains("rival:pong"))
        #expect(now.codes.first { $0.code == "sundown:entry.liked" }?.title == "Liked")

        // Declaring fewer codes drops the others; a revoked key's codes leave the catalogue.
        #expect(
            try stage.declare(#"{"codes":[{"code":"sundown:entry.shared","title":"Shared"}]}"#, key: key).status == 200)
        #expect(!(try catalogue(stage.server.port, token: ada).codes.map(\.code).contains("sundown:entry.liked")))
        #expect(try stage.keys(["revoke", "sundown"]).status == 0)
        usleep(1_100_000)
        let after = try catalogue(stage.server.port, token: ada)
        #expect(!after.codes.map(\.code).contains("sundown:entry.shared"))
        let gone = try stage.notify(
            #"{"email":"ada@example.com","code":"sundown:entry.shared","title":"x"}"#, key: rival)
        #expect(gone.status == 400 && errorField(gone) == "code")
    }

    @Test(
        "the largest declaration the rules allow is taken: 500 codes of 128 bytes, titles of 200 emoji escaped as Python writes them, indented; a larger body is 413"
    )
    func largestDeclaration() throws {
        let stage = try Stage()
        let key = try stage.keys(["create", "sundown"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        // json.dumps(..., indent=2) with its default ensure_ascii: every emoji is a surrogate pair.
        let title = String(repeating: #"\ud83d\ude00"#, count: 200)
        let codes = (0..<ProductCatalogueRequest.maximumCodes).map { index in
            let code = "sundown:" + String(format: "%03d", index) + String(repeating: "a", count: 117)
            return "    {\n      \"code\": \"\(code)\",\n      \"title\": \"\(title)\"\n    }"
        }
        let body = "{\n  \"codes\": [\n" + codes.joined(separator: ",\n") + "\n  ]\n}"
        #expect(body.utf8.count > 1_250_000 && body.utf8.count <= ProductCatalogueRequest.maximumBodyBytes)
        let declared = try stage.declare(body, key: key)
        #expect(declared.status == 200, "\(declared.status): \(declared.text.prefix(300))")
        let answer = try JSONDecoder().decode(NotificationCatalogue.self, from: declared.body)
        #expect(answer.codes.filter { $0.code.hasPrefix("sundown:") }.count == 500)
        #expect(answer.codes.first { $0.code.hasPrefix("sundown:000") }?.title == String(repeating: "😀", count: 200))

        let larger =
            body + String(repeating: " ", count: ProductCatalogueRequest.maximumBodyBytes - body.utf8.count + 1)
        #expect(try stage.declare(larger, key: key).status == 413)
    }

    @Test(
        "a key sends the codes it declared and the operator's; another key's code, or Homeport's own in any spelling, is refused naming code and nothing is written"
    )
    func codesOfTheirKey() throws {
        let stage = try Stage()
        let key = try stage.keys(["create", "sundown"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let rival = try stage.keys(["create", "rival"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try stage.signUp("ada@example.com")
        #expect(
            try stage.declare(#"{"codes":[{"code":"sundown:entry.shared","title":"Shared"}]}"#, key: key).status == 200)
        #expect(try stage.declare(#"{"codes":[{"code":"rival:poke","title":"Poke"}]}"#, key: rival).status == 200)
        let send = { (code: String, from: String) in
            try stage.notify(#"{"email":"ada@example.com","code":"\#(code)","title":"From \#(code)"}"#, key: from)
        }
        for (code, from) in [
            ("rival:poke", key), ("sundown:entry.shared", rival), ("homeport/core:push.test", key),
            ("Homeport/Core:push.test", key), (#"sundown:entry\u0000shared"#, key), (#"\ud937\ude06\u0000["#, key),
        ] {
            let refused = try send(code, from)
            #expect(refused.status == 400 && errorField(refused) == "code", "\(code): \(refused.text)")
        }
        #expect(try send("sundown:entry.shared", key).status == 202, "its own")
        #expect(try send("journal:entry.shared", key).status == 202, "the operator's")
        #expect(try send("rival:poke", rival).status == 202)
        let written = try ServerProcess.runProgram(
            "/usr/bin/sqlite3", [stage.data.file("h.sqlite"), "SELECT code FROM notifications ORDER BY seq"])
        #expect(
            written.output.split(separator: "\n") == ["sundown:entry.shared", "journal:entry.shared", "rival:poke"],
            "the refused wrote nothing")
    }

    @Test(
        "product-keys rotate: a new secret, the old refused at once, the codes kept; revoking frees the codes for another key"
    )
    func rotateAndRevoke() throws {
        let stage = try Stage()
        let old = try stage.keys(["create", "sundown"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try stage.signUp("ada@example.com")
        #expect(
            try stage.declare(#"{"codes":[{"code":"sundown:entry.shared","title":"Shared"}]}"#, key: old).status == 200)
        let note = #"{"email":"ada@example.com","code":"sundown:entry.shared","title":"Shared"}"#
        #expect(try stage.notify(note, key: old).status == 202, "before")

        let rotated = try stage.keys(["rotate", "sundown"])
        #expect(rotated.status == 0, "\(rotated.error)")
        let new = rotated.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(new.count == 43 && new != old)
        #expect(try stage.notify(note, key: old).status == 401, "the old secret is refused at once")
        #expect(try stage.notify(note, key: new).status == 202, "after: the key kept its code, nothing declared again")
        #expect(try stage.keys(["rotate", "nothing"]).status == 1)
        let listed = try stage.keys(["list", "--json"]).output
        #expect(!listed.contains(new) && !listed.contains(old))

        // Revoked, its code leaves the catalogue and is free: another key declares it.
        #expect(try stage.keys(["revoke", "sundown"]).status == 0)
        #expect(try stage.keys(["rotate", "sundown"]).status == 1, "a revoked key is not brought back")
        let refused = try stage.notify(note, key: new)
        #expect(refused.status == 401)
        let heir = try stage.keys(["create", "sundown-2"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let declared = try stage.declare(#"{"codes":[{"code":"sundown:entry.shared","title":"Shared"}]}"#, key: heir)
        #expect(declared.status == 200, "\(declared.text)")
        #expect(try stage.notify(note, key: heir).status == 202)
    }

    @Test("an upgrade frees the codes of keys revoked before revoking freed them")
    func upgradeFreesRevokedCodes() throws {
        let stage = try Stage()
        let old = try stage.keys(["create", "old"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try stage.declare(#"{"codes":[{"code":"old:thing","title":"Thing"}]}"#, key: old).status == 200)
        // (Made first: every product-keys command migrates the database.)
        let heir = try stage.keys(["create", "heir"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        // As an earlier version revoked: the key refused, its codes kept, and migration 23 not yet run.
        let earlier = try ServerProcess.runProgram(
            "/usr/bin/sqlite3",
            [
                stage.data.file("h.sqlite"), ".timeout 10000",
                "UPDATE product_keys SET revoked_at = 1 WHERE name = 'old'; DELETE FROM schema_migrations WHERE version = 23;",
            ])
        #expect(earlier.status == 0, "\(earlier.error)")
        let before = try stage.declare(#"{"codes":[{"code":"old:thing","title":"Thing"}]}"#, key: heir)
        #expect(before.status == 409, "\(before.status) \(before.text)")
        let migrated = try ServerProcess.run(["migrate", "--database", stage.database])
        #expect(migrated.status == 0, "\(migrated.error)")
        #expect(try stage.declare(#"{"codes":[{"code":"old:thing","title":"Thing"}]}"#, key: heir).status == 200)
    }

    @Test("data travels with the notification to the stream; data that breaks the rules is refused naming data")
    func data() throws {
        let stage = try Stage()
        let key = try stage.keys(["create", "journal"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let ada = try stage.signUp("ada@example.com")
        let stream = try stage.stream(ada)
        defer { close(stream.fd) }
        let sent = try stage.notify(
            #"{"email":"ada@example.com","code":"journal:entry.shared","title":"With data","data":{"entry":"42","url":"/journal/42"}}"#,
            key: key)
        #expect(sent.status == 202, "\(sent.text)")
        #expect(stream.wait(for: #""data":{"#))
        let line = try #require(
            stream.text.split(separator: "\n").first { $0.hasPrefix("data: {") && $0.contains("With data") })
        let event = try JSONDecoder().decode(StreamNotification.self, from: Data(line.dropFirst(6).utf8))
        #expect(event.data == ["entry": "42", "url": "/journal/42"])

        let many = (0..<17).map { #""k\#($0)":"v""# }.joined(separator: ",")
        for data in [
            "{\(many)}", #"{"bad key":"v"}"#, #"{"":"v"}"#, #"{"k":"a\u0007b"}"#,
            #"{"k":"\#(String(repeating: "x", count: 257))"}"#, #"{"k":1}"#, #""text""#,
        ] {
            let refused = try stage.notify(
                #"{"email":"ada@example.com","code":"journal:entry.shared","title":"x","data":\#(data)}"#, key: key)
            #expect(refused.status == 400 && errorField(refused)?.hasPrefix("data") == true, "\(data): \(refused.text)")
        }
        let count = try ServerProcess.runProgram(
            "/usr/bin/sqlite3", [stage.data.file("h.sqlite"), "SELECT COUNT(*) FROM notifications"])
        #expect(count.output.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "nothing else was queued")
    }

    @Test(
        "the product API on a Unix socket: mode 0660, served, removed at stop; a live socket or a file that is not one is refused"
    )
    func unixSocket() throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let socket = data.file("product.sock")
        let database = "sqlite:" + data.file("h.sqlite")
        let key = try ServerProcess.run(["product-keys", "create", "journal", "--database", database]).output
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let server = try ServerProcess(serve: [
            "--database", database, "--signup", "open", "--password-iterations", "1000", "--product-listen", socket,
        ])
        var status = stat()
        #expect(lstat(socket, &status) == 0 && (status.st_mode & S_IFMT) == S_IFSOCK)
        #expect(status.st_mode & 0o777 == 0o660)
        let answer = try ServerProcess.runProgram(
            "/usr/bin/curl",
            [
                "-s", "--unix-socket", socket, "-H", "Authorization: Bearer \(key)", "-X", "PUT",
                "--data", #"{"codes":[{"code":"journal:entry.shared","title":"Shared"}]}"#,
                "-w", "\n%{http_code}", "http://product/product/v1/catalogue",
            ])
        #expect(answer.output.hasSuffix("\n200") && answer.output.contains("journal:entry.shared"), "\(answer)")
        let unauthenticated = try ServerProcess.runProgram(
            "/usr/bin/curl",
            ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", socket, "http://p/product/v1/accounts/1"])
        #expect(unauthenticated.output == "401")

        // A second server on the same socket is refused, and the first keeps it.
        let second = try ServerProcess.run(
            [
                "serve", "--database", "sqlite:" + data.file("h2.sqlite"), "--listen", "127.0.0.1:0",
                "--product-listen", socket,
            ],
            timeout: 30)
        #expect(second.status != 0 && second.error.contains("another server listens"), "\(second.error)")
        #expect(lstat(socket, &status) == 0)
        server.stop()
        #expect(lstat(socket, &status) != 0, "removed at stop")

        // A socket left by a server that was killed is taken over.
        let killed = try ServerProcess(serve: ["--database", database, "--product-listen", socket])
        killed.stop(signal: SIGKILL)
        #expect(lstat(socket, &status) == 0, "left behind")
        let next = try ServerProcess(serve: ["--database", database, "--product-listen", socket])
        let served = try ServerProcess.runProgram(
            "/usr/bin/curl",
            ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", socket, "http://p/product/v1/accounts/1"])
        #expect(served.output == "401")
        next.stop()

        // A regular file at the path is never replaced.
        try "keep me".write(toFile: socket, atomically: true, encoding: .utf8)
        let onFile = try ServerProcess.run(
            ["serve", "--database", database, "--listen", "127.0.0.1:0", "--product-listen", socket], timeout: 30)
        #expect(onFile.status != 0 && onFile.error.contains("not a socket"), "\(onFile.error)")
        #expect(try String(contentsOfFile: socket, encoding: .utf8) == "keep me")
    }
}
