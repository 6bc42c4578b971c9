import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// A small product for the tests: a signed-in route that says who called, a public one, a
/// budget, a migration, a code, a feature and a task.
private func shelf(
    handled: LockedBox<[SignedIn]> = LockedBox([]), ticks: LockedBox<Int>? = nil,
    budget: RateLimit = RateLimit(3, per: 3600),
    migrations: [Migration] = [
        Migration(version: 1, name: "items", statements: ["CREATE TABLE IF NOT EXISTS shelf_items (id INTEGER)"])
    ],
    routes: @escaping @Sendable (inout ProductRoutes) throws -> Void = { _ in }
) -> Product {
    let items = ProductBudget("items-per-account", limit: budget, per: .account)
    return Product(
        name: "shelf", version: "2.3.4", migrations: migrations,
        notificationCodes: [CatalogueCode(code: "shelf:item.ready", title: "An item is ready")],
        budgets: [items],
        features: ["shelf-items"],
        tasks: ticks.map { ticks in [ProductTask("tick", every: .milliseconds(20)) { _ in ticks.mutate { $0 += 1 } }] }
            ?? []
    ) { api in
        let services = api.services
        api.get("/me") { _, caller in
            handled.mutate { $0.append(caller) }
            return try .json(["email": caller.email])
        }
        api.post("/items") { _, caller in
            try services.charge(items, caller)
            return HTTPResponse(status: 201)
        }
        api.addPublic(.get, "/shelf-status") { _ in try .json(["open": true]) }
        // Two mistakes a product can make: a 500 its log explains, never a crash.
        api.addPublic(.post, "/shelf-status") { request in
            try services.charge(items, clientAddress: request.remoteAddress)
            return HTTPResponse(status: 204)
        }
        api.post("/undeclared") { _, caller in
            try services.charge(ProductBudget("no-such-budget", limit: budget, per: .account), caller)
            return HTTPResponse(status: 204)
        }
        try routes(&api)
    }
}

@Suite("A product's routes, migrations, codes and budgets live inside Homeport's rules", .tags(.postgres))
struct ProductFaceTests {
    @Test("a signed-in route gets the caller from the one reader; every other credential is refused before it runs")
    func signedInRoute() throws {
        let handled = LockedBox<[SignedIn]>([])
        try withAccounts(.sqlite, product: shelf(handled: handled)) { server in
            let token = try server.signIn("ada@example.com")
            let ok = try server.app("GET", "/api/v1/me", token: token)
            #expect(ok.status == 200)
            #expect(ok.header("Cache-Control") == "no-store")
            let caller = try #require(handled.value.first)
            #expect(caller.email == "ada@example.com")
            #expect(caller.sessionHandle.count == 32 && !token.contains(caller.sessionHandle))
            #expect(caller.clientAddress == "127.0.0.1")

            // The same session keeps its handle; another session of the same account has another.
            _ = try server.app("GET", "/api/v1/me", token: token)
            let other = try server.signIn("ada@example.com")
            _ = try server.app("GET", "/api/v1/me", token: other)
            #expect(handled.value.count == 3)
            #expect(handled.value[0].sessionHandle == handled.value[1].sessionHandle)
            #expect(handled.value[2].sessionHandle != handled.value[0].sessionHandle)
            #expect(handled.value[2].accountID == caller.accountID)

            let before = handled.value.count
            let refusals: [(String, [(String, String)])] = [
                ("no credential", []),
                ("the token as a cookie", [("Cookie", "homeport_session=\(token); sessionid=\(token)")]),
                ("the token twice", [("X-Session-Token", token), ("X-Session-Token", token)]),
                ("a token never issued", [("X-Session-Token", token.withFirstCharacterChanged)]),
                ("a blank token", [("X-Session-Token", "  ")]),
            ]
            for (what, headers) in refusals {
                let response = try RawHTTP.request(port: server.port, path: "/api/v1/me", headers: headers)
                #expect(response.status == 401, "\(what)")
                #expect((response.jsonObject?["error"] as? [String: Any])?["code"] as? String == "not_authenticated")
                #expect(response.header("Cache-Control") == "no-store", "\(what)")
            }
            #expect(try server.app("DELETE", "auth/session", token: token).status == 401)
            #expect(try server.app("GET", "/api/v1/me", token: token).status == 401, "a signed-out token")
            #expect(handled.value.count == before, "no refused request reached the handler")
        }
    }

    @Test("a pre-login token (approval pending) does not open a product route")
    func preLogin() throws {
        let handled = LockedBox<[SignedIn]>([])
        try withAccounts(.sqlite, signup: .approval, product: shelf(handled: handled)) { server in
            let signup = try server.app(
                "POST", "auth/signup", json: ["email": "wait@example.com", "password": "correct horse battery"])
            let pending = try #require(signup.sessionToken)
            #expect(try server.app("GET", "/api/v1/me", token: pending).status == 401)
            #expect(handled.value.isEmpty)
        }
    }

    @Test("a route declared public reads no credential and answers the same with or without one")
    func publicRoute() throws {
        try withAccounts(.sqlite, product: shelf()) { server in
            let token = try server.signIn("ada@example.com")
            let bare = try server.app("GET", "/api/v1/shelf-status")
            let withToken = try server.app("GET", "/api/v1/shelf-status", token: token)
            let withNonsense = try server.app("GET", "/api/v1/shelf-status", token: "garbage")
            for response in [bare, withToken, withNonsense] {
                #expect(response.status == 200 && response.text == #"{"open":true}"#)
                #expect(response.header("Cache-Control") == "no-store")
                #expect(response.header("Set-Cookie") == nil)
            }
            #expect(try server.app("PUT", "/api/v1/shelf-status").status == 405)
            #expect(try server.app("POST", "/api/v1/shelf-status").status == 500)
            #expect(try server.app("POST", "/api/v1/undeclared", token: token).status == 500)
            #expect(server.log.lines.contains { $0.contains("does not declare") && $0.contains("no-such-budget") })
        }
    }

    @Test("app-info announces the product's version and features; the identity route its name")
    func announces() throws {
        try withAccounts(.sqlite, product: shelf()) { server in
            let token = try server.signIn("ada@example.com")
            let info = try #require(try server.appInfo(token).jsonObject)
            #expect(info["product"] as? String == "shelf" && info["version"] as? String == "2.3.4")
            let features = info["features"] as? [String] ?? []
            #expect(features.contains("shelf-items") && features.contains("server-connection-identity"))
            let identity = try RawHTTP.request(port: server.port, path: "/api/v1/server-identity").jsonObject
            #expect(identity?["product"] as? String == "shelf")
        }
    }

    @Test(
        "the product's codes join the catalogue and change its version; notify takes them", arguments: Backend.allCases)
    func catalogue(backend: Backend) throws {
        let homeportVersion = ServerCatalogue().version
        try withAccounts(backend, product: shelf()) { server in
            let token = try server.signIn("ada@example.com")
            let answer = try #require(try server.app("GET", "/api/v1/notifications/catalogue", token: token).jsonObject)
            let codes = (answer["codes"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
            #expect(codes.contains("shelf:item.ready") && codes.contains(ServerCatalogue.testCode))
            #expect(answer["version"] as? String != homeportVersion)
            let delivery = try server.application.push.notify(
                ProductNotification(code: "shelf:item.ready", title: "Ready"), email: "ada@example.com")
            #expect(delivery.seq == 1)
            #expect(throws: PushCenter.Refusal.unknownCode("shelf:unknown")) {
                try server.application.push.notify(
                    ProductNotification(code: "shelf:unknown", title: "No"), email: "ada@example.com")
            }
        }
    }

    @Test("a typed path parameter: read as the type asked for, or a 400 that names it before the handler runs")
    func typedParameters() throws {
        let product = shelf { api in
            api.get("/items/:id") { request, _ in
                try .json(["id": try request.parameter("id", as: Int64.self)])
            }
        }
        try withAccounts(.sqlite, product: product) { server in
            let token = try server.signIn("ada@example.com")
            let found = try server.app("GET", "/api/v1/items/42", token: token)
            #expect(found.status == 200 && found.jsonObject?["id"] as? Int == 42)
            for bad in ["abc", "4.2", "99999999999999999999", "%2042"] {
                let refused = try server.app("GET", "/api/v1/items/\(bad)", token: token)
                #expect(refused.status == 400, "\(bad): \(refused.text)")
                #expect(
                    refused.text.contains(#""code":"invalid_field""#) && refused.text.contains(#""field":"id""#),
                    "\(bad): \(refused.text)")
            }
        }
    }

    @Test(
        "notify inside the product's transaction is written with it and undone with it; a refusal writes nothing",
        arguments: Backend.allCases)
    func notifyInTransaction(backend: Backend) throws {
        try withAccounts(backend, product: shelf()) { server in
            _ = try server.signIn("ada@example.com")
            let database = server.application.database
            let push = server.application.push
            let ada = try #require(
                try database.execute("SELECT id FROM users WHERE email = 'ada@example.com'").first?.int("id"))
            let count = { (table: String) in
                try database.execute("SELECT count(*) AS n FROM \(table)").first?.int("n") ?? -1
            }
            struct Undone: Error {}
            #expect(throws: Undone.self) {
                try database.transaction { db in
                    try db.execute("INSERT INTO shelf_items (id) VALUES (1)")
                    try push.notify(ProductNotification(code: "shelf:item.ready", title: "Ready"), to: ada, in: db)
                    throw Undone()
                }
            }
            #expect(try count("shelf_items") == 0 && count("notifications") == 0, "undone together")
            #expect(try count("server_identity") == 0, "the identity first made for it was undone with it")
            // Outside a transaction there is nothing to join: refused, nothing written.
            _ = try database.withConnection { db in
                #expect(throws: PushCenter.Refusal.notInTransaction) {
                    try push.notify(ProductNotification(code: "shelf:item.ready", title: "Alone"), to: ada, in: db)
                }
            }
            #expect(try count("notifications") == 0)

            try database.transaction { db in
                try db.execute("INSERT INTO shelf_items (id) VALUES (2)")
                #expect(throws: PushCenter.Refusal.unknownCode("shelf:nope")) {
                    try push.notify(ProductNotification(code: "shelf:nope", title: "No"), to: ada, in: db)
                }
                #expect(throws: PushCenter.Refusal.noAccount) {
                    try push.notify(
                        ProductNotification(code: "shelf:item.ready", title: "Nobody"), to: ada + 99, in: db)
                }
            }
            #expect(try count("shelf_items") == 1 && count("notifications") == 0, "the caller's write stands alone")

            let delivery = try database.transaction { db in
                try db.execute("INSERT INTO shelf_items (id) VALUES (3)")
                return try push.notify(
                    ProductNotification(code: "shelf:item.ready", title: "Ready", objectID: 3), to: ada, in: db)
            }
            #expect(delivery.seq == 1)
            let stored = try database.execute("SELECT instance_id FROM server_identity").first?.string("instance_id")
            let announced = try RawHTTP.request(port: server.port, path: "/api/v1/server-identity").jsonObject
            #expect(
                stored != nil && announced?["instanceId"] as? String == stored, "made with the notification, and kept")
            let written = try database.execute(
                "SELECT code, object_id FROM notifications WHERE user_id = $1", [.integer(ada)])
            #expect(written.map { $0.string("code") } == ["shelf:item.ready"] && written.first?.int("object_id") == 3)
        }
    }

    @Test(
        "migrations are numbered per component, recorded apart, and /readyz names a missing one",
        arguments: Backend.allCases)
    func migrations(backend: Backend) throws {
        try withAccounts(backend, product: shelf()) { server in
            let database = server.application.database
            let homeport = try HomeportSchema.migrator.appliedVersions(database)
            #expect(homeport.contains(1), "Homeport's version 1 and the product's version 1 both apply")
            let product = try Migrator(component: "shelf", migrations: []).appliedVersions(database)
            #expect(product == [1])
            #expect(try database.execute("SELECT count(*) AS n FROM shelf_items").first?.int("n") == 0)
            #expect(try RawHTTP.request(port: server.port, path: "/readyz").status == 200)

            try database.execute("DELETE FROM component_migrations WHERE component = 'shelf'")
            let pending = try RawHTTP.request(port: server.port, path: "/readyz")
            #expect(pending.status == 503)
            #expect(pending.jsonObject?["status"] as? String == "migrations_pending")
            #expect(pending.jsonObject?["pending"] as? [Int] == [], "Homeport's own are all there")
            #expect((pending.jsonObject?["components"] as? [String: [Int]])?["shelf"] == [1])
        }
    }

    @Test(
        "a budget refuses past its limit with Retry-After, per account, and holds across two servers on one database",
        arguments: Backend.allCases)
    func budget(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        try withAccounts(backend, product: shelf(), database: url) { first in
            try withAccounts(backend, product: shelf(), database: url) { second in
                let ada = try first.signIn("ada@example.com")
                let bob = try second.signIn("bob@example.com")
                #expect(try first.app("POST", "/api/v1/items", token: ada).status == 201)
                #expect(try second.app("POST", "/api/v1/items", token: ada).status == 201)
                #expect(try first.app("POST", "/api/v1/items", token: ada).status == 201)
                let refused = try second.app("POST", "/api/v1/items", token: ada)
                #expect(refused.status == 429)
                #expect((refused.jsonObject?["error"] as? [String: Any])?["code"] as? String == "rate_limited")
                let retry = try #require(refused.header("Retry-After").flatMap(Int.init))
                #expect((1...3600).contains(retry))
                #expect(try first.app("POST", "/api/v1/items", token: bob).status == 201, "another account's budget")
            }
        }
    }

    @Test("requests sent at once never spend more than the budget", arguments: Backend.allCases)
    func budgetUnderRace(backend: Backend) throws {
        try withAccounts(backend, workerThreads: 8, product: shelf(budget: RateLimit(5, per: 3600))) { server in
            let token = try server.signIn("ada@example.com")
            let statuses = LockedBox<[Int]>([])
            let group = DispatchGroup()
            let start = DispatchSemaphore(value: 0)
            for _ in 0..<24 {
                group.enter()
                DispatchQueue.global().async {
                    start.wait()
                    let status = (try? server.app("POST", "/api/v1/items", token: token).status) ?? 0
                    statuses.mutate { $0.append(status) }
                    group.leave()
                }
            }
            for _ in 0..<24 { start.signal() }
            group.wait()
            #expect(statuses.value.filter { $0 == 201 }.count == 5)
            #expect(statuses.value.filter { $0 == 429 }.count == 19)
        }
    }

    @Test("the operator's --rate-limits override a product's budget")
    func budgetOverride() throws {
        var limits = RateLimitPolicy()
        limits.productLimits["items-per-account"] = RateLimit(1, per: 60)
        try withAccounts(.sqlite, rateLimits: limits, product: shelf()) { server in
            let token = try server.signIn("ada@example.com")
            #expect(try server.app("POST", "/api/v1/items", token: token).status == 201)
            let refused = try server.app("POST", "/api/v1/items", token: token)
            #expect(refused.status == 429 && refused.header("Retry-After").flatMap(Int.init).map { $0 <= 60 } == true)
        }
    }

    @Test("a product's task runs in the background until the server stops")
    func task() throws {
        let ticks = LockedBox(0)
        try withAccounts(.sqlite, product: shelf(ticks: ticks)) { _ in
            #expect(eventually(every: .milliseconds(10)) { ticks.value >= 2 })
        }
        let stopped = ticks.value
        usleep(100_000)
        #expect(ticks.value == stopped, "no run after the server stopped")
    }

    @Test("a stop waits for a task's run in progress, so nothing runs on a closed database")
    func taskDrains() throws {
        let runs = LockedBox((started: 0, finished: 0))
        let product = Product(
            name: "shelf", version: "1",
            tasks: [
                ProductTask("slow", every: .milliseconds(10)) { services in
                    runs.mutate { $0.started += 1 }
                    usleep(100_000)
                    _ = try services.database.execute("SELECT 1 AS one")
                    runs.mutate { $0.finished += 1 }
                }
            ])
        _ = try withAccounts(.sqlite, product: product) { _ in
            eventually(every: .milliseconds(10)) { runs.value.started >= 2 }
        }
        #expect(runs.value.started >= 2)
        #expect(runs.value.started == runs.value.finished, "a run was cut off by the stop")
    }

    @Test(
        "a declaration that would break a rule is refused before anything is served",
        arguments: [
            ("/app-info", "Homeport serves"), ("/auth/forward", "Homeport serves"), ("/push/x", "Homeport serves"),
            ("/notifications", "Homeport serves"), ("/invitations", "Homeport serves"),
            ("/invitations/:id", "Homeport serves"), ("books", "starts with /"), ("/books/", "starts with /"),
            ("/bo oks", "segments"), ("/books/../app-info", "segments"), ("/:id", "literal of its own"),
            ("/shelf-status/:id", "under the public path"), ("/me", "twice"),
        ])
    func refusedDeclarations(path: String, reason: String) throws {
        let product = shelf { api in api.get(path) { _, _ in HTTPResponse(status: 204) } }
        #expect {
            try withAccounts(.sqlite, product: product) { _ in }
        } throws: { error in
            (error as? ConfigurationError)?.description.contains(reason) == true
        }
    }

    @Test("every path Homeport serves under /api/v1 is one a product cannot take")
    func everyHomeportPathReserved() throws {
        try withAccounts(.sqlite) { server in
            let own = server.application.routeTable.compactMap { entry -> String? in
                guard let path = entry.split(separator: " ").last, path.hasPrefix(HomeportPath.apiPrefix + "/") else {
                    return nil
                }
                return path.dropFirst(HomeportPath.apiPrefix.count + 1).split(separator: "/").first.map(String.init)
            }
            #expect(own.count > 10, "\(server.application.routeTable)")
            for first in Set(own) {
                #expect(ProductRoutes.reserved.contains(first), "/api/v1/\(first) is Homeport's but not reserved")
            }
        }
    }

    @Test("a public route inside a group that requires an account group is refused: it would answer everyone")
    func publicInsideRequiringGroup() throws {
        let product = shelf { api in
            api.group("/staff", requiring: "shelf:staff") { staff in
                staff.get("/list") { _, _ in HTTPResponse(status: 204) }
                staff.addPublic(.get, "/open") { _ in HTTPResponse(status: 204) }
            }
        }
        #expect {
            try withAccounts(.sqlite, product: product) { _ in }
        } throws: { error in
            let text = (error as? ConfigurationError)?.description ?? ""
            return text.contains("/staff/open") && text.contains("shelf:staff")
        }
        // Outside the group it is a public route like any.
        let fine = shelf { api in
            api.group("/staff", requiring: "shelf:staff") { staff in
                staff.get("/list") { _, _ in HTTPResponse(status: 204) }
            }
            api.addPublic(.get, "/open") { _ in HTTPResponse(status: 204) }
        }
        try withAccounts(.sqlite, product: fine) { server in
            let answer = try RawHTTP.request(port: server.port, path: "/api/v1/open")
            #expect(answer.status == 204)
        }
    }

    /// A product whose one migration is `statement`.
    private static func migrating(_ statement: String) -> Product {
        Product(name: "shelf", version: "1", migrations: [Migration(version: 1, name: "x", statements: [statement])])
    }

    @Test(
        "a migration that creates, alters or drops anything not the product's own is refused",
        arguments: [
            "CREATE TABLE IF NOT EXISTS sessions (x INT)", "create unique index users_x on users (email)",
            "create unique index shelf_x on users (email)", "ALTER TABLE users ADD COLUMN shelf_points INTEGER",
            "DROP TABLE IF EXISTS sessions", "CREATE TABLE \"push_devices\"(x INT)",
        ])
    func refusedMigrations(statement: String) throws {
        #expect {
            try withAccounts(.sqlite, product: Self.migrating(statement)) { _ in }
        } throws: { error in
            (error as? ConfigurationError)?.description.contains("start with 'shelf_'") == true
        }
    }

    @Test(
        "a migration that writes Homeport's tables, or hides a change behind a trigger, a comment, quotes, a schema or a function, is refused",
        arguments: [
            "UPDATE users SET email = 'x'", "DELETE FROM sessions", "INSERT INTO sessions (x) VALUES (1)",
            "INSERT OR REPLACE INTO main.users (id) VALUES (1)", "REPLACE INTO users (id) VALUES (1)",
            "UPDATE OR IGNORE \"users\" SET email = ''", "/* shelf_ */ UPDATE `users` SET email = ''",
            "-- shelf_items\nDELETE FROM [sessions]", "WITH x AS (SELECT 1) DELETE FROM sessions",
            "TRUNCATE shelf_items, sessions", "ALTER TABLE shelf_items RENAME TO users_old",
            "CREATE TRIGGER shelf_t AFTER INSERT ON users BEGIN SELECT 1; END",
            "CREATE TRIGGER shelf_t AFTER INSERT ON shelf_items BEGIN DELETE FROM sessions; END",
            "CREATE TRIGGER shelf_t AFTER INSERT ON shelf_items BEGIN SELECT CASE WHEN 1 THEN 1 END; UPDATE users SET email = ''; END",
            "CREATE FUNCTION shelf_f() RETURNS trigger AS $$ BEGIN DELETE FROM sessions; RETURN NEW; END $$ LANGUAGE plpgsql",
            "CREATE FUNCTION shelf_f() RETURNS trigger AS $body$ BEGIN UPDATE public.users SET email = ''; END $body$",
            // What a red-team found past the first version of the guard.
            "DELETE FROM sessions --\u{0}\n.shelf_x", "UPDATE users AS u NOT INDEXED SET email = ''",
            "UPDATE users INDEXED BY users_email SET email = ''", "UPDATE users * AS shelf_u SET email = ''",
            "UPDATE ONLY (users) SET email = ''", "DELETE FROM ONLY (sessions)",
            "MERGE INTO users USING (SELECT 1) s ON true WHEN MATCHED THEN DELETE", "DROP TABLE shelf_a, sessions",
            "TRUNCATE shelf_a *, sessions CASCADE", "-- x\rDELETE FROM sessions",
            "/* /* */ ' */ DELETE FROM sessions --'", "WITH x AS (SELECT E'\\'') DELETE FROM sessions --'",
            "WITH x AS (SELECT $a1$'$a1$) DELETE FROM sessions --'",
            "WITH x AS (SELECT ARRAY[' ]']) DELETE FROM sessions --'",
            "WITH q AS (SELECT $a(')) DELETE FROM sessions --'",
            "WITH x AS (SELECT $a$, 'x$a$') DELETE FROM sessions --'",
            "DO $$ BEGIN EXECUTE 'UPDATE users SET email = 1'; END $$",
            "CREATE FUNCTION shelf_f() RETURNS void LANGUAGE sql AS 'DELETE FROM sessions'",
            "CREATE CONSTRAINT TRIGGER shelf_t AFTER INSERT ON users FOR EACH ROW EXECUTE FUNCTION shelf_g()",
            "CREATE TRIGGER shelf_t AFTER INSERT ON shelf_a FOR EACH ROW EXECUTE FUNCTION push_devices_gateway_change()",
            "CREATE RULE shelf_r AS ON INSERT TO sessions DO INSTEAD NOTHING", "DROP SCHEMA public CASCADE",
            "DROP OWNED BY CURRENT_USER", "ALTER SCHEMA public RENAME TO shelf_public",
            "REVOKE ALL ON users FROM CURRENT_USER", "DROP FUNCTION push_devices_gateway_change() CASCADE",
            "ALTER INDEX users_email_key RENAME TO shelf_x", "SELECT setval('users_id_seq', 1)",
            "CREATE UNLOGGED TABLE serving_settings (x INT)", "SELECT 1 AS name INTO serving_settings2",
            "GRANT ALL ON users TO PUBLIC", "PRAGMA writable_schema = ON", "PRAGMA user_version = 42",
            "ATTACH DATABASE '/tmp/x' AS shelf_db", "CREATE VIRTUAL TABLE serving_settings USING fts5(name)",
            "CREATE TRIGGER shelf_t AFTER UPDATE OF \"on\", email ON users BEGIN INSERT INTO shelf_log VALUES (1); END",
            "CREATE TABLE shelf_s () INHERITS (sessions)", "CREATE TABLE shelf_p PARTITION OF users FOR VALUES IN (1)",
            "CREATE VIEW db.shelf_s.sessions AS SELECT 1", "ALTER TABLE shelf_a INHERIT sessions",
            "WITH x AS (DELETE FROM sessions RETURNING 1) SELECT 1",
        ])
    func refusedWrites(statement: String) throws {
        #expect {
            try withAccounts(.sqlite, product: Self.migrating(statement)) { _ in }
        } throws: { error in
            (error as? ConfigurationError)?.description.contains("start with 'shelf_'") == true
        }
    }

    @Test(
        "a string of several statements is refused (SQLite would run the first and drop the rest)",
        arguments: [
            "CREATE TABLE shelf_a (x INT); DELETE FROM sessions",
            "CREATE TABLE shelf_a (x INT); CREATE TABLE shelf_b (x INT)",
            "CREATE TABLE shelf_a (x INT) /* ; */; ; DROP TABLE shelf_a",
            "CREATE TRIGGER shelf_t AFTER INSERT ON shelf_a BEGIN SELECT 1 AS \"case\"; END; CREATE TABLE shelf_b (x INT)",
        ])
    func severalStatements(statement: String) throws {
        #expect {
            try withAccounts(.sqlite, product: Self.migrating(statement)) { _ in }
        } throws: { error in
            (error as? ConfigurationError)?.description.contains("several statements") == true
        }
    }

    @Test("a product's own tables, triggers, views and data migrations pass, reading Homeport's tables as they like")
    func allowedMigrations() throws {
        let product = Product(
            name: "shelf", version: "1",
            migrations: [
                Migration(
                    version: 1, name: "own",
                    statements: [
                        """
                        CREATE TABLE IF NOT EXISTS shelf_items (
                            id INTEGER, owner BIGINT REFERENCES users (id) ON DELETE CASCADE ON UPDATE CASCADE,
                            note TEXT DEFAULT 'DELETE FROM sessions; UPDATE users SET x = 1')
                        """,
                        "CREATE TABLE IF NOT EXISTS shelf_log (id INTEGER)",
                        """
                        CREATE TRIGGER IF NOT EXISTS shelf_touch AFTER UPDATE OF id ON shelf_items BEGIN
                            INSERT INTO shelf_log (id) VALUES (CASE WHEN NEW.id > 0 THEN NEW.id ELSE 0 END);
                            DELETE FROM shelf_log WHERE id < 0;
                        END;
                        """,
                        "CREATE VIEW IF NOT EXISTS shelf_people AS SELECT email FROM users",
                        "INSERT INTO shelf_items (id, owner) SELECT id, id FROM users",
                        "UPDATE shelf_items SET note = (SELECT email FROM users WHERE users.id = shelf_items.owner)",
                        "CREATE TRIGGER IF NOT EXISTS shelf_quoted AFTER INSERT ON shelf_log BEGIN SELECT 1 AS \"end\"; END",
                        "ALTER TABLE shelf_items RENAME COLUMN note TO remark",
                        "WITH fresh AS (SELECT id FROM users) INSERT INTO shelf_log (id) SELECT id FROM fresh",
                    ])
            ])
        let logged = try withAccounts(.sqlite, product: product) { server in
            try server.application.database.execute("SELECT count(*) AS n FROM shelf_log").first?.int("n")
        }
        #expect(logged == 0, "every statement ran")
    }

    @Test("the command line refuses such a product before any command: migrate creates nothing")
    func commandLineRefuses() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("refused.sqlite")
        let status = ServerCommandLine.run(
            ["migrate", "--database", "sqlite:" + path], environment: [:],
            product: Self.migrating("CREATE TABLE IF NOT EXISTS sessions_copy (x INT)"))
        #expect(status == 1)
        #expect(!FileManager.default.fileExists(atPath: path), "migrate ran for a refused product")
    }

    @Test(
        "a product whose budgets, name or codes would meet Homeport's is refused",
        arguments: [
            (
                Product(
                    name: "shelf", version: "1",
                    budgets: [ProductBudget("signup-per-address", limit: RateLimit(1, per: 1), per: .account)]),
                "name of its own"
            ),
            (Product(name: "Shelf!", version: "1"), "a product's name"),
            (
                Product(name: "shelf", version: "1", notificationCodes: [CatalogueCode(code: "nocolon", title: "x")]),
                "not a catalogue code"
            ),
        ])
    func refusedProducts(product: Product, reason: String) throws {
        #expect {
            try withAccounts(.sqlite, product: product) { _ in }
        } throws: { error in
            (error as? ConfigurationError)?.description.contains(reason) == true
        }
    }
}
