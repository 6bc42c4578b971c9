import Foundation
import HomeportLogging
import HomeportServer
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

/// Runs a HomeportApplication in-process on a free port.
func withApplication<T>(
    _ backend: Backend, product: String = "homeport", options: DatabaseOptions = DatabaseOptions(),
    log: MemoryLogSink = MemoryLogSink(), _ body: (HomeportApplication, DatabaseURL) throws -> T
) throws -> T {
    let (url, cleanUp) = try backend.makeDatabaseURL()
    defer { cleanUp() }
    var configuration = ServerConfiguration(
        listen: .init(host: "127.0.0.1", port: 0), database: url, product: product, databaseOptions: options)
    configuration.http.workerThreads = 2
    let application = try HomeportApplication(
        configuration: configuration, logger: Logger(label: "test", sink: log))
    try application.start()
    defer { application.shutdown() }
    return try body(application, url)
}

@Suite("GET /api/v1/server-identity", .tags(.postgres))
struct IdentityRouteTests {
    @Test(
        "exactly product, protocolVersion 1 and a lowercase UUID; no-store; JSON; no cookie",
        arguments: Backend.allCases)
    func shape(backend: Backend) throws {
        try withApplication(backend) { application, _ in
            let response = try RawHTTP.request(port: application.port, path: "/api/v1/server-identity")
            #expect(response.status == 200)
            #expect(response.header("Cache-Control") == "no-store")
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.header("Set-Cookie") == nil)
            let object = try #require(response.jsonObject)
            #expect(Set(object.keys) == ["product", "protocolVersion", "instanceId"])
            #expect(object["product"] as? String == "homeport")
            // An integer 1, not "1", not 1.0 written as true.
            #expect(response.text.contains(#""protocolVersion":1"#))
            let id = try #require(object["instanceId"] as? String)
            #expect(id.wholeMatch(of: /[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/) != nil)
            #expect(try application.identity.storedInstanceID()?.instanceID.description == id)
        }
    }

    @Test("the answer is byte-for-byte the same with bogus credentials attached")
    func credentialsChangeNothing() throws {
        try withApplication(.sqlite) { application, _ in
            let plain = try RawHTTP.request(port: application.port, path: "/api/v1/server-identity")
            let decorated = try RawHTTP.request(
                port: application.port, path: "/api/v1/server-identity",
                headers: [
                    ("X-Session-Token", "bogus-token"), ("Authorization", "Bearer bogus"),
                    ("Cookie", "sessionid=bogus; csrftoken=bogus"),
                ])
            #expect(decorated.status == 200)
            #expect(decorated.body == plain.body)
            #expect(decorated.header("Set-Cookie") == nil)
            #expect(decorated.header("Cache-Control") == "no-store")
        }
    }

    @Test("the product name is the operator's")
    func productIsConfigurable() throws {
        try withApplication(.sqlite, product: "bookorbit") { application, _ in
            let response = try RawHTTP.request(port: application.port, path: "/api/v1/server-identity")
            #expect(response.jsonObject?["product"] as? String == "bookorbit")
        }
    }

    @Test(
        "a dropped table answers 503 JSON, never an invented id, and other routes keep working",
        arguments: Backend.allCases)
    func droppedTable(backend: Backend) throws {
        let log = MemoryLogSink()
        try withApplication(backend, log: log) { application, _ in
            try application.database.execute("DROP TABLE server_identity")
            let response = try RawHTTP.request(port: application.port, path: "/api/v1/server-identity")
            #expect(response.status == 503)
            #expect((response.jsonObject?["error"] as? [String: Any])?["code"] as? String == "identity_unavailable")
            #expect(!response.text.contains("instanceId"))
            #expect(try RawHTTP.request(port: application.port, path: "/healthz").status == 200)
            #expect(try RawHTTP.request(port: application.port, path: "/nowhere").status == 404)
            // Once the table is back (migrations re-run), the identity is served again.
            try application.database.execute("DELETE FROM schema_migrations")
            try HomeportSchema.migrator.migrate(application.database)
            #expect(try RawHTTP.request(port: application.port, path: "/api/v1/server-identity").status == 200)
        }
        #expect(log.lines.contains { $0.contains("server identity unavailable") })
    }

    @Test("a locked table answers 503 after the lock timeout instead of hanging", arguments: Backend.allCases)
    func lockedTable(backend: Backend) throws {
        let options = DatabaseOptions(lockTimeout: .milliseconds(300))
        try withApplication(backend, options: options) { application, url in
            let lock = try TableLock(url, table: "server_identity")
            defer { lock.release() }
            let response = try RawHTTP.request(port: application.port, path: "/api/v1/server-identity")
            #expect(response.status == 503)
            #expect(try RawHTTP.request(port: application.port, path: "/healthz").status == 200)
        }
    }
}
