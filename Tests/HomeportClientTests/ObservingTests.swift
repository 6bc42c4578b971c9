import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportClient

#if canImport(Observation)
    import Observation
#endif

@Suite("State to observe: events for any number of listeners, the server list as it changes")
struct ObservingTests {
    @Test("two listeners and the init closure each hear a sign-out; a listener that stops is let go")
    func events() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let server = try RecordingListener(
            behaviour: .routes([
                HomeportPath.serverIdentity: Peer.identity(id), HomeportPath.appInfo: Peer.notAuthenticated,
            ]))
        let heard = EventLog()
        let (client, _) = try scriptedClient(home, record: try record(id, primary: server.url), events: heard)
        let first = client.events
        let second = client.events
        // Taken here, so that it listens before its task runs.
        let third = client.events
        #expect(client.eventListeners.count == 3)
        let gone = Task { for await _ in third {} }
        gone.cancel()
        await gone.value
        // Suspending between looks: a blocking wait would hold one of the pool's two threads.
        let letGo = await eventually { () async -> Bool in client.eventListeners.count == 2 }
        #expect(letGo, "a listener that stopped is let go")

        await #expect(throws: ClientError.signedOut(server: id.description)) {
            _ = try await client.send("GET", HomeportPath.appInfo, to: id.description)
        }
        var firstIterator = first.makeAsyncIterator()
        var secondIterator = second.makeAsyncIterator()
        #expect(await firstIterator.next() == .signedOut(server: id.description))
        #expect(await secondIterator.next() == .signedOut(server: id.description))
        #expect(heard.all == [.signedOut(server: id.description)], "the closure given at init still hears them")
    }

    @Test(
        "the server list: as stored first, then after each change made here; a change that changes nothing is not one")
    func servers() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let directory = try ServerDirectory(directory: home.file("state"))
        let ada = try record(InstanceID(UUID()), primary: "http://127.0.0.1:1")
        try directory.save(ada)
        var changes = directory.changes.makeAsyncIterator()
        #expect(await changes.next()?.map(\.key) == [ada.key], "the list as stored now, first")

        let bob = try record(InstanceID(UUID()), primary: "http://127.0.0.1:2")
        try directory.save(bob)
        #expect(await changes.next()?.map(\.key) == [ada.key, bob.key])
        // The same label again changes nothing: no value for it; the next one is the removal.
        try directory.setLabel("Books", of: ada.key)
        #expect(await changes.next()?.first?.label == "Books")
        try directory.setLabel("Books", of: ada.key)
        try directory.remove(bob.key)
        #expect(await changes.next()?.map(\.key) == [ada.key], "the removal came next, not a second label")
    }
}

#if canImport(Observation)
    @Suite("HomeportModel: the client's state for SwiftUI")
    @MainActor
    struct HomeportModelTests {
        /// Yields the main actor until `condition` holds (at most 10,000 turns).
        private func turns(until condition: () -> Bool) async -> Bool {
            for _ in 0..<10_000 where !condition() { await Task.yield() }
            return condition()
        }

        @Test("a view observing its servers is told of a change; following ends with its task")
        func model() async throws {
            let home = try TemporaryDirectory()
            defer { home.remove() }
            let (client, _) = try scriptedClient(
                home, record: try record(InstanceID(UUID()), primary: "http://127.0.0.1:1"))
            let model = HomeportModel(client: client)
            #expect(model.servers.count == 1)
            let following = Task { await model.follow() }
            #expect(await turns { client.eventListeners.count == 1 }, "the model listens")
            let told = LockedBox(false)
            withObservationTracking {
                _ = model.servers
            } onChange: {
                told.value = true
            }
            try client.directory.save(try record(InstanceID(UUID()), primary: "http://127.0.0.1:2"))
            #expect(await turns { model.servers.count == 2 })
            #expect(told.value, "the view was told the servers changed")
            following.cancel()
            await following.value
            #expect(client.eventListeners.count == 0, "following ended with its task")
        }
    }
#endif
