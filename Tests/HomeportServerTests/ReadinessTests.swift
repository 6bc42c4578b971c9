import Foundation
import HomeportStorage
import HomeportTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("/readyz tells a load balancer whether the database is there and migrated", .tags(.process, .postgres))
struct ReadinessTests {
    private func readiness(_ port: Int) throws -> (status: Int, body: [String: Any]) {
        let response = try RawHTTP.request(port: port, path: "/readyz")
        #expect(response.header("Cache-Control") == "no-store")
        return (response.status, response.jsonObject ?? [:])
    }

    @Test("ready; a missing migration and an unreachable database are 503 and say which")
    func readiness() throws {
        let (url, cleanUp) = try Backend.postgres.makeDatabaseURL()
        defer { cleanUp() }
        let server = try ServerProcess(serve: ["--database", url.rawText])
        let ready = try readiness(server.port)
        #expect(ready.status == 200 && ready.body["status"] as? String == "ready")

        let database = try url.open()
        let last = try #require(try database.execute("SELECT max(version) AS v FROM schema_migrations").first?.int("v"))
        try database.execute("DELETE FROM schema_migrations WHERE version = $1", [.integer(last)])
        let pending = try readiness(server.port)
        #expect(pending.status == 503 && pending.body["status"] as? String == "migrations_pending")
        #expect(pending.body["pending"] as? [Int] == [Int(last)])
        try database.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, 'restored', 0)", [.integer(last)])
        database.close()

        // The database refuses every connection: the server's are cut and none reopens.
        guard case .postgres(let text) = url, let name = text.split(separator: "/").last else { return }
        let admin = try DatabaseURL.postgres(url: try TestPostgres.adminURL()).open()
        defer { admin.close() }
        try admin.execute("ALTER DATABASE \"\(name)\" ALLOW_CONNECTIONS false")
        try admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", [.text(String(name))])
        var down = (status: 0, body: [String: Any]())
        try eventually(timeout: .seconds(3), every: .milliseconds(50)) {
            down = try readiness(server.port)
            return down.status == 503
        }
        #expect(down.status == 503 && down.body["status"] as? String == "database_unavailable")
        #expect(try RawHTTP.request(port: server.port, path: "/healthz").status == 200, "alive all the same")
        try admin.execute("ALTER DATABASE \"\(name)\" ALLOW_CONNECTIONS true")
        var back = 0
        try eventually(timeout: .seconds(3), every: .milliseconds(50)) {
            back = try readiness(server.port).status
            return back == 200
        }
        #expect(back == 200)
        #expect(server.stop() == 0)
    }
}
