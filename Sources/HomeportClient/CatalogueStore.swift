import Foundation
import HomeportWire
import Synchronization

/// One notification catalogue per server, keyed on the server's key (its `instanceId`: the `s`
/// of its pushes), persisted as JSON with write-then-rename (`catalogues.json`, 0600, next to the
/// server directory); every change is a read-modify-write under a lock every process using the
/// directory takes.
///
/// Servers with different plugins have different catalogues: keeping one per server is what stops
/// the resync fight of seed 002 (every push from B invalidating the copy synced from A). A resync
/// is single-flight per server: while one runs, every caller for that server waits for it instead
/// of starting another; and a push's resync starts only when the minimum interval
/// (``ClientConfiguration/catalogueResyncInterval``) has passed since that server's last one, so a
/// server whose pushes keep carrying another `mv` cannot keep the app fetching.
public final class CatalogueStore: Sendable {
    /// What is kept for one server.
    public struct Entry: Codable, Hashable, Sendable {
        /// The catalogue.
        public var catalogue: NotificationCatalogue
        /// When it was last fetched or confirmed (304).
        public var checkedAt: Date
    }

    /// What a fetch answered.
    enum FetchResult: Sendable {
        /// A catalogue.
        case catalogue(NotificationCatalogue)
        /// 304: the kept one is current.
        case notModified
    }

    /// The file.
    public var path: String { file.path }
    private let file: SharedJSONFile<[String: Entry]>
    private let now: @Sendable () -> ContinuousClock.Instant
    private let state: Mutex<State>

    private struct State {
        var inFlight: [String: Task<NotificationCatalogue, any Error>] = [:]
        var lastResync: [String: ContinuousClock.Instant] = [:]
        var callers: [String: Int] = [:]
    }

    /// Loads `directory/catalogues.json` (empty when it does not exist); the directory must be one
    /// only this user can write. `now` is the clock the resync interval is measured on; a change
    /// waits at most `lockTimeout` for another process.
    public init(
        directory: String, lockTimeout: Duration = .seconds(10),
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) throws {
        try OwnerOnlyDirectory.prepare(directory)
        file = try SharedJSONFile(
            path: directory + "/catalogues.json", empty: [:], what: "the catalogue store", lockTimeout: lockTimeout)
        self.now = now
        state = Mutex(State())
    }

    /// The catalogue kept for `server`.
    public func catalogue(for server: String) -> NotificationCatalogue? { file.value[server]?.catalogue }

    /// What is kept for `server`.
    public func entry(for server: String) -> Entry? { file.value[server] }

    /// Whether a push of `server` carrying catalogue version `mv` calls for a resync: `mv` is
    /// given and differs from the version kept for that server (or none is kept).
    public func isResyncDue(server: String, mv: String?) -> Bool {
        guard let mv else { return false }
        return catalogue(for: server)?.version != mv
    }

    /// Forgets `server`'s catalogue (the server was removed, or it is another installation now).
    public func remove(_ server: String) throws {
        try file.change { entries in _ = entries.removeValue(forKey: server) }
    }

    /// Resyncs `server`'s catalogue with `fetch`, unless one is running for it (then this waits
    /// for that one). With `mv` (a push's), nothing is fetched when the kept version is `mv`, or
    /// when the last resync of this server ended less than `minimumInterval` ago; the kept
    /// catalogue is returned then. Returns the catalogue kept afterwards, or `nil`.
    func resync(
        _ server: String, mv: String? = nil, minimumInterval: Duration = .zero,
        fetch: @escaping @Sendable (Entry?) async throws -> FetchResult
    ) async throws -> NotificationCatalogue? {
        let stored = entry(for: server)
        let task: Task<NotificationCatalogue, any Error>? = state.withLock { state in
            state.callers[server, default: 0] += 1
            if let running = state.inFlight[server] { return running }
            if let mv {
                if stored?.catalogue.version == mv { return nil }
                if let last = state.lastResync[server], now() - last < minimumInterval { return nil }
            }
            let kept = stored
            let task = Task { [self] in
                defer { finish(server) }
                switch try await fetch(kept) {
                case .catalogue(let catalogue):
                    return try keep(catalogue, for: server)
                case .notModified:
                    guard let kept else {
                        throw ClientError.badAnswer(
                            address: server, detail: "the catalogue answered 304 to a request that named no version")
                    }
                    return try keep(kept.catalogue, for: server)
                }
            }
            state.inFlight[server] = task
            return task
        }
        defer { state.withLock { $0.callers[server, default: 1] -= 1 } }
        guard let task else { return catalogue(for: server) }
        return try await task.value
    }

    /// How many callers are inside ``resync(_:mv:minimumInterval:fetch:)`` for `server` now.
    func callers(for server: String) -> Int {
        state.withLock { $0.callers[server] ?? 0 }
    }

    private func finish(_ server: String) {
        state.withLock { state in
            state.inFlight[server] = nil
            state.lastResync[server] = now()
        }
    }

    private func keep(_ catalogue: NotificationCatalogue, for server: String) throws
        -> NotificationCatalogue
    {
        try file.change { $0[server] = Entry(catalogue: catalogue, checkedAt: Date()) }
        return catalogue
    }
}
