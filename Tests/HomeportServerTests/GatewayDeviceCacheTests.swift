import Foundation
import HomeportCrypto
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportGateway
@testable import HomeportServer

private func device(_ number: Int) -> String {
    String(format: "%064x", 0x9c00 + number)
}

private func apns(_ token: String) -> GatewayDevice {
    GatewayDevice(token: token, provider: .apns, environment: .production)
}

private func webPush(_ token: String, endpoint: String) -> GatewayDevice {
    GatewayDevice(
        token: token, provider: .webpush, environment: .production, endpoint: endpoint, p256dh: "key", auth: "auth")
}

/// Two transactions interleaved on purpose: `first` runs on a thread of its own until it calls
/// the pause it is given, then `then` starts on another; once `waits` says a transaction waits for
/// a lock (or after ten seconds), `first` goes on. What each returned (`failed` when it threw, or
/// when it never came to run), and whether the wait was seen.
private func interleave(
    _ first: @escaping @Sendable (_ pause: @Sendable () -> Void) throws -> String,
    then second: @escaping @Sendable () throws -> String, waits: () -> Bool
) -> (outcomes: [String], waited: Bool) {
    let paused = DispatchSemaphore(value: 0)
    let go = DispatchSemaphore(value: 0)
    let outcomes = LockedBox(["failed", "failed"])
    let done = DispatchGroup()
    func start(_ index: Int, _ body: @escaping @Sendable () throws -> String) {
        done.enter()
        Thread.detachNewThread {
            // Ended without pausing (it threw first): the test goes on all the same.
            defer { paused.signal() }
            let outcome = (try? body()) ?? "failed"
            outcomes.mutate { $0[index] = outcome }
            done.leave()
        }
    }
    start(0) {
        try first {
            paused.signal()
            go.wait()
        }
    }
    guard paused.wait(timeout: .now() + 30) == .success else { return (outcomes.value, false) }
    start(1, second)
    let waited = eventually { waits() }
    go.signal()
    _ = done.wait(timeout: .now() + 30)
    return (outcomes.value, waited)
}

@Suite(
    "The gateway's device cache: it answers only at the mark it was filled at, so no replica pushes to a device another change removed",
    .tags(.process, .postgres, .interop))
struct GatewayDeviceCacheTests {
    @Test("a lookup answers only at the mark it was filled at; what it does not hold is nil")
    func answersAtItsCount() {
        let cache = GatewayDeviceCache(capacity: 10_000)
        cache.apply(server: 1, from: 0, to: 2, registered: [apns("a"), webPush("w", endpoint: "e")], removed: [])
        #expect(cache.lookup(server: 1, version: 2, ["a", "w", "c"]) == [apns("a"), webPush("w", endpoint: "e"), nil])
        #expect(cache.lookup(server: 2, version: 2, ["a"]) == [nil], "another server's")
        #expect(cache.lookup(server: 1, version: 3, ["a"]) == [nil], "at another mark: let go")
        #expect(cache.count == 0)
        #expect(cache.lookup(server: 1, version: 2, ["a"]) == [nil], "and not kept for the mark before")
    }

    @Test("what was read before a change is not kept after it; a change from a mark it did not hold starts anew")
    func changesInOrder() {
        let cache = GatewayDeviceCache(capacity: 10_000)
        cache.apply(server: 1, from: 0, to: 1, registered: [apns("a")], removed: [])
        // Read by a request that read the mark before the change.
        cache.learn(server: 1, at: 0, [apns("x")])
        #expect(cache.lookup(server: 1, version: 1, ["a", "x"]) == [apns("a"), nil])
        // This process's change from a mark it did not hold: another replica's came between.
        cache.apply(server: 1, from: 3, to: 5, registered: [apns("b")], removed: [])
        #expect(cache.lookup(server: 1, version: 5, ["a", "b"]) == [nil, apns("b")])
        // From the mark it holds: removals, then registrations.
        cache.apply(server: 1, from: 5, to: 8, registered: [apns("c"), apns("b")], removed: ["b", "c"])
        #expect(cache.lookup(server: 1, version: 8, ["b", "c"]) == [apns("b"), apns("c")])
        cache.apply(server: 1, from: 8, to: 9, registered: [], removed: ["c"])
        cache.learn(server: 1, at: 9, [apns("d")])
        #expect(cache.lookup(server: 1, version: 9, ["b", "c", "d"]) == [apns("b"), nil, apns("d")])
    }

    @Test(
        "it holds at most its capacity in bytes, half of it for one server, letting go of the server looked up longest ago; a Web Push device counts its address; 0 holds nothing"
    )
    func capacity() {
        let one = GatewayDeviceCache.bytes(of: apns("a"))
        #expect(GatewayDeviceCache.bytes(of: webPush("w", endpoint: String(repeating: "e", count: 1000))) > one + 1000)
        let cache = GatewayDeviceCache(capacity: 4 * one)
        cache.apply(server: 1, from: 0, to: 1, registered: [apns("a"), apns("b")], removed: [])
        cache.apply(server: 2, from: 0, to: 1, registered: [apns("c")], removed: [])
        _ = cache.lookup(server: 1, version: 1, ["a"])
        cache.apply(server: 3, from: 0, to: 1, registered: [apns("d"), apns("e")], removed: [])
        #expect(cache.count == 4 && cache.bytes == 4 * one)
        #expect(cache.lookup(server: 2, version: 1, ["c"]) == [nil], "the server looked up longest ago went")
        #expect(cache.lookup(server: 1, version: 1, ["a", "b"]) == [apns("a"), apns("b")])
        // One server past its share: what fits, and never an older registration of a token it
        // could not keep, nor the first of a token named twice.
        let small = GatewayDeviceCache(capacity: 4 * one)
        small.apply(server: 1, from: 0, to: 1, registered: [webPush("w", endpoint: "old")], removed: [])
        small.apply(
            server: 1, from: 1, to: 4, registered: [apns("a"), apns("b"), webPush("w", endpoint: "new")], removed: [])
        #expect(small.count == 2 && small.bytes == 2 * one)
        #expect(small.lookup(server: 1, version: 4, ["a", "b", "w"]) == [apns("a"), apns("b"), nil])
        small.learn(server: 1, at: 4, [apns("x"), apns("y")])
        #expect(small.count == 2 && small.bytes == 2 * one)
        small.apply(server: 1, from: 4, to: 5, registered: [], removed: ["a", "b"])
        #expect(small.count == 0 && small.bytes == 0, "removals give their bytes back")
        small.apply(
            server: 1, from: 5, to: 6,
            registered: [webPush("v", endpoint: "e"), webPush("v", endpoint: String(repeating: "e", count: 1000))],
            removed: [])
        #expect(small.lookup(server: 1, version: 6, ["v"]) == [nil], "named twice, the later did not fit")
        // A server larger than its share takes no room from the others.
        let shared = GatewayDeviceCache(capacity: 4 * one)
        shared.apply(server: 2, from: 0, to: 1, registered: [apns("c")], removed: [])
        shared.learn(server: 1, at: 0, ["a", "b", "x", "y", "z"].map(apns))
        #expect(shared.lookup(server: 2, version: 1, ["c"]) == [apns("c")])
        #expect(shared.count == 3)
        let none = GatewayDeviceCache(capacity: 0)
        none.apply(server: 1, from: 0, to: 1, registered: [apns("a")], removed: [])
        none.learn(server: 1, at: 1, [apns("b")])
        #expect(none.count == 0)
        #expect(none.lookup(server: 1, version: 1, ["a", "b"]) == [nil, nil])
    }

    @Test(
        "the mark's migration runs again cleanly when its record is lost, and its triggers still draw",
        arguments: Backend.allCases)
    func migrationRunsAgain(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let database = try url.open(options: DatabaseOptions())
        defer { database.close() }
        _ = try GatewaySchema.migrator.migrate(database)
        try database.execute(
            "DELETE FROM component_migrations WHERE component = $1 AND version = 3", [.text(GatewaySchema.component)])
        #expect(try GatewaySchema.migrator.migrate(database) == [3])
        guard
            case .added(let server) = try GatewayServerStore(database).add(
                name: "a", instanceID: UUID().uuidString.lowercased(), url: "https://a.example.net",
                credentialHash: "digest", now: 0)
        else { throw RawHTTPError("not enrolled") }
        let devices = GatewayDeviceStore(database)
        var marks = [try devices.version(server: server.id)]
        try devices.register(server: server.id, apns(device(1)), now: 0)
        marks.append(try devices.version(server: server.id))
        try devices.register(server: server.id, apns(device(1)), now: 1)
        marks.append(try devices.version(server: server.id))
        try devices.remove(server: server.id, token: device(1))
        marks.append(try devices.version(server: server.id))
        #expect(Set(marks).count == 4, "each write drew a new mark: \(marks)")
    }

    @Test(
        "a replica that holds a device refuses it at once when another replica, Apple's 410 there, or any write removed or changed it",
        arguments: Backend.allCases)
    func otherReplicasChanges(backend: Backend) throws {
        let standIn = try APNsStandIn()
        let later = (Int64(Date().timeIntervalSince1970) + 60) * 1000
        try standIn.script(tokens: [
            device(2): [["status": 200], ["status": 410, "reason": "Unregistered", "timestamp": later]]
        ])
        let gateway = try GatewayHarness(backend, replicas: 2, standIn: standIn)
        let instance = UUID().uuidString.lowercased()
        let credential = try gateway.enroll("a", instanceID: instance)
        try gateway.register((1...4).map(device), credential: credential, replica: 0)
        let cache = gateway.replicas[0].deviceCache
        #expect(cache.count == 4, "replica 0 holds what it registered")
        func status(_ token: String, on replica: Int) throws -> Int? {
            let payload =
                #"{"aps":{"alert":{"title":"Hi"}},"homeport":{"c":"homeport/core:test","s":"\#(instance)"}}"#
            let push: [String: Any] = [
                "apnsId": UUID().uuidString.lowercased(), "deviceToken": token, "environment": "production",
                "topic": APNsStandIn.topic, "payload": payload, "priority": 10, "expiration": 0,
            ]
            return try gateway.push([push], credential: credential, replica: replica).results.first?["status"] as? Int
        }
        // Each change below follows a push that replica 0 answered from what it holds (a change
        // lets go of everything it held of the server, so each device is pushed to again first).
        #expect(try status(device(1), on: 0) == 200)
        try gateway.database.execute("DELETE FROM gateway_devices WHERE token = $1", [.text(device(3))])
        #expect(try status(device(3), on: 0) == 403, "deleted by hand")
        #expect(try status(device(1), on: 0) == 200)
        let removal = try gateway.post(
            PushGatewayPath.devices, credential: credential, json: ["register": [], "remove": [device(1)]], replica: 1)
        #expect(removal.status == 200)
        #expect(try status(device(1), on: 0) == 403, "removed through replica 1")
        #expect(try status(device(2), on: 0) == 200)
        #expect(try status(device(2), on: 1) == 410)
        #expect(try status(device(2), on: 0) == 403, "removed by Apple's 410 at replica 1")
        #expect(try status(device(2), on: 1) == 403, "and at replica 1 itself")
        // Registered through replica 1: replica 0 reads it from the database, then holds it.
        try gateway.register([device(5)], credential: credential, replica: 1)
        #expect(try status(device(5), on: 0) == 200)
        #expect(try status(device(4), on: 0) == 200)
        #expect(cache.count == 2, "devices 4 and 5, read and held")
        try gateway.database.execute(
            "UPDATE gateway_devices SET provider = 'fcm' WHERE token = $1", [.text(device(4))])
        #expect(try status(device(4), on: 0) == 403, "changed by hand to another service's device")
        #expect(
            standIn.requests().compactMap { $0["device"] as? String }.filter { $0 != device(2) } == [
                device(1), device(1), device(5), device(4),
            ])
    }

    @Test(
        "a revocation and a change of devices at once on PostgreSQL: each waits for the other's transaction, neither deadlocks, and a change after the revocation is refused"
    )
    func revocationMeetsAChange() throws {
        let gateway = try GatewayHarness(.postgres, standIn: try APNsStandIn())
        let credential = try gateway.enroll("a", instanceID: UUID().uuidString.lowercased())
        try gateway.register([device(1)], credential: credential)
        let database = gateway.database
        let id = try #require(
            try GatewayServerStore(database).live(credentialHash: SecretToken.storedForm(of: credential))
        ).id
        /// Whether a transaction of this test's database waits for a lock another holds.
        func waitingForALock() -> Bool {
            (try? database.execute(
                """
                SELECT COUNT(*) AS n FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock'
                """
            ).first?.int("n")) == 1
        }
        // A change inside its transaction (the server's row taken), then the revocation.
        let first = interleave(
            { pause in
                let marks = try database.transaction { db in
                    try GatewayDeviceStore(db).change(server: id) {
                        pause()
                        // A device the revocation removes: registered again here, its row changed.
                        try GatewayDeviceStore(db).register(server: id, apns(device(1)), now: 1)
                    }
                }
                return marks == nil ? "refused" : "changed"
            },
            then: {
                try database.transaction { try GatewayServerStore($0).revoke(name: "a", now: 2) } ? "revoked" : "none"
            }, waits: waitingForALock)
        #expect(first.waited, "the revocation waits for the change's transaction")
        #expect(first.outcomes == ["changed", "revoked"])
        #expect(
            try GatewayDeviceStore(database).count(server: id) == 0,
            "the device the change wrote went with the revocation")

        // The other way round: a revocation inside its transaction, then a change through the route.
        let second = try gateway.enroll("b", instanceID: UUID().uuidString.lowercased())
        try gateway.register([device(3)], credential: second)
        let port = gateway.replicas[0].port
        let body = #"{"register":[{"token":"\#(device(4))","environment":"production"}],"remove":[]}"#
        let then = interleave(
            { pause in
                try database.transaction { db in
                    let revoked = try GatewayServerStore(db).revoke(name: "b", now: 3)
                    pause()
                    return revoked ? "revoked" : "none"
                }
            },
            then: {
                let answer = try RawHTTP.request(
                    port: port, method: "POST", path: PushGatewayPath.devices,
                    headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(second)")],
                    body: Data(body.utf8))
                return String(answer.status)
            }, waits: waitingForALock)
        #expect(then.waited, "the change waits for the revocation's transaction")
        #expect(then.outcomes == ["revoked", "401"], "the change finds the server revoked")
        let b = try #require(
            try database.execute("SELECT id FROM gateway_servers WHERE name = 'b'").first?.int("id"))
        #expect(try GatewayDeviceStore(database).count(server: b) == 0, "nothing registered for a revoked server")
    }
}
