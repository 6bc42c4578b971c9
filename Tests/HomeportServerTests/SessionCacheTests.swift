import Foundation
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// A few `homeport-server` processes on one database.
private struct Replicas {
    let servers: [ServerProcess]
    let url: DatabaseURL
    let directory: TemporaryDirectory

    init(_ count: Int, on url: DatabaseURL, cacheSeconds: Int = 1) throws {
        self.url = url
        directory = try TemporaryDirectory()
        let outbox = directory.file("outbox")
        servers = try ServerProcess.replicas(
            count, database: url.rawText, outbox: outbox,
            ["--log-level", "warning", "--session-cache-seconds", String(cacheSeconds)])
    }

    func stop() {
        for server in servers { #expect(server.stop() == 0) }
        directory.remove()
    }

    func signIn(_ email: String, password: String = "correct horse battery", via index: Int = 0) throws -> String {
        let body = Data(#"{"email":"\#(email)","password":"\#(password)"}"#.utf8)
        for path in [AllauthAppPath.signup, AllauthAppPath.login] {
            let response = try RawHTTP.request(
                port: servers[index].port, method: "POST", path: AllauthAppPath.base + "/" + path,
                headers: [("Content-Type", "application/json")], body: body)
            if let token = response.sessionToken { return token }
        }
        throw RawHTTPError("could not sign in \(email)")
    }

    /// app-info's status (200 or 401) and the app door session's (200 or 410) on one replica.
    func statuses(_ token: String, on index: Int) throws -> (api: Int, door: Int) {
        let port = servers[index].port
        let api = try RawHTTP.request(port: port, path: HomeportPath.appInfo, headers: [("X-Session-Token", token)])
        let door = try RawHTTP.request(
            port: port, path: AllauthAppPath.base + "/" + AllauthAppPath.session,
            headers: [("X-Session-Token", token)])
        return (api.status, door.status)
    }

    /// Every replica serves `token` now: their caches hold it (read within the last second).
    func warm(_ token: String) throws {
        for index in servers.indices {
            let answer = try statuses(token, on: index)
            #expect(answer.api == 200 && answer.door == 200, "replica \(index) serves the live token")
        }
    }

    /// Waits until every replica refuses `token` (401 on the API, 410 at the app door); returns
    /// the longest time that took, or fails.
    func refusedEverywhere(_ token: String, _ what: String) throws -> Duration {
        let start = ContinuousClock.now
        var longest = Duration.zero
        for index in servers.indices {
            while true {
                // What counts is when a request was sent: one sent a second after the change must
                // be refused, however slowly a loaded machine answers the ones before it.
                let asked = ContinuousClock.now
                let answer = try statuses(token, on: index)
                if answer.api == 401 && answer.door == 410 { break }
                #expect(answer.api == 200 || answer.api == 401)
                guard asked - start < .seconds(1) else {
                    Issue.record("replica \(index) still served the token a second after \(what)")
                    return ContinuousClock.now - start
                }
                usleep(5_000)
            }
            longest = max(longest, ContinuousClock.now - start)
        }
        return longest
    }
}

@Suite(
    "The session cache never serves an ended session for more than a second", .serialized, .tags(.process, .postgres))
struct SessionCacheTests {
    @Test("three replicas on one PostgreSQL: logout, users hold and a password change reach all within a second")
    func replicasOnPostgres() throws {
        let (url, cleanUp) = try Backend.postgres.makeDatabaseURL()
        defer { cleanUp() }
        // Entries that would live half a minute: only the announcements can refuse in time.
        let replicas = try Replicas(3, on: url, cacheSeconds: 30)
        defer { replicas.stop() }

        // Logout through one replica: the other two drop it from their caches.
        let ada = try replicas.signIn("ada@example.com", via: 0)
        try replicas.warm(ada)
        let logout = try RawHTTP.request(
            port: replicas.servers[1].port, method: "DELETE", path: AllauthAppPath.base + "/" + AllauthAppPath.session,
            headers: [("X-Session-Token", ada)])
        #expect(logout.status == 401)
        _ = try replicas.refusedEverywhere(ada, "a logout")

        // An operator's hold from the command line (another process) ends every session.
        let bo = try replicas.signIn("bo@example.com", via: 2)
        try replicas.warm(bo)
        let hold = try ServerProcess.run(["users", "hold", "bo@example.com", "--database", url.rawText])
        #expect(hold.status == 0, "\(hold.error)")
        _ = try replicas.refusedEverywhere(bo, "users hold")

        // A password change ends the account's other sessions.
        let first = try replicas.signIn("cy@example.com", via: 0)
        let second = try replicas.signIn("cy@example.com", via: 1)
        try replicas.warm(first)
        let change = try RawHTTP.request(
            port: replicas.servers[2].port, method: "POST",
            path: AllauthAppPath.base + "/" + AllauthAppPath.passwordChange,
            headers: [("Content-Type", "application/json"), ("X-Session-Token", second)],
            body: Data(#"{"current_password":"correct horse battery","new_password":"another good password"}"#.utf8))
        #expect(change.status == 200)
        _ = try replicas.refusedEverywhere(first, "a password change")
    }

    @Test("a replica whose LISTEN connection is killed still never serves an ended session")
    func listenerKilled() throws {
        let (url, cleanUp) = try Backend.postgres.makeDatabaseURL()
        defer { cleanUp() }
        // Entries that would live half a minute: only distrust while the listener is down can
        // refuse in time.
        let replicas = try Replicas(3, on: url, cacheSeconds: 30)
        defer { replicas.stop() }
        let admin = try DatabaseURL.postgres(url: try TestPostgres.adminURL()).open()
        defer { admin.close() }
        let listeners = "SELECT pid FROM pg_stat_activity WHERE application_name = 'homeport-server-listen'"
        // Each replica listens once it has started (a moment after its first line).
        var pids: [Int64] = []
        try eventually(timeout: .seconds(2), every: .milliseconds(10)) {
            pids = try admin.execute(listeners).compactMap { $0.int("pid") }
            return pids.count >= 3
        }
        #expect(pids.count >= 3)

        for round in 1...3 {
            let token = try replicas.signIn("round\(round)@example.com", via: 0)
            try replicas.warm(token)
            // Every replica's listener is cut, then the session ends before they can reconnect.
            for pid in try admin.execute(listeners).compactMap({ $0.int("pid") }) {
                try admin.execute("SELECT pg_terminate_backend($1)", [.integer(pid)])
            }
            let logout = try RawHTTP.request(
                port: replicas.servers[0].port, method: "DELETE",
                path: AllauthAppPath.base + "/" + AllauthAppPath.session, headers: [("X-Session-Token", token)])
            #expect(logout.status == 401)
            _ = try replicas.refusedEverywhere(token, "a logout while the listeners were down (round \(round))")
        }
        // They listen again, and live tokens are served everywhere.
        let live = try replicas.signIn("after@example.com", via: 1)
        try replicas.warm(live)
    }

    @Test("two servers on one SQLite file: an ended session is refused by the other within a second")
    func sqliteProcesses() throws {
        let (url, cleanUp) = try Backend.sqlite.makeDatabaseURL()
        defer { cleanUp() }
        let replicas = try Replicas(2, on: url)
        defer { replicas.stop() }
        let token = try replicas.signIn("ada@example.com")
        try replicas.warm(token)
        let logout = try RawHTTP.request(
            port: replicas.servers[0].port, method: "DELETE", path: AllauthAppPath.base + "/" + AllauthAppPath.session,
            headers: [("X-Session-Token", token)])
        #expect(logout.status == 401)
        // The server that ended it refuses it at once.
        #expect(try replicas.statuses(token, on: 0) == (401, 410))
        _ = try replicas.refusedEverywhere(token, "a logout on the other server")

        let held = try replicas.signIn("bo@example.com", via: 1)
        try replicas.warm(held)
        let hold = try ServerProcess.run(["users", "hold", "bo@example.com", "--database", url.rawText])
        #expect(hold.status == 0)
        _ = try replicas.refusedEverywhere(held, "users hold")
    }

    @Test("the cache serves a session read within the last second, and no longer")
    func cacheServesThenForgets() throws {
        let (url, cleanUp) = try Backend.sqlite.makeDatabaseURL()
        defer { cleanUp() }
        let replicas = try Replicas(1, on: url)
        defer { replicas.stop() }
        let token = try replicas.signIn("ada@example.com")
        try replicas.warm(token)
        // The row goes behind the server's back (no logout, no announcement).
        let database = try url.open()
        defer { database.close() }
        let start = ContinuousClock.now
        try database.execute("DELETE FROM sessions")
        let cached = try replicas.statuses(token, on: 0)
        if ContinuousClock.now - start < .milliseconds(500) {
            #expect(cached == (200, 200), "a session read just now is served from the cache")
        }
        _ = try replicas.refusedEverywhere(token, "its row was deleted")
    }
}

@Suite("The session cache's rules, one by one", .tags(.process, .postgres))
struct SessionCacheRuleTests {
    private let session = Session(
        keyHash: "k", userID: 1, kind: .app, expiresAt: 2_000_000_000, authenticatedAt: nil, standing: nil)
    private let account = Account(
        id: 1, email: "ada@example.com", passwordHash: "x", approval: .approved, createdAt: Date())

    @Test("while its listener is down, the cache serves nothing, even what it is handed")
    func distrustWhileListenerDown() {
        let cache = SessionCache(trusted: false, maximumAge: .seconds(60))
        cache.store(session, account, token: "t", generation: SessionCache.currentGeneration)
        #expect(cache.lookup(token: "t", kind: .app, now: 1_800_000_000) == nil, "not trusted before ready")
        cache.listenerReported(.ready)
        cache.store(session, account, token: "t", generation: SessionCache.currentGeneration)
        #expect(cache.lookup(token: "t", kind: .app, now: 1_800_000_000) != nil)
        cache.listenerReported(.lost)
        #expect(cache.lookup(token: "t", kind: .app, now: 1_800_000_000) == nil)
        cache.store(session, account, token: "t", generation: SessionCache.currentGeneration)
        #expect(cache.lookup(token: "t", kind: .app, now: 1_800_000_000) == nil, "lost: what is stored is not served")
    }

    @Test("a row read before a session ended is never served; nor one past its expiry or its door")
    func generationExpiryAndDoor() {
        let cache = SessionCache(trusted: true, maximumAge: .seconds(60))
        let before = SessionCache.currentGeneration
        SessionCache.sessionsEnded()
        cache.store(session, account, token: "t", generation: before)
        #expect(cache.lookup(token: "t", kind: .app, now: 1_800_000_000) == nil)
        cache.store(session, account, token: "t", generation: SessionCache.currentGeneration)
        #expect(cache.lookup(token: "t", kind: .web, now: 1_800_000_000) == nil)
        #expect(cache.lookup(token: "t", kind: .app, now: 2_000_000_000) == nil, "expired")
        cache.store(session, account, token: "t", generation: SessionCache.currentGeneration)
        #expect(cache.lookup(token: "t", kind: .app, now: 1_800_000_000) != nil)
        SessionCache.sessionsEnded()
        #expect(cache.lookup(token: "t", kind: .app, now: 1_800_000_000) == nil)
    }

    @Test("an entry is found by the token it was read with, and by no other spelling or token")
    func keyedByTheToken() {
        let cache = SessionCache(trusted: true, maximumAge: .seconds(60))
        let token = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
        cache.store(session, account, token: token, generation: SessionCache.currentGeneration)
        #expect(cache.lookup(token: token, kind: .app, now: 1_800_000_000) != nil)
        for other in [
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB", token.lowercased(), " " + token, String(token.dropLast()),
            "k",
        ] {
            #expect(cache.lookup(token: other, kind: .app, now: 1_800_000_000) == nil, "\(other)")
        }
    }
}

@Suite("The session cache holds only what is fresh", .tags(.process, .postgres))
struct SessionCacheMemoryTests {
    @Test("entries of tokens never read again are swept out once they are past their age")
    func staleEntriesSwept() throws {
        let cache = SessionCache(trusted: true, maximumAge: .milliseconds(50))
        for index in 0..<1000 {
            let session = Session(
                keyHash: "old-\(index)", userID: 1, kind: .app, expiresAt: 2_000_000_000, authenticatedAt: nil,
                standing: nil)
            cache.store(
                session,
                Account(id: 1, email: "a@example.com", passwordHash: "x", approval: .approved, createdAt: Date()),
                token: "old-\(index)", generation: SessionCache.currentGeneration)
        }
        // (A session ending in a test running alongside may drop a few stores: never most.)
        #expect(cache.count > 500)
        usleep(60_000)
        let fresh = Session(
            keyHash: "new", userID: 1, kind: .app, expiresAt: 2_000_000_000, authenticatedAt: nil, standing: nil)
        cache.store(
            fresh, Account(id: 1, email: "a@example.com", passwordHash: "x", approval: .approved, createdAt: Date()),
            token: "new", generation: SessionCache.currentGeneration)
        #expect(cache.count <= 1)
    }
}
