import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportClient

/// A client started after another (an app launched again, a second process) reuses the HTTPS
/// address the other verified on the same network path within the winner's lifetime, as one
/// client reuses its own: the first request goes out without a probe. Anything else probes as
/// before: plain HTTP above all, whose connection proves nothing.
@Suite("A verification stored for the clients started after: HTTPS, the same path and window only", .tags(.process))
struct StoredWinnerTests {
    /// Whether the first request carrying the token was preceded by an identity probe.
    private func probedFirst(_ spy: SpyTransport) throws -> Bool {
        let requests = spy.requests
        let firstWithToken = try #require(requests.firstIndex { $0.headers[HomeportHeader.sessionToken] != nil })
        return requests[..<firstWithToken].contains { $0.url.path == "/api/v1/server-identity" }
    }

    /// The directory's records as stored.
    private func stored(_ client: HomeportClient) throws -> [[String: Any]] {
        let data = try Data(contentsOf: URL(fileURLWithPath: client.directory.path))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
    }

    /// Changes the stored verification as a clock would: its wall-clock time by `wall` seconds,
    /// its time since boot by `uptime` (negative: older).
    private func shiftStoredWinner(_ client: HomeportClient, wall: Double = 0, uptime: Double = 0) throws {
        var servers = try stored(client)
        var shifted = 0
        let format = ISO8601DateFormatter()
        for index in servers.indices {
            guard var winner = servers[index]["verifiedWinner"] as? [String: Any],
                let at = (winner["at"] as? String).flatMap(format.date(from:)),
                let since = winner["uptime"] as? Double
            else { continue }
            winner["at"] = format.string(from: at.addingTimeInterval(wall))
            winner["uptime"] = since + uptime
            servers[index]["verifiedWinner"] = winner
            shifted += 1
        }
        #expect(shifted == 1, "one stored verification")
        try JSONSerialization.data(withJSONObject: servers).write(to: URL(fileURLWithPath: client.directory.path))
    }

    /// A server on 127.0.0.2 serving only HTTPS with its installation's certificate, and a
    /// client signed in there through its pairing link (the key pinned).
    private func pinnedServer(_ data: TemporaryDirectory, _ home: TemporaryDirectory) async throws -> (
        server: ServerProcess, client: HomeportClient, record: ServerRecord
    ) {
        let server = try InstallationTLSClientTests.lanServer(data)
        let installation = try InstallationTLSClientTests.identity("sqlite:" + data.file("h.sqlite"))
        let url = "https://127.0.0.2:\(server.port)"
        let client = try makeClient(home, SpyTransport())
        _ = try await client.pair(
            try PairingLink(instanceID: installation.id, keyFingerprint: installation.fingerprint, url: url))
        guard
            case .signedIn(let record) = try await client.signup(
                at: try ServerAddress(parsing: url), email: "ada@example.com", password: password)
        else { throw RawHTTPError("not signed in") }
        return (server, client, record)
    }

    @Test(
        "over pinned HTTPS a second client on the same path within the lifetime sends at once; with a shorter lifetime, on another path, after a path change or a failure, it probes"
    )
    func storedVerification() async throws {
        let data = try TemporaryDirectory()
        let home = try TemporaryDirectory()
        defer {
            data.remove()
            home.remove()
        }
        let (server, first, record) = try await pinnedServer(data, home)
        _ = try await first.appInfo(record.key)

        // Launched again on the same network: the verified address, at once, its key still pinned.
        let again = SpyTransport()
        let answer = try await makeClient(home, again).appInfo(record.key)
        #expect(answer.info.instanceId == record.instanceID)
        #expect(try !probedFirst(again), "sent without a probe: \(again.requests.map(\.url))")
        #expect(again.requests.allSatisfy { $0.pinnedKeySHA256 != nil }, "the pin holds without the probe")
        // A path monitor's first report is where the app started, not a move: still taken.
        let launched = SpyTransport()
        let monitored = try makeClient(home, launched, path: "default")
        monitored.pathReported("home", initial: true)
        _ = try await monitored.appInfo(record.key)
        #expect(try !probedFirst(launched), "the monitor's first report keeps it")

        // A client whose winners live shorter than the verification's age probes (and stores anew).
        let strict = SpyTransport()
        _ = try await makeClient(home, strict) { $0.winnerLifetime = .zero }.appInfo(record.key)
        #expect(try probedFirst(strict))

        // Another network probes, and what it stores is for that network only.
        let cafe = SpyTransport()
        _ = try await makeClient(home, cafe, path: "cafe").appInfo(record.key)
        #expect(try probedFirst(cafe))
        let home2 = SpyTransport()
        _ = try await makeClient(home, home2).appInfo(record.key)
        #expect(try probedFirst(home2), "the café's verification is not home's")

        // A path change heard by any client (two networks may share an id) forgets it for every
        // client after, and for itself at once.
        let moving = try makeClient(home, SpyTransport())
        moving.networkPathChanged(to: "home")
        let afterChange = SpyTransport()
        _ = try await makeClient(home, afterChange).appInfo(record.key)
        #expect(try probedFirst(afterChange), "probed after another client's path change")

        // The stored address fails: forgotten in the directory, not only in the client.
        #expect(try stored(first).contains { $0["verifiedWinner"] != nil })
        server.stop()
        await #expect(throws: ClientError.self) { _ = try await makeClient(home, SpyTransport()).appInfo(record.key) }
        #expect(try !stored(first).contains { $0["verifiedWinner"] != nil }, "a failure forgets it for the next client")
    }

    @Test("a plain-HTTP address is never taken from another client: every new client probes it first")
    func plainHTTP() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1"])
        let first = try makeClient(home, SpyTransport())
        let record = try await signUp(first, at: mine)
        _ = try await first.appInfo(record.key)
        #expect(try !stored(first).contains { $0["verifiedWinner"] != nil }, "nothing stored for plain HTTP")
        let again = SpyTransport()
        _ = try await makeClient(home, again).appInfo(record.key)
        #expect(try probedFirst(again))
    }

    @Test(
        "a stored verification older than the lifetime by either clock (a clock set back, a restart), from the future, or from before a quick restart, is probed again"
    )
    func age() async throws {
        let data = try TemporaryDirectory()
        let home = try TemporaryDirectory()
        defer {
            data.remove()
            home.remove()
        }
        let (server, first, record) = try await pinnedServer(data, home)
        defer { withExtendedLifetime(server) {} }
        _ = try await first.appInfo(record.key)
        let cases: [(String, Double, Double)] = [
            ("a minute and more by the wall clock", -61, 0),
            ("a minute and more since it by the time since boot (the wall clock set back)", 0, -61),
            ("from the future by the wall clock", 3600, 0),
            ("from before a restart (its time since boot ahead of now)", 0, 3600),
            ("from before a quick restart (older by the wall clock than by the time since boot)", -30, 0),
        ]
        for (what, wall, uptime) in cases {
            // A good one is stored first: the client before probed and stored it.
            let before = SpyTransport()
            _ = try await makeClient(home, before) { $0.winnerLifetime = .zero }.appInfo(record.key)
            try shiftStoredWinner(first, wall: wall, uptime: uptime)
            let spy = SpyTransport()
            _ = try await makeClient(home, spy).appInfo(record.key)
            #expect(try probedFirst(spy), "\(what): probed")
        }
        let fresh = SpyTransport()
        _ = try await makeClient(home, fresh).appInfo(record.key)
        #expect(try !probedFirst(fresh), "and the race stored a good one again")
    }
}
