import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportClient

@Suite("The preference window comes from the preferred address's own round trip on this path")
struct PreferenceWindowTests {
    private func record(roundTrips: [String: Double]?) throws -> ServerRecord {
        var record = ServerRecord(
            instanceID: InstanceID(UUID()), product: "homeport", email: "ada@example.com",
            primary: try ServerAddress(parsing: "http://127.0.0.1:1", allowHTTP: true), alternatives: [],
            lastWinner: nil, signedOut: false, signedInPath: "home")
        record.roundTrips = roundTrips
        return record
    }

    @Test(
        "three round trips and a millisecond, at least two, at most the configured bound; none stored: the bound",
        arguments: [
            (nil, 50_000), (0.0001, 2000), (0.010, 31_000), (0.2, 50_000),
        ] as [(Double?, Int)])
    func window(stored: Double?, microseconds: Int) throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let client = try makeClient(home, SpyTransport())
        let preferred = try ServerAddress(parsing: "http://127.0.0.1:1", allowHTTP: true)
        let record = try record(roundTrips: stored.map { ["home " + preferred.url: $0] })
        let window = client.preferenceWindow(for: preferred, in: record, path: "home")
        let expected = Duration.microseconds(microseconds)
        #expect((window > expected ? window - expected : expected - window) < .microseconds(50), "\(window)")
        // Measured on another network, it says nothing about this one.
        #expect(client.preferenceWindow(for: preferred, in: record, path: "cafe") == .milliseconds(50))
    }

    @Test("a blackholed preferred address costs a few of its own round trips, not the configured bound")
    func blackholedPreferred() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1", "127.0.0.2"])
        let hole = try RecordingListener(host: "127.0.0.1", behaviour: .blackhole)
        // Were the window the bound, or the probe's deadline, the choice would take a minute: far
        // beyond what a loaded machine adds to a few milliseconds.
        let client = try makeClient(home, SpyTransport()) {
            $0.preferenceWindow = .seconds(60)
            $0.probeDeadline = .seconds(60)
        }
        let record = try await signUp(client, at: mine)
        var rigged = record
        rigged.alternatives = [
            .init(address: try ServerAddress(parsing: hole.url, allowHTTP: true), verifiedPaths: ["home": Date()]),
            .init(address: try mine.address("127.0.0.2"), verifiedPaths: ["home": Date()]),
        ]
        rigged.lastWinner = hole.url
        rigged.roundTrips = ["home " + hole.url: 0.001]
        try client.directory.save(rigged)
        client.networkPathChanged(to: "home")
        mine.stop("127.0.0.1")
        let started = ContinuousClock.now
        let answer = try await client.appInfo(record.key)
        #expect(ContinuousClock.now - started < .seconds(40))
        #expect(answer.via.url == (try mine.address("127.0.0.2")).url)
        #expect(!hole.sawCredential)
    }

    @Test("a race stores the winner's round trip on this path; a choice that changes nothing writes nothing")
    func storesRoundTripsWithoutNeedlessWrites() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1"])
        let client = try makeClient(home, SpyTransport())
        let record = try await signUp(client, at: mine)
        client.networkPathChanged(to: "home")
        let started = ContinuousClock.now
        _ = try await client.appInfo(record.key)
        let elapsed = ContinuousClock.now - started
        let stored = try client.directory.find(record.key)
        let roundTrip = try #require(stored.roundTrip(of: record.primary.url, on: "home"))
        // Within the request that raced: a unit taken for another would not fit in it, and a
        // machine the whole suite loads stretches both alike.
        #expect(roundTrip > .zero && roundTrip <= elapsed, "\(roundTrip) in \(elapsed)")
        #expect(stored.roundTrip(of: record.primary.url, on: "cafe") == nil)

        var before = stat()
        #expect(stat(client.directory.path, &before) == 0)
        _ = try client.directory.update(record.key) { _ in }
        var after = stat()
        #expect(stat(client.directory.path, &after) == 0)
        #expect(before.st_ino == after.st_ino, "an update that changes nothing does not replace the file")
        _ = try client.directory.update(record.key) { $0.email = "grace@example.com" }
        #expect(stat(client.directory.path, &after) == 0)
        #expect(before.st_ino != after.st_ino, "a change is written (a new file renamed into place)")
    }
}
