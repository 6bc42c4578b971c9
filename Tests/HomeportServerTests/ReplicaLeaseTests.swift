import Foundation
import HomeportLogging
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

#if canImport(Glibc)
    import Glibc
#endif

/// A serving replica vouches for its cached identity only while it can write its heartbeat, and
/// freshness is judged by the database's clock, not by any process's.
@Suite("Replica heartbeats and the identity they vouch for", .tags(.process, .postgres))
struct ReplicaLeaseTests {
    @Test(
        "a replica that cannot write its heartbeat stops answering its identity, and answers the reset one when it can"
    )
    func leaseLapses() throws {
        let (url, cleanUp) = try Backend.postgres.makeDatabaseURL()
        defer { cleanUp() }
        var configuration = ServerConfiguration(listen: .init(host: "127.0.0.1", port: 0), database: url)
        configuration.http.workerThreads = 2
        configuration.heartbeat = HeartbeatTiming(interval: .milliseconds(100), lease: .milliseconds(500))
        let log = MemoryLogSink()
        let application = try HomeportApplication(
            configuration: configuration, logger: Logger(label: "test", minimumLevel: .debug, sink: log))
        try application.start()
        defer { application.shutdown() }
        let identity = { try RawHTTP.request(port: application.port, path: "/api/v1/server-identity") }
        let first = try identity()
        #expect(first.status == 200)
        let old = try #require(first.jsonObject?["instanceId"] as? String)

        let operatorDatabase = try url.open()
        defer { operatorDatabase.close() }
        let holder = try url.open()
        defer { holder.close() }
        try holder.withConnection { connection in
            // The heartbeat's writes wait behind this lock: the replica cannot vouch any more.
            try connection.execute("BEGIN")
            try connection.execute("LOCK TABLE replicas IN EXCLUSIVE MODE")
            var answer = try identity()
            try eventually(timeout: .seconds(5), every: .milliseconds(50)) {
                answer = try identity()
                return answer.status == 503
            }
            #expect(answer.status == 503, "past its lease the replica does not answer the identity it cached")
            #expect(answer.text.contains("identity_unavailable"))
            // The operator, taking the silent replica for dead, resets the identity meanwhile.
            let outcome = try IdentityStore(database: operatorDatabase).reset(force: true)
            #expect(outcome == .removed(try #require(InstanceID(old))))
            try connection.execute("COMMIT")
        }
        var answer = try identity()
        try eventually(timeout: .seconds(5), every: .milliseconds(50)) {
            answer = try identity()
            return answer.status == 200
        }
        let new = answer.jsonObject?["instanceId"] as? String
        #expect(answer.status == 200)
        #expect(new != nil && new != old, "with its heartbeat written again, it reads the identity anew")
        #expect(try IdentityStore(database: operatorDatabase).storedInstanceID()?.instanceID.description == new)
        #expect(log.lines.contains { $0.contains("identity changed in the database") })
    }

    @Test("a replica whose clock runs a minute behind is still seen serving by identity reset")
    func skewedReplicaClock() throws {
        let library = try #require(
            ["x86_64", "aarch64"].map { "/usr/lib/\($0)-linux-gnu/faketime/libfaketime.so.1" }.first {
                FileManager.default.fileExists(atPath: $0)
            }, "libfaketime is missing (scripts/test installs the faketime package)")
        let (url, cleanUp) = try Backend.postgres.makeDatabaseURL()
        defer { cleanUp() }
        // Started by `timeout`: a Swift program exec'd straight into libfaketime loses its arguments.
        let server = try ServerProcess(
            serve: ["--database", url.rawText],
            environment: ["LD_PRELOAD": library, "FAKETIME": "-60s", "FAKETIME_DONT_FAKE_MONOTONIC": "1"],
            launcher: ["/usr/bin/timeout", "600"])
        let answer = try RawHTTP.request(port: server.port, path: "/api/v1/server-identity")
        #expect(answer.status == 200)
        // The replica's own clock is indeed a minute behind (its Date header says so).
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        let served = try #require(answer.header("Date").flatMap(formatter.date(from:)))
        #expect(Date().timeIntervalSince(served) > 50)

        // The server is `timeout`'s child (which may not see a SIGTERM this test process sends).
        let children = try String(
            contentsOfFile: "/proc/\(server.pid)/task/\(server.pid)/children", encoding: .utf8)
        let replica = try #require(children.split(separator: " ").first.flatMap { Int32($0) })

        let refused = try ServerProcess.run(["identity", "reset", "--replicas-stopped", "--database", url.rawText])
        #expect(refused.status == 3, "\(refused.output)\(refused.error)")
        #expect(refused.error.contains("pid \(replica)"))
        kill(replica, SIGTERM)
        #expect(server.stop(signal: 0) == 0)
    }
}
