import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

/// A client started after another (an app launched again, a second process) reuses the address
/// the other verified on the same network path within the winner's lifetime, as one client reuses
/// its own: the first request goes out without a probe. Anything else probes as before.
@Suite("A verification stored for the clients started after: the same path and window only", .tags(.process))
struct StoredWinnerTests {
    /// Whether the first request carrying the token was preceded by an identity probe.
    private func probedFirst(_ spy: SpyTransport) throws -> Bool {
        let requests = spy.requests
        let firstWithToken = try #require(requests.firstIndex { $0.headers[HomeportHeader.sessionToken] != nil })
        return requests[..<firstWithToken].contains { $0.url.path == "/api/v1/server-identity" }
    }

    /// Moves the stored verification's time by `seconds` (negative: older), as a clock would.
    private func shiftStoredWinner(_ client: HomeportClient, by seconds: Double) throws {
        let url = URL(fileURLWithPath: client.directory.path)
        var servers = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [[String: Any]])
        var shifted = 0
        let format = ISO8601DateFormatter()
        for index in servers.indices {
            guard var winner = servers[index]["verifiedWinner"] as? [String: Any],
                let at = (winner["at"] as? String).flatMap(format.date(from:))
            else { continue }
            winner["at"] = format.string(from: at.addingTimeInterval(seconds))
            servers[index]["verifiedWinner"] = winner
            shifted += 1
        }
        #expect(shifted == 1, "one stored verification")
        try JSONSerialization.data(withJSONObject: servers).write(to: url)
    }

    @Test(
        "a second client on the same path within the lifetime sends at once; on another path, with a shorter lifetime, after a path change or a failure, it probes"
    )
    func storedVerification() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1", "127.0.0.2"])
        let first = try makeClient(home, SpyTransport())
        let record = try await signUp(first, at: mine)
        try await first.addAddress(try mine.address("127.0.0.2"), to: record.key)
        _ = try await first.appInfo(record.key)

        // Launched again on the same network: the verified address, at once.
        let again = SpyTransport()
        let answer = try await makeClient(home, again).appInfo(record.key)
        #expect(answer.info.instanceId == record.instanceID)
        #expect(try !probedFirst(again), "sent without a probe: \(again.requests.map(\.url))")

        // Another network, or a client whose winners live shorter than the verification's age.
        let cafe = SpyTransport()
        _ = try await makeClient(home, cafe, path: "cafe").appInfo(record.key)
        #expect(try probedFirst(cafe))
        let strict = SpyTransport()
        _ = try await makeClient(home, strict) { $0.winnerLifetime = .zero }.appInfo(record.key)
        #expect(try probedFirst(strict))

        // A path change (two networks may share an id) forgets it for every client after.
        let moving = try makeClient(home, SpyTransport())
        _ = try await moving.appInfo(record.key)
        moving.networkPathChanged(to: "home")
        let afterChange = SpyTransport()
        _ = try await makeClient(home, afterChange).appInfo(record.key)
        #expect(try probedFirst(afterChange), "probed after another client's path change")

        // The stored address fails: the next client does not send to it unprobed.
        let winner = try #require(answer.via.url.contains("127.0.0.1") ? "127.0.0.1" : "127.0.0.2")
        mine.stop(winner)
        let failing = try makeClient(home, SpyTransport())
        let failedOver = try await failing.appInfo(record.key)
        #expect(!failedOver.via.url.contains(winner))
        let next = SpyTransport()
        let nextAnswer = try await makeClient(home, next).appInfo(record.key)
        #expect(!nextAnswer.via.url.contains(winner))
        #expect(
            !next.requests.contains { $0.url.host == winner && $0.headers[HomeportHeader.sessionToken] != nil },
            "the dead address got no token")
    }

    @Test("a stored verification older than the lifetime, or from the future (a clock set back), is probed again")
    func age() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1"])
        let first = try makeClient(home, SpyTransport())
        let record = try await signUp(first, at: mine)
        _ = try await first.appInfo(record.key)
        try shiftStoredWinner(first, by: -61)
        let old = SpyTransport()
        _ = try await makeClient(home, old).appInfo(record.key)
        #expect(try probedFirst(old), "a minute and more: probed")

        // That race stored a new verification; moved an hour ahead, it is from the future.
        try shiftStoredWinner(first, by: 3600)
        let future = SpyTransport()
        _ = try await makeClient(home, future).appInfo(record.key)
        #expect(try probedFirst(future), "from the future: probed")
        let fresh = SpyTransport()
        _ = try await makeClient(home, fresh).appInfo(record.key)
        #expect(try !probedFirst(fresh), "and the race stored a good one again")
    }
}
