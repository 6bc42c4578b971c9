import Foundation
import HomeportTestSupport
import HomeportWire
import Synchronization
import Testing

@testable import HomeportClient

/// One catalogue per server, persisted, resynced single-flight (seed 002's resync fight).
@Suite("Catalogue store: one per server, single-flight resync, a bound on mv floods")
struct CatalogueStoreTests {
    /// A clock that moves only when told.
    final class ManualClock: Sendable {
        private let offset = Mutex(Duration.zero)
        let start = ContinuousClock.now
        func now() -> ContinuousClock.Instant { start + offset.withLock { $0 } }
        func advance(_ duration: Duration) { offset.withLock { $0 += duration } }
    }

    /// Counts fetches; each answers `version`, after `gate` opens when there is one.
    final class Fetcher: Sendable {
        private let count = Mutex(0)
        private let gate: AsyncGate?
        let version: String
        init(version: String, gate: AsyncGate? = nil) {
            self.version = version
            self.gate = gate
        }
        var fetches: Int { count.withLock { $0 } }
        func fetch(_ kept: CatalogueStore.Entry?) async throws -> CatalogueStore.FetchResult {
            count.withLock { $0 += 1 }
            await gate?.wait()
            if kept?.catalogue.version == version { return .notModified }
            return .catalogue(NotificationCatalogue(version: version, codes: [.init(code: "c", title: version)]))
        }
    }

    @Test("ten pushes at once cause one fetch")
    func singleFlight() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let store = try CatalogueStore(directory: home.path)
        let gate = AsyncGate()
        let fetcher = Fetcher(version: "v2", gate: gate)
        try await withThrowingTaskGroup(of: NotificationCatalogue?.self) { group in
            for _ in 0..<10 {
                group.addTask { try await store.resync("A", mv: "v2") { try await fetcher.fetch($0) } }
            }
            // All ten are inside the resync before the fetch may answer.
            while store.callers(for: "A") < 10 { await Task.yield() }
            await gate.open()
            for try await catalogue in group { #expect(catalogue?.version == "v2") }
        }
        #expect(fetcher.fetches == 1)
        #expect(store.catalogue(for: "A")?.version == "v2")
    }

    @Test("a push from one server never resyncs another's catalogue")
    func perServer() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let store = try CatalogueStore(directory: home.path)
        let a = Fetcher(version: "a1")
        let b = Fetcher(version: "b1")
        _ = try await store.resync("A") { try await a.fetch($0) }
        _ = try await store.resync("B") { try await b.fetch($0) }
        for _ in 0..<5 {
            #expect(!store.isResyncDue(server: "A", mv: "a1"))
            #expect(!store.isResyncDue(server: "B", mv: "b1"))
            _ = try await store.resync("A", mv: "a1") { try await a.fetch($0) }
            _ = try await store.resync("B", mv: "b1") { try await b.fetch($0) }
        }
        #expect(a.fetches == 1)
        #expect(b.fetches == 1)
        #expect(store.isResyncDue(server: "B", mv: "a1"), "A's version means nothing for B")
    }

    @Test("an mv flood: after a resync, the next waits for the interval")
    func flood() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let clock = ManualClock()
        let store = try CatalogueStore(directory: home.path, now: { clock.now() })
        let fetcher = Fetcher(version: "v1")
        for index in 0..<100 {
            _ = try await store.resync("A", mv: "random-\(index)", minimumInterval: .seconds(30)) {
                try await fetcher.fetch($0)
            }
        }
        #expect(fetcher.fetches == 1)
        clock.advance(.seconds(31))
        _ = try await store.resync("A", mv: "random-x", minimumInterval: .seconds(30)) { try await fetcher.fetch($0) }
        #expect(fetcher.fetches == 2)
    }

    @Test("catalogues persist per server, owner-only, and a removed server's is gone")
    func persisted() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let store = try CatalogueStore(directory: home.path)
        _ = try await store.resync("A") { try await Fetcher(version: "a1").fetch($0) }
        _ = try await store.resync("B") { try await Fetcher(version: "b1").fetch($0) }
        try store.remove("B")
        let again = try CatalogueStore(directory: home.path)
        #expect(again.catalogue(for: "A")?.version == "a1")
        #expect(again.catalogue(for: "B") == nil)
        let mode = try FileManager.default.attributesOfItem(atPath: again.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test("a 304 keeps the catalogue; a 304 with nothing kept is an error")
    func notModified() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let store = try CatalogueStore(directory: home.path)
        await #expect(throws: ClientError.self) { try await store.resync("A") { _ in .notModified } }
        _ = try await store.resync("A") { try await Fetcher(version: "a1").fetch($0) }
        #expect(try await store.resync("A") { _ in .notModified }?.version == "a1")
    }
}

/// A gate tasks wait at until it opens.
actor AsyncGate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        waiters.forEach { $0.resume() }
        waiters.removeAll()
    }
}
