import Foundation
import HomeportLogging
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// Account groups: the operator gives them, and every reader of the caller carries them.
@Suite("Account groups: given by the operator, read by products, forward auth and the app", .tags(.postgres, .process))
struct GroupsTests {
    static let librarian = "bookorbit:librarian"

    /// A product with a route for one group's members, and a group of routes for another's.
    static let product = Product(name: "groupie", version: "1.0.0") { api in
        api.get("/shelf", requiring: librarian) { _, caller in ["groups": caller.groups] }
        api.group("/staff", requiring: "staff") { staff in
            staff.get("/room", requiring: librarian) { _, _ in ["room": "both"] }
            staff.get { _, caller in ["member": caller.isMember(of: "STAFF")] }
        }
        api.get("/open") { _, caller in ["groups": caller.groups] }
    }

    private func service(_ server: AccountsHarness) -> GroupService {
        GroupService(database: server.application.database, clock: server.clock, logger: Logger(label: "test"))
    }

    @Test(
        "a route for a group answers its members only (403 forbidden for others), a group's routes need both groups",
        arguments: Backend.allCases)
    func requiring(backend: Backend) throws {
        try withAccounts(backend, product: Self.product) { server in
            let token = try server.signIn("ada@example.com")
            let refused = try server.app("GET", "/api/v1/shelf", token: token)
            #expect(refused.status == 403 && refused.apiErrorCode == "forbidden", "\(refused.text)")
            #expect(try server.app("GET", "/api/v1/staff", token: token).status == 403)
            #expect(try server.app("GET", "/api/v1/shelf").status == 401, "no session is 401, before any group")
            #expect(
                try service(server).groups(email: "ada@example.com", (.add, "Bookorbit:Librarian"))
                    == .groups([Self.librarian], changed: true))
            try eventually(every: .milliseconds(50)) {
                try server.app("GET", "/api/v1/shelf", token: token).status == 200
            }
            let shelf = try server.app("GET", "/api/v1/shelf", token: token)
            #expect(shelf.jsonObject?["groups"] as? [String] == [Self.librarian])
            #expect(try server.app("GET", "/api/v1/staff/room", token: token).status == 403, "staff too")
            _ = try service(server).groups(email: "ada@example.com", (.add, "staff"))
            try eventually(every: .milliseconds(50)) {
                try server.app("GET", "/api/v1/staff/room", token: token).status == 200
            }
            #expect(try server.app("GET", "/api/v1/staff", token: token).jsonObject?["member"] as? Bool == true)
            // Taken out: refused again within the session cache's window.
            _ = try service(server).groups(email: "ada@example.com", (.remove, Self.librarian))
            try eventually(every: .milliseconds(50)) {
                try server.app("GET", "/api/v1/shelf", token: token).status == 403
            }
            #expect(try server.app("GET", "/api/v1/staff", token: token).status == 200)
        }
    }

    @Test(
        "GET /api/v1/account says the account's id, address, groups and stage; forward auth carries the groups",
        arguments: Backend.allCases)
    func readers(backend: Backend) throws {
        try withAccounts(backend) { server in
            let token = try server.signIn("ada@example.com")
            let account = try server.app("GET", HomeportPath.account, token: token)
            #expect(account.status == 200)
            let before = try JSONDecoder().decode(AccountAnswer.self, from: account.body)
            #expect(before.email == "ada@example.com" && before.groups == [] && before.stage == "approved")
            #expect(before.emailVerified == false && before.id > 0)
            #expect(try server.app("GET", HomeportPath.account).status == 401)
            let forward = try server.app("GET", HomeportPath.authForward, token: token)
            #expect(
                forward.header(HomeportHeader.accountGroups)?.trimmingCharacters(in: .whitespaces) == "",
                "no group: the field, empty")
            #expect(try JSONDecoder().decode(ForwardAuthAnswer.self, from: forward.body).groups == [])

            for group in ["family", "admin"] { _ = try service(server).groups(email: "ada@example.com", (.add, group)) }
            try eventually(every: .milliseconds(50)) {
                try server.app("GET", HomeportPath.authForward, token: token).header(HomeportHeader.accountGroups)
                    == "admin,family"
            }
            let after = try server.app("GET", HomeportPath.authForward, token: token)
            let body = try JSONDecoder().decode(ForwardAuthAnswer.self, from: after.body)
            #expect(body.groups == ["admin", "family"])
            #expect(after.body == (try HTTPResponse.encode(body)), "the hand-written body is the encoder's")
            let forged = try server.app(
                "GET", HomeportPath.authForward, token: token, headers: [(HomeportHeader.accountGroups, "root")])
            #expect(forged.header(HomeportHeader.accountGroups) == "admin,family", "a client's claim never passes")
            let shown = try JSONDecoder().decode(
                AccountAnswer.self, from: try server.app("GET", HomeportPath.account, token: token).body)
            #expect(shown.groups == ["admin", "family"])

            // Removed: the next request through forward auth no longer carries it (within the window).
            _ = try service(server).groups(email: "ada@example.com", (.remove, "admin"))
            try eventually(every: .milliseconds(50)) {
                try server.app("GET", HomeportPath.authForward, token: token).header(HomeportHeader.accountGroups)
                    == "family"
            }
        }
    }

    @Test("a change of groups on one replica is seen by the other within the session cache's window")
    func replicas() throws {
        let created = try TestPostgres.createDatabase()
        defer { try? TestPostgres.dropDatabase(created.name) }
        let url = DatabaseURL.postgres(url: created.url)
        try withAccounts(.postgres, database: url) { first in
            try withAccounts(.postgres, database: url) { second in
                let token = try first.signIn("ada@example.com")
                let read = {
                    try JSONDecoder().decode(
                        AccountAnswer.self, from: try second.app("GET", HomeportPath.account, token: token).body
                    ).groups
                }
                #expect(try read() == [])
                _ = try service(first).groups(email: "ada@example.com", (.add, "kids"))
                let changed = ContinuousClock.now
                try eventually(every: .milliseconds(20)) { try read() == ["kids"] }
                #expect(ContinuousClock.now - changed < .seconds(3), "within the window (a second), give or take")
                _ = try service(first).groups(email: "ada@example.com", (.remove, "kids"))
                try eventually(every: .milliseconds(20)) { try read() == [] }
            }
        }
    }

    @Test("names are checked and lowercased; an unknown address, a bad name and a full account change nothing")
    func names() throws {
        #expect(AccountGroups.name("Family") == "family")
        #expect(AccountGroups.name("bookorbit:librarian") == "bookorbit:librarian")
        for bad in ["", "-x", ":x", "a b", "a,b", "ä", "a\"b", String(repeating: "a", count: 65), "a\u{0}b"] {
            #expect(AccountGroups.name(bad) == nil, "\(bad.debugDescription)")
        }
        try withAccounts(.sqlite) { server in
            _ = try server.signIn("ada@example.com")
            let groups = service(server)
            #expect(try groups.groups(email: "nobody@example.com", (.add, "family")) == .noAccount)
            #expect(try groups.groups(email: "ada@example.com", (.add, "a,b")) == .invalidName)
            #expect(try groups.groups(email: "ada@example.com", (.remove, "family")) == .groups([], changed: false))
            for index in 0..<AccountGroups.maximumPerAccount {
                _ = try groups.groups(email: "ada@example.com", (.add, "g\(index)"))
            }
            #expect(try groups.groups(email: "ada@example.com", (.add, "one-more")) == .tooMany)
            #expect(
                try groups.groups(email: "ADA@example.com")
                    == .groups((0..<AccountGroups.maximumPerAccount).map { "g\($0)" }.sorted(), changed: false))
        }
    }

    @Test("a route requiring a name that cannot be a group's stops the server before it serves, naming it")
    func badRequirement() throws {
        let broken = Product(name: "broken", version: "1.0.0") { api in
            api.get("/x", requiring: "Not A Group") { _, _ in ["a": 1] }
        }
        #expect {
            try withAccounts(.sqlite, product: broken) { _ in }
        } throws: { error in
            "\(error)".contains("Not A Group")
        }
    }

    @Test("homeport-server users groups shows, adds and removes, with --json; bad input is a clear error")
    func commandLine() throws {
        let files = try TemporaryDirectory()
        defer { files.remove() }
        let database = "sqlite:" + files.file("h.sqlite")
        try withAccounts(.sqlite, database: .sqlite(path: files.file("h.sqlite"))) { server in
            _ = try server.signIn("ada@example.com")
        }
        let shown = try ServerProcess.run(["users", "groups", "ada@example.com", "--database", database])
        #expect(shown.status == 0 && shown.output.contains("ada@example.com: in no group"), "\(shown.error)")
        let added = try ServerProcess.run([
            "users", "groups", "ada@example.com", "add", "Family", "--database", database,
        ])
        #expect(added.status == 0 && added.output.contains("ada@example.com: family"), "\(added.error)")
        let again = try ServerProcess.run([
            "users", "groups", "ada@example.com", "add", "family", "--database", database,
        ])
        #expect(again.output.contains("already in family"))
        let json = try ServerProcess.run(["users", "groups", "ada@example.com", "--json", "--database", database])
        #expect(json.output.trimmingCharacters(in: .whitespacesAndNewlines) == #"["family"]"#)
        let bad = try ServerProcess.run(["users", "groups", "ada@example.com", "add", "a,b", "--database", database])
        #expect(bad.status == 2 && bad.error.contains("not a group's name"), "\(bad.error)")
        let nobody = try ServerProcess.run(["users", "groups", "eve@example.com", "add", "x", "--database", database])
        #expect(nobody.status == 1 && nobody.error.contains("no account uses"), "\(nobody.error)")
        let half = try ServerProcess.run(["users", "groups", "ada@example.com", "add", "--database", database])
        #expect(half.status == 2, "\(half.error)")
        let removed = try ServerProcess.run(
            ["users", "groups", "ada@example.com", "remove", "family", "--database", database])
        #expect(removed.status == 0 && removed.output.contains("in no group"))
    }
}
