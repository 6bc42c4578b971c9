import Foundation
import HomeportWire
import Synchronization

/// The client: many servers, many addresses per server, verified before trusted.
///
/// A session token only ever goes to an address that answered `GET /api/v1/server-identity` with
/// the enrolled id on the current network path (or to the primary, which keeps the trust the user
/// gave it when signing in — over HTTPS anywhere, over plain HTTP only on the path it was signed in
/// on). Probes carry no credential, so every candidate is probed at once and the most preferred one
/// that matches wins, after a short preference window.
public final class HomeportClient: Sendable {
    /// The enrolled servers.
    public let directory: ServerDirectory
    let vault: any CredentialVault
    let transport: any ClientTransport
    /// Limits and timings.
    public let configuration: ClientConfiguration
    let onEvent: @Sendable (ClientEvent) -> Void
    private let state: Mutex<PathState>

    struct PathState {
        var path: String
        var winners: [String: (address: ServerAddress, path: String, at: ContinuousClock.Instant)] = [:]
    }

    /// Creates a client on network path `networkPath` (an id the app derives from its path monitor).
    public init(
        directory: ServerDirectory, vault: any CredentialVault, transport: any ClientTransport = defaultTransport(),
        configuration: ClientConfiguration = ClientConfiguration(), networkPath: String = "default",
        onEvent: @escaping @Sendable (ClientEvent) -> Void = { _ in }
    ) {
        self.directory = directory
        self.vault = vault
        self.transport = transport
        self.configuration = configuration
        self.onEvent = onEvent
        self.state = Mutex(PathState(path: networkPath))
    }

    /// The platform's transport: libcurl on Linux, URLSession elsewhere.
    public static func defaultTransport() -> any ClientTransport {
        #if canImport(CCurl)
            CurlTransport()
        #else
            URLSessionTransport()
        #endif
    }

    /// The current network path id.
    public var networkPath: String { state.withLock { $0.path } }

    /// Tells the client the network path changed: no address chosen on another path is reused, and
    /// nothing is sent before a fresh probe on the new one.
    ///
    /// Every call drops the addresses chosen so far, even when the id is the same (two networks can
    /// look alike to a path monitor).
    public func networkPathChanged(to path: String) {
        let changed = state.withLock { state -> Bool in
            state.winners.removeAll()
            guard state.path != path else { return false }
            state.path = path
            return true
        }
        if changed { onEvent(.pathChanged(path)) }
    }

    var probe: IdentityProbe { IdentityProbe(transport: transport, deadline: configuration.probeDeadline) }

    // MARK: Choosing an address

    /// How an address qualified.
    enum Qualification: Equatable {
        case match
        case trustedPrimary
    }

    /// Chooses the address to send `record`'s credential to on the current path, probing every
    /// candidate at once. Throws ``ClientError/noVerifiedAddress(server:detail:)`` when none qualifies.
    public func chooseAddress(for record: ServerRecord, excluding failed: Set<String> = []) async throws
        -> ServerAddress
    {
        let path = networkPath
        let primaryTrusted = record.primary.url.hasPrefix("https://") || record.signedInPath == path
        guard let expected = record.instanceID else {
            // No identity to check (an older server): the primary alone, and only where it is trusted.
            guard primaryTrusted else {
                throw ClientError.noVerifiedAddress(
                    server: record.key,
                    detail: "\(record.primary.url) is plain HTTP without an identity route, and this is another network"
                )
            }
            return record.primary
        }
        if failed.isEmpty, let cached = state.withLock({ $0.winners[record.key] }), cached.path == path,
            ContinuousClock.now - cached.at < configuration.winnerLifetime
        {
            return cached.address
        }
        var candidates: [ServerAddress] = []
        for address in [record.primary] + record.alternatives.filter(\.isVerified).map(\.address)
        where !failed.contains(address.url) && !candidates.contains(where: { $0.url == address.url }) {
            candidates.append(address)
        }
        if let last = record.lastWinner, let index = candidates.firstIndex(where: { $0.url == last }) {
            candidates.insert(candidates.remove(at: index), at: 0)
        }
        guard !candidates.isEmpty else {
            throw ClientError.noVerifiedAddress(server: record.key, detail: "no address left to try")
        }
        let outcomes = await race(
            candidates, expected: expected, primary: record.primary, primaryTrusted: primaryTrusted)
        guard let winner = outcomes.winner else {
            let detail = candidates.map { "\($0.url): \(outcomes.results[$0.url]?.description ?? "no answer")" }
            throw ClientError.noVerifiedAddress(server: record.key, detail: detail.joined(separator: "; "))
        }
        try remember(winner, matched: outcomes.results, in: record, path: path)
        return winner
    }

    struct RaceOutcome {
        var winner: ServerAddress?
        var results: [String: ProbeOutcome]
    }

    /// Probes every candidate at once; after the first that qualifies, waits the preference window
    /// (or until every more preferred one has answered) and takes the most preferred that qualified.
    func race(_ candidates: [ServerAddress], expected: InstanceID, primary: ServerAddress, primaryTrusted: Bool) async
        -> RaceOutcome
    {
        enum Event: Sendable {
            case probed(Int, ProbeOutcome)
            case windowEnded
        }
        let probe = self.probe
        let window = configuration.preferenceWindow
        return await withTaskGroup(of: Event.self) { group in
            for (index, candidate) in candidates.enumerated() {
                group.addTask { .probed(index, await probe.probe(candidate, expected: expected)) }
            }
            var results: [Int: ProbeOutcome] = [:]
            var qualified: [Int: Qualification] = [:]
            var windowStarted = false
            func best() -> Int? {
                // A real match beats the primary's standing trust.
                qualified.filter { $0.value == .match }.keys.min() ?? qualified.keys.min()
            }
            func decided() -> Bool {
                guard let best = best() else { return false }
                return (0..<best).allSatisfy { results[$0] != nil } && qualified[best] == .match
            }
            while let event = await group.next() {
                switch event {
                case .probed(let index, let outcome):
                    results[index] = outcome
                    if outcome.isMatch {
                        qualified[index] = .match
                    } else if candidates[index].url == primary.url, primaryTrusted, outcome.keepsPrimaryTrust {
                        qualified[index] = .trustedPrimary
                    }
                    if !qualified.isEmpty && !windowStarted {
                        windowStarted = true
                        group.addTask {
                            try? await Task.sleep(for: window)
                            return .windowEnded
                        }
                    }
                case .windowEnded:
                    if best() != nil {
                        group.cancelAll()
                        return RaceOutcome(
                            winner: best().map { candidates[$0] }, results: Self.keyed(results, candidates))
                    }
                }
                if decided() || results.count == candidates.count {
                    group.cancelAll()
                    return RaceOutcome(winner: best().map { candidates[$0] }, results: Self.keyed(results, candidates))
                }
            }
            return RaceOutcome(winner: best().map { candidates[$0] }, results: Self.keyed(results, candidates))
        }
    }

    private static func keyed(_ results: [Int: ProbeOutcome], _ candidates: [ServerAddress]) -> [String: ProbeOutcome] {
        Dictionary(results.map { (candidates[$0.key].url, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// Records the choice on the stored record as it is now (not on the copy the race started
    /// from), and caches it only if the network path is still the one it was made on.
    private func remember(
        _ winner: ServerAddress, matched: [String: ProbeOutcome], in record: ServerRecord, path: String
    ) throws {
        let saved = try directory.update(record.key) { stored in
            guard stored.instanceID == record.instanceID else { return }
            stored.lastWinner = winner.url
            for index in stored.alternatives.indices
            where matched[stored.alternatives[index].address.url]?.isMatch == true {
                stored.alternatives[index].verifiedPaths[path] = Date()
            }
        }
        guard saved != nil else { throw ClientError.unknownServer(record.key) }
        state.withLock { state in
            if state.path == path { state.winners[record.key] = (winner, path, ContinuousClock.now) }
        }
    }

    func forgetWinner(_ key: String) {
        _ = state.withLock { $0.winners.removeValue(forKey: key) }
    }
}
