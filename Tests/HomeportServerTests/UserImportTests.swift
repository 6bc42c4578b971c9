import Foundation
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

/// `homeport-server users import`: the accounts of a stock django-allauth site, read out of its
/// own database with SQL, sign in to Homeport with the same passwords, on both backends.
@Suite("Bringing the users along: users import from django-allauth", .tags(.process, .postgres, .interop))
struct UserImportTests {
    static let passwords = [
        "ada@example.com": "ada's first good password",
        "bo@example.com": "bo's bcrypt sha256 password",
        "cy@example.com": "cy's plain bcrypt password",
    ]

    /// A stock allauth peer with three users: one signed up through its API (Django's PBKDF2, a
    /// million iterations), two made with Django's bcrypt hashers (as a site that used them has).
    static func djangoSite() throws -> AllauthPeer {
        let peer = try AllauthPeer(fastHasher: false)
        let signup = try RawHTTP.request(
            port: peer.port, method: "POST", path: "/_allauth/app/v1/auth/signup",
            headers: [("Content-Type", "application/json")],
            body: Data(#"{"email":"Ada@Example.com","password":"\#(passwords["ada@example.com"]!)"}"#.utf8))
        #expect(signup.status == 200, "\(signup.text)")
        try peer.shell(
            """
            from django.contrib.auth.models import User
            from django.contrib.auth.hashers import make_password
            from allauth.account.models import EmailAddress
            bo = User.objects.create(username="bo", email="bo@example.com",
                password=make_password("\(passwords["bo@example.com"]!)", hasher="bcrypt_sha256"))
            EmailAddress.objects.create(user=bo, email=bo.email, verified=True, primary=True)
            User.objects.create(username="cy", email="cy@example.com", is_active=True,
                password=make_password("\(passwords["cy@example.com"]!)", hasher="bcrypt"))
            """)
        return peer
    }

    /// The site's users as JSON lines, by the SQL docs/server.md gives for `variant` (`allauth`,
    /// `django`), run on the site's own database.
    static func export(_ peer: AllauthPeer, _ variant: String = "allauth") throws -> String {
        let sql = try #require(
            try fencedBlocks(inMarkdown: "docs/server.md").first { $0.language == "sql" && $0.label == variant }?.text)
        let result = try ServerProcess.runProgram("/usr/bin/sqlite3", [peer.databasePath, sql])
        #expect(result.status == 0, "\(result.error)")
        return result.output
    }

    func signIn(_ port: Int, _ email: String, _ password: String) throws -> RawResponse {
        try RawHTTP.request(
            port: port, method: "POST", path: AllauthAppPath.base + "/" + AllauthAppPath.login,
            headers: [("Content-Type", "application/json")],
            body: try JSONSerialization.data(withJSONObject: ["email": email, "password": password]))
    }

    func storedHash(_ database: DatabaseURL, _ email: String) throws -> String {
        let query = "SELECT password_hash FROM users WHERE email = '\(email)'"
        let result =
            switch database {
            case .sqlite(let path): try ServerProcess.runProgram("/usr/bin/sqlite3", [path, query])
            case .postgres(let url): try ServerProcess.runProgram("/usr/bin/psql", [url, "-Atc", query])
            }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(
        "a django-allauth site's users (PBKDF2, bcrypt_sha256, bcrypt) sign in with their passwords; bcrypt is rehashed at the first sign-in, a costlier PBKDF2 hash never made cheaper",
        arguments: Backend.allCases)
    func importsDjangoUsers(backend: Backend) throws {
        let peer = try Self.djangoSite()
        let lines = try Self.export(peer)
        #expect(lines.contains("pbkdf2_sha256$1000000$") && lines.contains("bcrypt_sha256$$2b$"), "\(lines)")
        let data = try TemporaryDirectory()
        defer { data.remove() }
        try lines.write(toFile: data.file("users.jsonl"), atomically: true, encoding: .utf8)
        let (database, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }

        let imported = try ServerProcess.run(
            ["users", "import", data.file("users.jsonl"), "--database", database.rawText])
        #expect(imported.status == 0, "\(imported.error)")
        #expect(imported.output.contains("imported 3 accounts (1 verified)"))
        let listed = try ServerProcess.run(["users", "list", "--json", "--database", database.rawText]).output
        #expect(listed.contains(#""email":"bo@example.com","emailVerified":true"#), "\(listed)")

        let server = try ServerProcess(serve: [
            "--database", database.rawText, "--password-iterations", "1000", "--email-verification", "none",
        ])
        defer { server.stop() }
        // Each imported hash is known as one, so that every check is padded to the costliest; a
        // rehash makes it Homeport's own.
        #expect(try count(database, "imported_password_hashes") == 3)
        for (email, password) in Self.passwords.sorted(by: { $0.key < $1.key }) {
            #expect(try signIn(server.port, email, password + "!").status == 400, "a wrong password is refused")
            #expect(try !storedHash(database, email).hasPrefix("pbkdf2_sha256$1000$"), "not rehashed by a failure")
            let before = try count(database, "imported_password_hashes")
            let answer = try signIn(server.port, email, password)
            #expect(answer.status == 200 && answer.sessionToken != nil, "\(email): \(answer.text)")
            if email == "ada@example.com" {
                // Django's million iterations against the 1,000 configured: kept, and still padded to.
                #expect(try storedHash(database, email).hasPrefix("pbkdf2_sha256$1000000$"), "never made cheaper")
                #expect(try count(database, "imported_password_hashes") == before, "still the costliest held")
            } else {
                #expect(try storedHash(database, email).hasPrefix("pbkdf2_sha256$1000$"), "\(email): rehashed")
                #expect(try count(database, "imported_password_hashes") == before - 1, "\(email): no import any more")
            }
            #expect(try signIn(server.port, email, password).status == 200, "\(email): signs in again after")
        }
    }

    @Test(
        "a plain Django site's users (auth_user alone) come in by docs/server.md's SQL: unverified, an inactive one held, one without an address left out"
    )
    func importsPlainDjangoUsers() throws {
        let peer = try Self.djangoSite()
        try peer.shell(
            """
            from django.contrib.auth.models import User
            from django.contrib.auth.hashers import make_password
            User.objects.create(username="dee", email="dee@example.com", is_active=False,
                password=make_password("dee's password", hasher="bcrypt"))
            User.objects.create(username="eve", email="", password=make_password("eve's password", hasher="bcrypt"))
            """)
        let lines = try Self.export(peer, "django")
        #expect(!lines.contains("eve") && lines.contains(#""stage":"held""#), "\(lines)")
        let data = try TemporaryDirectory()
        defer { data.remove() }
        try lines.write(toFile: data.file("users.jsonl"), atomically: true, encoding: .utf8)
        let database = "sqlite:" + data.file("h.sqlite")
        let imported = try ServerProcess.run(["users", "import", data.file("users.jsonl"), "--database", database])
        #expect(imported.status == 0, "\(imported.error)")
        #expect(imported.output.contains("imported 4 accounts (0 verified)"), "\(imported.output)")
        let listed = try ServerProcess.run(["users", "list", "--json", "--database", database]).output
        let accounts = try #require(try JSONSerialization.jsonObject(with: Data(listed.utf8)) as? [[String: Any]])
        var stages: [String: String] = [:]
        for account in accounts {
            if let email = account["email"] as? String { stages[email] = account["approval"] as? String }
        }
        #expect(stages["dee@example.com"] == "held" && stages["cy@example.com"] == "approved", "\(listed)")

        let server = try ServerProcess(serve: [
            "--database", database, "--password-iterations", "1000", "--email-verification", "none",
        ])
        defer { server.stop() }
        for (email, password) in Self.passwords {
            let answer = try signIn(server.port, email, password)
            #expect(answer.status == 200 && answer.sessionToken != nil, "\(email): \(answer.text)")
        }
        let held = try signIn(server.port, "dee@example.com", "dee's password")
        #expect(held.status == 401, "held, not signed in: \(held.text)")
    }

    func count(_ database: DatabaseURL, _ table: String) throws -> Int {
        let query = "SELECT COUNT(*) FROM \(table)"
        let result =
            switch database {
            case .sqlite(let path): try ServerProcess.runProgram("/usr/bin/sqlite3", [path, query])
            case .postgres(let url): try ServerProcess.runProgram("/usr/bin/psql", [url, "-Atc", query])
            }
        return Int(result.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    @Test("a wrong line is reported by its number and nothing of the file is imported", arguments: Backend.allCases)
    func malformedLine(backend: Backend) throws {
        let (database, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let good =
            #"{"email":"ada@example.com","passwordHash":"$2b$04$J5ILeWTV7TdC1.1fWvcpJOTdFfCOLiNNK6O2IpsnIA2RK9qtp7ihC"}"#
        let files: [(String, String)] = [
            ("\(good)\n\n{\"email\":\"bo@example.com\",\"stage\":\"boss\"}\n", "line 3: stage"),
            ("\(good)\n{\"email\":\"bo@example.com\",\"passwordHash\":\"md5$$abc\"}\n", "line 2: passwordHash"),
            ("\(good)\n{\"email\":\"ADA@example.com\"}\n", "line 2: email: ada@example.com is on line 1 too"),
            ("\(good)\n{\"email\":\"bo@example.com\",\"verified\":\"yes\"}\n", "line 2: verified"),
            ("\(good)\n<html>\n", "line 2: not a JSON object"),
            ("\(good)\n{\"email\":\"bo@exa mple.com\"}\n", "line 2: email"),
            ("\(good)\n{\"email\":\"bo@example.com\",\"createdAt\":\"yesterday\"}\n", "line 2: createdAt"),
            // Costlier than a sign-in may be: one wrong password would hold a password thread.
            (
                "\(good)\n{\"email\":\"bo@example.com\",\"passwordHash\":\"pbkdf2_sha256$100000000$salt$\(Self.zeroHash)\"}\n",
                "line 2: passwordHash: pbkdf2_sha256 at 100000000 iterations costs more than a sign-in may"
            ),
            (
                "\(good)\n{\"email\":\"bo@example.com\",\"passwordHash\":\"$2b$31$\(String(repeating: "a", count: 53))\"}\n",
                "line 2: passwordHash: bcrypt at cost 31 costs more"
            ),
            (
                "\(good)\n{\"email\":\"bo@example.com\",\"passwordHash\":\"bcrypt$$2b$15$\(String(repeating: "a", count: 53))\"}\n",
                "line 2: passwordHash: bcrypt at cost 15"
            ),
            // A byte-order mark is taken at the start of the file only.
            ("\(good)\n\u{FEFF}{\"email\":\"bo@example.com\"}\n", "line 2: a byte-order mark"),
            (
                "\(good)\n{\"email\":\"bo@example.com\",\"email\":\"cy@example.com\"}\n",
                "line 2: a field is named twice"
            ),
            (
                "\(good)\n{\"email\":\"bo@example.com\",\"stage\":\"held\",\"stage\":\"approved\"}\n",
                "line 2: a field is named twice"
            ),
        ]
        for (text, report) in files {
            try text.write(toFile: data.file("users.jsonl"), atomically: true, encoding: .utf8)
            let result = try ServerProcess.run(
                ["users", "import", data.file("users.jsonl"), "--database", database.rawText])
            #expect(result.status == 1 && result.error.contains(report), "\(report): \(result.error)")
            let listed = try ServerProcess.run(["users", "list", "--json", "--database", database.rawText])
            #expect(listed.output.trimmingCharacters(in: .whitespacesAndNewlines) == "[]", "nothing imported")
        }
        // An address already in use refuses the whole file too.
        try "\(good)\n".write(toFile: data.file("users.jsonl"), atomically: true, encoding: .utf8)
        #expect(
            try ServerProcess.run(["users", "import", data.file("users.jsonl"), "--database", database.rawText]).status
                == 0)
        try "{\"email\":\"bo@example.com\"}\n\(good)\n".write(
            toFile: data.file("users.jsonl"), atomically: true, encoding: .utf8)
        let again = try ServerProcess.run(["users", "import", data.file("users.jsonl"), "--database", database.rawText])
        #expect(again.status == 1 && again.error.contains("line 2: email: an account already uses ada@example.com"))
        let listed = try ServerProcess.run(["users", "list", "--database", database.rawText]).output
        #expect(!listed.contains("bo@example.com"), "bo, on a good line, was not imported either")
        #expect(try ServerProcess.run(["users", "import", data.file("none.jsonl")]).status != 0)
    }

    static let zeroHash = Data(count: 32).base64EncodedString()

    @Test(
        "--max-import-cost raises or lowers the ceiling, and a bad one is a usage error; a byte-order mark opening the file is taken"
    )
    func importCeiling() throws {
        let (database, cleanUp) = try Backend.sqlite.makeDatabaseURL()
        defer { cleanUp() }
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let file = data.file("users.jsonl")
        try "\u{FEFF}{\"email\":\"cy@example.com\",\"passwordHash\":\"pbkdf2_sha256$3000000$salt$\(Self.zeroHash)\"}\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        let refused = try ServerProcess.run(["users", "import", file, "--database", database.rawText])
        #expect(refused.status == 1 && refused.error.contains("line 1: passwordHash: pbkdf2_sha256 at 3000000"))
        #expect(
            refused.error.contains("pbkdf2=2000000,bcrypt=14") && refused.error.contains("null"), "\(refused.error)")
        for bad in ["pbkdf2=lots", "md5=3", "pbkdf2=10", "bcrypt=40", ""] {
            let usage = try ServerProcess.run(
                ["users", "import", file, "--max-import-cost", bad, "--database", database.rawText])
            #expect(usage.status == 2 && usage.error.contains("--max-import-cost"), "\(bad): \(usage.error)")
        }
        let lowered = try ServerProcess.run(
            ["users", "import", file, "--max-import-cost", "pbkdf2=1000000", "--database", database.rawText])
        #expect(lowered.status == 1 && lowered.error.contains("at most pbkdf2=1000000,bcrypt=14"))
        let raised = try ServerProcess.run(
            ["users", "import", file, "--max-import-cost", "pbkdf2=3000000", "--database", database.rawText])
        #expect(raised.status == 0, "\(raised.error)")
        #expect(try storedHash(database, "cy@example.com").hasPrefix("pbkdf2_sha256$3000000$"))
    }
}
