import BookOrbit
import Foundation
import HomeportServer
import HomeportTesting
import Testing

/// BookOrbit's routes, budget and loans, on its server in this process (HomeportTesting).
@Suite("BookOrbit's routes, in process")
struct BookOrbitRoutesTests {
    @Test("a signed-out token gets 401 on the product's route; the same token as a cookie, or sent twice, is refused")
    func sessionRules() throws {
        try Product.bookOrbit.test { app in
            let bob = try app.signUp("bob@example.com")
            #expect(try app.get("/api/v1/books", as: bob).status == 200)
            let cookie = try app.request(
                .get, "/api/v1/books", headers: [("Cookie", "homeport_session=\(bob.token); sessionid=\(bob.token)")])
            #expect(cookie.status == 401)
            let twice = try app.request(
                .get, "/api/v1/books", headers: [("X-Session-Token", bob.token), ("X-Session-Token", bob.token)])
            #expect(twice.status == 401)

            try app.signOut(bob)
            let after = try app.get("/api/v1/books", as: bob)
            #expect(after.status == 401 && after.errorCode == "not_authenticated")
            #expect(after.headers["cache-control"] == "no-store")
        }
    }

    @Test("the books budget refuses and says when to retry; bad input costs nothing and changes nothing")
    func budget() throws {
        var options = TestOptions()
        options.budgets = [BookOrbitBudget.booksAdded.name: RateLimit(2, per: 3600)]
        try Product.bookOrbit.test(options) { app in
            let ada = try app.signUp("ada@example.com")
            #expect(try app.post("/api/v1/books", json: ["title": ""], as: ada).status == 400)
            let notJSON = try app.request(
                .post, "/api/v1/books", as: ada, body: Data("{".utf8), headers: [("Content-Type", "application/json")])
            #expect(notJSON.status == 400)
            // A title a notification could not carry (a right-to-left override, a zero-width space):
            // refused here, so that its loan's notification never fails.
            for hidden in ["Evil\u{202E}txt.exe", "A\u{200B}book"] {
                #expect(try app.post("/api/v1/books", json: ["title": hidden], as: ada).status == 400, "\(hidden)")
            }
            for title in ["One", "Two"] {
                #expect(try app.post("/api/v1/books", json: ["title": title], as: ada).status == 201)
            }
            let refused = try app.post("/api/v1/books", json: ["title": "Three"], as: ada)
            #expect(refused.status == 429)
            let retry = try #require(refused.headers["retry-after"].flatMap(Int.init))
            #expect((1...3600).contains(retry))
            #expect((try app.get("/api/v1/books", as: ada).object?["books"] as? [Any])?.count == 2)
        }
    }

    @Test("another account's book is not found, never deleted")
    func ownership() throws {
        try Product.bookOrbit.test { app in
            let ada = try app.signUp("ada@example.com")
            let eve = try app.signUp("eve@example.com")
            let id = try #require(try app.post("/api/v1/books", json: ["title": "Mine"], as: ada).object?["id"] as? Int)
            #expect(try app.delete("/api/v1/books/\(id)", as: eve).status == 404)
            #expect(try app.post("/api/v1/books/\(id)/loan", as: eve).status == 404)
            let missing = try app.delete("/api/v1/books/999999", as: eve)
            let stolen = try app.delete("/api/v1/books/\(id)", as: eve)
            #expect(missing.status == 404 && missing.text == stolen.text, "the same answer as a book never made")
            #expect((try app.get("/api/v1/books", as: ada).object?["books"] as? [Any])?.count == 1)
        }
    }

    @Test("PATCH changes what it is given of the caller's own book; bad input and another's book change nothing")
    func rename() throws {
        try Product.bookOrbit.test { app in
            let ada = try app.signUp("ada@example.com")
            let eve = try app.signUp("eve@example.com")
            let added = try app.post("/api/v1/books", json: ["title": "Dune", "author": "Frank"], as: ada)
            let id = try #require(added.object?["id"] as? Int)
            let renamed = try app.patch("/api/v1/books/\(id)", json: ["author": "Frank Herbert"], as: ada)
            #expect(renamed.status == 200)
            #expect(
                renamed.object?["title"] as? String == "Dune" && renamed.object?["author"] as? String == "Frank Herbert"
            )
            let cleared = try app.patch("/api/v1/books/\(id)", json: ["title": "Dune Messiah", "author": ""], as: ada)
            #expect(cleared.object?["title"] as? String == "Dune Messiah" && cleared.object?["author"] == nil)
            for refused in [["title": ""], ["title": "A\u{200B}book"], [:]] {
                #expect(try app.patch("/api/v1/books/\(id)", json: refused, as: ada).status == 400, "\(refused)")
            }
            #expect(try app.patch("/api/v1/books/\(id)", json: ["title": "Mine now"], as: eve).status == 404)
            let bad = try app.patch("/api/v1/books/dune", json: ["title": "X"], as: ada)
            #expect(bad.status == 400 && bad.text.contains("'id'"))
            let kept = try app.get("/api/v1/books", as: ada).object?["books"] as? [[String: Any]]
            #expect(kept?.first?["title"] as? String == "Dune Messiah" && kept?.first?["author"] == nil)
        }
    }

    @Test("a librarian sees every account's loans; anyone else is refused with 403")
    func librarian() throws {
        try Product.bookOrbit.test { app in
            let ada = try app.signUp("ada@example.com")
            let eve = try app.signUp("eve@example.com")
            for (person, title) in [(ada, "Kindred"), (eve, "Beloved")] {
                let id = try #require(
                    try app.post("/api/v1/books", json: ["title": title], as: person).object?["id"] as? Int)
                #expect(try app.post("/api/v1/books/\(id)/loan", as: person).status == 202)
            }
            let refused = try app.get("/api/v1/loans", as: ada)
            #expect(refused.status == 403 && refused.errorCode == "forbidden")
            try app.addGroup(BookOrbitGroup.librarian, to: ada)
            let all = try app.get("/api/v1/loans", as: ada)
            #expect(all.status == 200 && (all.object?["loans"] as? [Any])?.count == 2)
            #expect(try app.get("/api/v1/loans", as: eve).status == 403, "only the librarian")
            try app.removeGroup(BookOrbitGroup.librarian, from: ada)
            #expect(try app.get("/api/v1/loans", as: ada).status == 403, "taken out, refused at once")
        }
    }

    @Test(
        "a loan is ready exactly when its owner is notified: a notification that fails for the 2nd of 3 loans holds back that loan alone, and each is notified once"
    )
    func loansNotifiedInTheirTransaction() throws {
        try Product.bookOrbit.test { app in
            // The notification of "Second" fails while the flag is up: a trigger the server does not know.
            for statement in [
                "CREATE TABLE test_fail (up INTEGER)", "INSERT INTO test_fail VALUES (1)",
                """
                CREATE TRIGGER test_fail_second BEFORE INSERT ON notifications
                WHEN NEW.body LIKE 'Second%' AND EXISTS (SELECT 1 FROM test_fail)
                BEGIN SELECT RAISE(ABORT, 'the notifier failed'); END
                """,
            ] {
                try app.services.database.execute(statement)
            }
            let ada = try app.signUp("ada@example.com")
            for title in ["First", "Second", "Third"] {
                let id = try #require(
                    try app.post("/api/v1/books", json: ["title": title], as: ada).object?["id"] as? Int)
                #expect(try app.post("/api/v1/books/\(id)/loan", as: ada).status == 202)
            }
            func states() throws -> [String] {
                try app.services.database.execute(
                    """
                    SELECT b.title || '=' || l.state AS s FROM bookorbit_loans l
                    JOIN bookorbit_books b ON b.id = l.book_id ORDER BY l.id
                    """
                ).compactMap { $0.string("s") }
            }
            app.clock.advance(by: .seconds(60))
            #expect(throws: (any Error).self, "the task says that a loan failed") { try app.run(task: "loans") }
            #expect(try states() == ["First=ready", "Second=preparing", "Third=ready"])
            #expect(try app.notifications(of: ada).compactMap(\.objectID) == [1, 3])
            // Tried again while it fails: still preparing, never notified twice.
            #expect(throws: (any Error).self) { try app.run(task: "loans") }
            #expect(try app.notifications(of: ada).compactMap(\.objectID) == [1, 3])

            try app.services.database.execute("DELETE FROM test_fail")
            try app.run(task: "loans")
            #expect(try states() == ["First=ready", "Second=ready", "Third=ready"])
            try app.run(task: "loans")
            #expect(try app.notifications(of: ada).compactMap(\.objectID) == [1, 3, 2], "each loan notified once")
        }
    }
}
