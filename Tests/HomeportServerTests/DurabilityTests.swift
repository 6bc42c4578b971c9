import Foundation
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What clients were told: every write the server acknowledged.
private final class Acknowledged: @unchecked Sendable {
    private let lock = NSLock()
    /// Tokens of sign-ups answered 200, and not logged out.
    private var live: [String] = []
    /// Tokens whose logout was answered.
    private var ended: [String] = []

    func signedUp(_ token: String) { lock.withLock { live.append(token) } }

    /// A logout is about to be sent: until it is answered, whether the session still lives is
    /// unknown (the server may end it and die before it answers), so it is checked no more.
    func loggingOut(_ token: String) {
        lock.withLock { live.removeAll { $0 == token } }
    }

    func loggedOut(_ token: String) {
        lock.withLock { ended.append(token) }
    }

    var snapshot: (live: [String], ended: [String]) { lock.withLock { (live, ended) } }
}

/// A flag the load's threads poll.
private final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .relaxed) }
    func set() { flag.store(true, ordering: .relaxed) }
}

/// Sign-ups and logouts from several clients, as fast as the server answers, until `stop`.
private func writeLoad(port: Int, clients: Int, prefix: String, acknowledged: Acknowledged, stop: StopFlag)
    -> DispatchGroup
{
    let group = DispatchGroup()
    for client in 0..<clients {
        group.enter()
        Thread.detachNewThread {
            defer { group.leave() }
            var count = 0
            while !stop.isSet {
                count += 1
                let email = "\(prefix)-\(client)-\(count)@example.com"
                let body = Data(#"{"email":"\#(email)","password":"correct horse battery"}"#.utf8)
                guard
                    let signup = try? RawHTTP.request(
                        port: port, method: "POST", path: AllauthAppPath.base + "/" + AllauthAppPath.signup,
                        headers: [("Content-Type", "application/json"), ("Connection", "close")], body: body,
                        timeout: 5)
                else { continue }
                guard signup.status == 200,
                    let token = (signup.jsonObject?["meta"] as? [String: Any])?["session_token"] as? String
                else { continue }
                acknowledged.signedUp(token)
                // Every third one signs out again: a logout acknowledged must stay done.
                guard count % 3 == 0 else { continue }
                acknowledged.loggingOut(token)
                guard
                    let logout = try? RawHTTP.request(
                        port: port, method: "DELETE", path: AllauthAppPath.base + "/" + AllauthAppPath.session,
                        headers: [("X-Session-Token", token)], timeout: 5), logout.status == 401
                else { continue }
                acknowledged.loggedOut(token)
            }
        }
    }
    return group
}

private func serverArguments(_ url: DatabaseURL, _ directory: TemporaryDirectory) -> [String] {
    [
        "--database", url.rawText, "--signup", "open", "--password-iterations", "1000", "--log-level", "error",
        "--outbox", directory.file("outbox"),
        "--rate-limits", "signup-per-address=1000000/60,login-per-address=1000000/60",
    ]
}

/// Every acknowledged sign-up's token still opens app-info; every acknowledged logout's is dead.
private func verify(_ acknowledged: Acknowledged, on server: ServerProcess, _ context: String) throws {
    let (live, ended) = acknowledged.snapshot
    for token in live {
        let status = try RawHTTP.request(
            port: server.port, path: HomeportPath.appInfo, headers: [("X-Session-Token", token)]
        ).status
        #expect(status == 200, "an acknowledged sign-up's session was lost (\(context))")
    }
    for token in ended {
        let status = try RawHTTP.request(
            port: server.port, path: HomeportPath.appInfo, headers: [("X-Session-Token", token)]
        ).status
        #expect(status == 401, "a logged-out token came back (\(context))")
    }
}

@Suite("Crashes and stops lose nothing that was acknowledged", .serialized, .tags(.process, .postgres))
struct DurabilityTests {
    @Test("kill -9 under write load, three times: every acknowledged write survives", arguments: Backend.allCases)
    func killUnderLoad(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let acknowledged = Acknowledged()
        for cycle in 1...3 {
            let server = try ServerProcess(serve: serverArguments(url, directory))
            // What earlier cycles were told survives this restart too.
            try verify(acknowledged, on: server, "after restart \(cycle)")
            let stop = StopFlag()
            let load = writeLoad(
                port: server.port, clients: 6, prefix: "cycle\(cycle)", acknowledged: acknowledged, stop: stop)
            // A random moment, long enough for a few hundred writes.
            usleep(UInt32.random(in: 400_000...1_200_000))
            #expect(server.stop(signal: SIGKILL) == SIGKILL)
            stop.set()
            #expect(load.wait(timeout: .now() + 30) == .success)
        }
        let server = try ServerProcess(serve: serverArguments(url, directory))
        try verify(acknowledged, on: server, "after the last kill")
        let (live, ended) = acknowledged.snapshot
        #expect(live.count > 50 && ended.count > 10, "the load wrote too little to prove anything: \(live.count)")
        #expect(server.stop() == 0)
        if case .sqlite(let path) = url {
            let database = try DatabaseURL.sqlite(path: path).open()
            defer { database.close() }
            let check = try database.execute("PRAGMA integrity_check")
            #expect(check.first?.string("integrity_check") == "ok")
        }
    }

    @Test("SIGTERM under load: exit 0 within seconds, nothing acknowledged lost", arguments: Backend.allCases)
    func gracefulStopUnderLoad(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let acknowledged = Acknowledged()
        let server = try ServerProcess(serve: serverArguments(url, directory))
        let stop = StopFlag()
        let load = writeLoad(port: server.port, clients: 8, prefix: "term", acknowledged: acknowledged, stop: stop)
        usleep(800_000)
        let started = ContinuousClock.now
        #expect(server.stop(signal: SIGTERM) == 0)
        #expect(ContinuousClock.now - started < .seconds(5), "a graceful stop takes seconds, not the drain timeout")
        stop.set()
        #expect(load.wait(timeout: .now() + 30) == .success)
        let again = try ServerProcess(serve: serverArguments(url, directory))
        try verify(acknowledged, on: again, "after SIGTERM")
        #expect(acknowledged.snapshot.live.count > 20)
        #expect(again.stop() == 0)
    }
}
