import Foundation
import HomeportServer
import HomeportTestSupport
import HomeportTesting
import HomeportWire
import Testing

/// HomeportTesting as a product's tests use it, on a product made here: its routes, its
/// notification, its budget and its task.
@Suite("HomeportTesting: a product's server in process for its tests", .tags(.postgres))
struct TestingHarnessTests {
    static let ping = "harness:ping"
    static let pings = ProductBudget("pings-per-account", limit: RateLimit(100, per: 3600), per: .account)

    /// A product with a signed-in route that charges a budget and notifies its caller, a route
    /// that says the time, and a task that notifies everyone.
    static let product = Product(
        name: "harness", version: "1.0.0",
        notificationCodes: [CatalogueCode(code: ping, title: "Ping")], budgets: [pings],
        tasks: [
            ProductTask("sweep", every: .seconds(3600)) { services in
                try services.database.execute("CREATE TABLE IF NOT EXISTS harness_swept (at BIGINT)")
                try services.database.execute(
                    "INSERT INTO harness_swept (at) VALUES ($1)", [.integer(services.clock.unixSeconds)])
            }
        ]
    ) { api in
        let services = api.services
        api.post("/pings") { request, caller in
            try services.charge(pings, caller)
            let title = (try? request.decodeJSON([String: String].self))?["title"] ?? "Ping"
            let delivery = try services.notifications.notify(
                ProductNotification(code: ping, title: title, thread: "pings", objectID: 7), to: caller.accountID)
            return try .json(["seq": delivery.seq, "queued": Int64(delivery.queued)], status: 201)
        }
        api.get("/whoami") { _, caller in try .json(["id": caller.accountID]) }
        api.get("/now") { _, _ in try .json(["now": services.clock.unixSeconds]) }
    }

    @Test("a signed-in route answers its account, and refuses no token, an ended one, and one sent twice")
    func signedIn() throws {
        try Self.product.test { app in
            let ada = try app.signUp("ada@example.com")
            let whoami = try app.get("/api/v1/whoami", as: ada)
            #expect(whoami.status == 200)
            #expect(try whoami.json([String: Int64].self)["id"] == ada.id)
            #expect(try app.get("/api/v1/whoami").errorCode == "not_authenticated")
            let twice = try app.request(
                .get, "/api/v1/whoami", headers: [("X-Session-Token", ada.token), ("X-Session-Token", ada.token)])
            #expect(twice.status == 401)
            let again = try app.signIn("ada@example.com")
            #expect(again.id == ada.id && again.token != ada.token)
            try app.signOut(ada)
            #expect(try app.get("/api/v1/whoami", as: ada).status == 401)
            #expect(try app.get("/api/v1/whoami", as: again).status == 200, "another session is not ended")
            #expect(throws: TestServerError.self) { try app.signIn("ada@example.com", password: "wrong password") }
        }
    }

    @Test("what a route notified is read back: the stream's record and the push queued for each device")
    func notified() throws {
        try Self.product.test { app in
            let ada = try app.signUp("ada@example.com")
            let bob = try app.signUp("bob@example.com")
            let device = try app.registerDevice(for: ada)
            let sent = try app.post("/api/v1/pings", json: ["title": "Tea is ready"], as: ada)
            #expect(sent.status == 201)
            #expect(try sent.json([String: Int64].self) == ["seq": 1, "queued": 1])
            let heard = try app.notifications(of: ada)
            #expect(heard.map(\.code) == [Self.ping])
            #expect(
                heard.first?.title == "Tea is ready" && heard.first?.thread == "pings" && heard.first?.objectID == 7)
            let pushes = try app.pushes(to: ada)
            #expect(pushes.map(\.deviceToken) == [device])
            let appData = try #require(pushes.first?.appData())
            #expect(appData["c"] as? String == Self.ping)
            #expect(appData["s"] as? String == (try app.services.instanceID()).description)
            #expect(try app.notifications(of: bob).isEmpty && app.pushes(to: bob).isEmpty, "nothing for another")
        }
    }

    @Test("the clock moves only when told, and a budget's window with it")
    func clockAndBudget() throws {
        var options = TestOptions()
        options.budgets = ["pings-per-account": RateLimit(1, per: 60)]
        try Self.product.test(options) { app in
            let ada = try app.signUp("ada@example.com")
            let start = try app.get("/api/v1/now", as: ada).json([String: Int64].self)["now"]
            #expect(start == Int64(options.start.timeIntervalSince1970))
            #expect(try app.post("/api/v1/pings", as: ada).status == 201)
            let refused = try app.post("/api/v1/pings", as: ada)
            #expect(refused.status == 429 && refused.errorCode == "rate_limited")
            #expect(refused.headers["retry-after"].flatMap(Int.init).map { (1...60).contains($0) } == true)
            app.clock.advance(by: .seconds(61))
            #expect(try app.get("/api/v1/now", as: ada).json([String: Int64].self)["now"] == start.map { $0 + 61 })
            #expect(try app.post("/api/v1/pings", as: ada).status == 201, "a new window")
        }
    }

    @Test("a task runs when the test says, on the test's clock; a task that does not exist is an error")
    func task() throws {
        try Self.product.test { app in
            try app.run(task: "sweep")
            app.clock.advance(by: .seconds(5))
            try app.run(task: "sweep")
            let rows = try app.services.database.execute("SELECT at FROM harness_swept ORDER BY at")
            let start = Int64(TestOptions().start.timeIntervalSince1970)
            #expect(rows.compactMap { $0.int("at") } == [start, start + 5])
            #expect(throws: TestServerError.self) { try app.run(task: "nothing") }
        }
    }

    @Test("on a given PostgreSQL database as on SQLite; the server is gone once the test returns")
    func postgresAndStop() throws {
        let created = try TestPostgres.createDatabase()
        defer { try? TestPostgres.dropDatabase(created.name) }
        var options = TestOptions()
        options.store = .postgres(created.url)
        let port = try Self.product.test(options) { app in
            let ada = try app.signUp("ada@example.com")
            #expect(try app.post("/api/v1/pings", as: ada).status == 201)
            #expect(try app.notifications(of: ada).count == 1)
            return app.port
        }
        #expect(throws: (any Error).self) { try RawHTTP.request(port: port, path: "/healthz") }
    }
}
