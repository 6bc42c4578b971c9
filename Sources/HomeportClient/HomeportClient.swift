import Foundation
import HomeportWire
import Synchronization

/// The client: many servers, many addresses per server, verified before trusted.
///
/// A session token only ever goes to an address that answered `GET /api/v1/server-identity` with
/// the enrolled id, product and protocol version on the current network path, and signed a fresh
/// challenge with the installation's pinned key when one is pinned. For a server without a key,
/// when no verified address answers, the primary keeps the trust the user gave it when signing in
/// (over HTTPS anywhere, over plain HTTP only on the path it was signed in on). Probes carry no
/// credential, so every candidate is probed at once and the most preferred one that matches wins,
/// after a short preference window.
public final class HomeportClient: Sendable {
    /// The enrolled servers.
    public let directory: ServerDirectory
    let vault: any CredentialVault
    let transport: any ClientTransport
    /// Limits and timings.
    public let configuration: ClientConfiguration
    let onEvent: @Sendable (ClientEvent) -> Void
    /// The listeners of ``events``.
    let eventListeners = Broadcast<ClientEvent>()
    private let state: Mutex<PathState>
    /// Notification streams open now: a network-path change ends them (they reconnect on the new path).
    let openStreams = OpenStreams()
    /// The pairing links checked by this client (``pair(_:)``).
    let pairings = Pairings()

    struct PathState {
        var path: String
        var winners: [String: (address: ServerAddress, path: String, at: ContinuousClock.Instant)] = [:]
        /// When this client last heard of a path change: a winner stored before it is not reused
        /// here, whether or not forgetting it in the directory succeeded.
        var pathChangedAt: Date?
    }

    /// Creates a client on network path `networkPath` (an id the app derives from its path monitor).
    public init(
        directory: ServerDirectory, vault: any CredentialVault, transport: any ClientTransport = defaultTransport(),
        configuration: ClientConfiguration = ClientConfiguration(), networkPath: String = "default",
        onEvent: @escaping @Sendable (ClientEvent) -> Void = { _ in }
    ) {
        self.directory = directory
        self.vault = vault
        self.transport = PinningTransport(base: transport, directory: directory, pairings: pairings)
        self.configuration = configuration
        let listeners = eventListeners
        self.onEvent = { event in
            onEvent(event)
            listeners.send(event)
        }
        self.state = Mutex(PathState(path: networkPath))
    }

    /// What the client tells the app (an identity change, a sign-out, a session replaced, …), as
    /// they happen from now on: each access is a stream of its own, so any number of parts of the
    /// app may listen (a view, a model, a logger); one that stops listening is let go, and one
    /// that falls behind keeps the newest 256. The closure given at `init` hears them too.
    public var events: AsyncStream<ClientEvent> { eventListeners.stream() }

    /// The platform's transport: libcurl on Linux, URLSession elsewhere. It uses no proxy unless
    /// `proxy` names one (never one from the environment): a proxy sees every request, tokens
    /// included, and can answer identity probes itself, so it is inside the trust.
    public static func defaultTransport(proxy: URL? = nil) -> any ClientTransport {
        #if canImport(CCurl)
            CurlTransport(proxy: proxy)
        #else
            URLSessionTransport(proxy: proxy)
        #endif
    }

    /// The current network path id.
    public var networkPath: String { state.withLock { $0.path } }

    /// Tells the client the network path changed: no address chosen on another path is reused, and
    /// nothing is sent before a fresh probe on the new one.
    ///
    /// Every call drops the addresses chosen so far, even when the id is the same (two networks can
    /// look alike to a path monitor), and ends every open notification stream, which reconnects
    /// through a fresh race.
    public func networkPathChanged(to path: String) {
        pathReported(path, initial: false)
    }

    /// A path the system reports: a change, or (`initial`) the path a monitor finds when it starts,
    /// which tells of no move, so what other clients stored on it still holds.
    func pathReported(_ path: String, initial: Bool) {
        let changed = state.withLock { state -> Bool in
            state.winners.removeAll()
            if !initial { state.pathChangedAt = Date() }
            guard state.path != path else { return false }
            state.path = path
            return true
        }
        openStreams.endAll()
        if changed { onEvent(.pathChanged(path)) }
        // Nor is a winner stored by another client reused after a change: two networks may share an id.
        guard !initial else { return }
        for record in directory.all where record.verifiedWinner != nil {
            _ = try? directory.update(record.key) { $0.verifiedWinner = nil }
        }
    }

    var probe: IdentityProbe { IdentityProbe(transport: transport, deadline: configuration.probeDeadline) }

    // MARK: Choosing an address

    /// How an address qualified in a race.
    enum Qualification: Equatable {
        case match
        case trustedPrimary
    }

    /// Why the chosen address may have the credential.
    enum Grounds: Equatable {
        /// It answered the probe with the enrolled id, product and protocol version on this path.
        case matched
        /// The server has no identity (an older server): its primary, where the user signed in.
        case singleAddress
        /// The primary's standing trust: it answered from where it is, but not as the enrolled
        /// installation (`outcome`), and no verified address matched.
        case primaryTrust(ProbeOutcome)
    }

    /// The address a credential goes to, and why.
    struct Choice {
        var address: ServerAddress
        var grounds: Grounds

        /// Whether an answer from this address speaks for the enrolled installation (it matched,
        /// or there is no identity to match): only then can it end the session.
        var speaksForServer: Bool { standingOutcome == nil }

        /// What the primary answered when it was chosen on its standing trust alone.
        var standingOutcome: ProbeOutcome? {
            if case .primaryTrust(let outcome) = grounds { return outcome }
            return nil
        }
    }

    /// Chooses the address to send `server`'s credential to on the current path, probing every
    /// candidate at once. Throws ``ClientError/noVerifiedAddress(server:detail:)`` when none qualifies.
    ///
    /// A verified address that matches always wins over the primary's standing trust, however late
    /// it answers: the primary is chosen without a match only once every verified address has
    /// answered as something else. A verified address that says nothing of who it is (no answer
    /// in time, a refused connection, a TLS failure, a 5xx, `503 identity_unavailable`) keeps the
    /// primary out: it may still be the installation.
    public func chooseAddress(for server: some ServerReference, excluding failed: Set<String> = []) async throws
        -> ServerAddress
    {
        try await choose(for: try server.record(in: directory), excluding: failed).address
    }

    /// Chooses an address for `record`'s credential. With `matchOnly`, the primary's standing trust
    /// does not count: only an address that answers as the enrolled installation (or the primary of
    /// a server without an identity) is chosen.
    func choose(
        for record: ServerRecord, excluding failed: Set<String> = [], matchOnly: Bool = false, moved: Bool = false
    ) async throws -> Choice {
        if let source = configuration.networkPathSource {
            let current = source()
            if current != networkPath { networkPathChanged(to: current) }
        }
        let path = networkPath
        let primaryTrusted = record.primary.url.hasPrefix("https://") || record.signedInPath == path
        guard let expected = record.expectedIdentity else {
            // No identity to check (an older server): the primary alone, and only where it is trusted.
            guard primaryTrusted else {
                throw ClientError.noVerifiedAddress(
                    server: record.key,
                    detail: "\(record.primary.url) is plain HTTP without an identity route, and this is another network"
                )
            }
            return Choice(address: record.primary, grounds: .singleAddress)
        }
        // The winner this process remembers, while the record as read now still lists it (an
        // address removed, or its verification withdrawn, by another process goes at once).
        if failed.isEmpty, !matchOnly, let cached = state.withLock({ $0.winners[record.key] }), cached.path == path,
            ContinuousClock.now - cached.at < configuration.winnerLifetime,
            cached.address.url == record.primary.url
                || record.alternatives.contains(where: {
                    $0.address.url == cached.address.url && $0.verifiedPaths[path] != nil
                })
        {
            return Choice(address: cached.address, grounds: .matched)
        }
        if failed.isEmpty, !matchOnly, let persisted = persistedWinner(of: record, path: path) {
            return Choice(address: persisted, grounds: .matched)
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
            // A pinned key is the installation's proof (PROTOCOL §9): the primary then gets a
            // credential only by proving it, like any address; what the user gave it without one
            // (another id, no identity route, a proxy's page) counts no more.
            candidates, expected: expected, primary: record.primary,
            primaryTrusted: primaryTrusted && !matchOnly && record.publicKey == nil,
            window: preferenceWindow(for: candidates[0], in: record, path: path))
        // The primary moved (to HTTPS on its host, or an HTTPS primary to its canonical name): the
        // new address, once it answers as the installation, is the primary from now on, and the
        // choice is made again with it. Once a choice: two addresses that send each other away
        // never make it loop.
        if !moved, case .movedToHTTPS(let target)? = outcomes.results[record.primary.url],
            await probe.probe(target, expected: expected).isMatch,
            let movedRecord = try movePrimary(record, to: target)
        {
            return try await choose(for: movedRecord, excluding: failed, matchOnly: matchOnly, moved: true)
        }
        guard let winner = outcomes.winner else {
            var detail = candidates.map { "\($0.url): \(outcomes.results[$0.url]?.description ?? "no answer")" }
            if record.publicKey != nil, case .mismatch? = outcomes.results[record.primary.url] {
                detail.append(
                    "if that server was reset or reinstalled, remove it here (`homeport remove \(record.key)`) and "
                        + "sign in again")
            }
            throw ClientError.noVerifiedAddress(server: record.key, detail: detail.joined(separator: "; "))
        }
        guard let outcome = outcomes.results[winner.url], outcome.isMatch else {
            // Standing trust: not remembered, so the next request probes again.
            return Choice(
                address: winner, grounds: .primaryTrust(outcomes.results[winner.url] ?? .unreachable("no answer")))
        }
        try remember(winner, matched: outcomes.results, roundTrips: outcomes.roundTrips, in: record, path: path)
        return Choice(address: winner, grounds: .matched)
    }

    struct RaceOutcome {
        var winner: ServerAddress?
        var results: [String: ProbeOutcome]
        /// How long each address that answered took.
        var roundTrips: [String: Duration] = [:]
    }

    /// How long to wait, after a first match, for `preferred` to answer: three of its own round
    /// trips on this path and a millisecond (at least two), as it was last measured here; the
    /// configured bound when it was never measured here.
    func preferenceWindow(for preferred: ServerAddress, in record: ServerRecord, path: String) -> Duration {
        guard let roundTrip = record.roundTrip(of: preferred.url, on: path) else {
            return configuration.preferenceWindow
        }
        return min(configuration.preferenceWindow, max(.milliseconds(2), roundTrip * 3 + .milliseconds(1)))
    }

    /// Probes every candidate at once. After the first match, waits the preference window (or
    /// until every more preferred candidate has answered) and takes the most preferred match. The
    /// trusted primary, when it answered without matching, wins only when every other candidate
    /// has answered as something else (``ProbeOutcome/refutes``).
    func race(
        _ candidates: [ServerAddress], expected: ServerIdentity, primary: ServerAddress, primaryTrusted: Bool,
        window: Duration
    ) async -> RaceOutcome {
        enum Event: Sendable {
            case probed(Int, ProbeOutcome, Duration)
            case windowEnded
        }
        let probe = self.probe
        return await withTaskGroup(of: Event.self) { group in
            for (index, candidate) in candidates.enumerated() {
                group.addTask {
                    let started = ContinuousClock.now
                    let outcome = await probe.probe(candidate, expected: expected)
                    return .probed(index, outcome, ContinuousClock.now - started)
                }
            }
            var results: [Int: ProbeOutcome] = [:]
            var roundTrips: [String: Duration] = [:]
            var qualified: [Int: Qualification] = [:]
            var windowStarted = false
            func best() -> Int? {
                if let match = qualified.filter({ $0.value == .match }).keys.min() { return match }
                // Standing trust counts only once every other address has answered as something
                // else. One that said nothing of who it is (no answer in time, a refused
                // connection, a TLS failure, a 5xx, 503 identity_unavailable) may still be the
                // installation, so it keeps the primary out.
                guard results.count == candidates.count, let primary = qualified.keys.min() else { return nil }
                return results.allSatisfy { $0.key == primary || $0.value.refutes } ? primary : nil
            }
            func decided() -> Bool {
                guard let best = best(), qualified[best] == .match else { return false }
                return (0..<best).allSatisfy { results[$0] != nil }
            }
            func finish() -> RaceOutcome {
                RaceOutcome(
                    winner: best().map { candidates[$0] }, results: Self.keyed(results, candidates),
                    roundTrips: roundTrips)
            }
            while let event = await group.next() {
                switch event {
                case .probed(let index, let outcome, let elapsed):
                    results[index] = outcome
                    if outcome.isMatch { roundTrips[candidates[index].url] = elapsed }
                    if outcome.isMatch {
                        qualified[index] = .match
                        if !windowStarted {
                            windowStarted = true
                            group.addTask {
                                try? await Task.sleep(for: window)
                                return .windowEnded
                            }
                        }
                    } else if candidates[index].url == primary.url, primaryTrusted, outcome.keepsPrimaryTrust {
                        qualified[index] = .trustedPrimary
                    }
                case .windowEnded:
                    if let best = best(), qualified[best] == .match {
                        group.cancelAll()
                        return finish()
                    }
                }
                if decided() || results.count == candidates.count {
                    group.cancelAll()
                    return finish()
                }
            }
            return finish()
        }
    }

    private static func keyed(_ results: [Int: ProbeOutcome], _ candidates: [ServerAddress]) -> [String: ProbeOutcome] {
        Dictionary(results.map { (candidates[$0.key].url, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// How stale a stored verification may get before a match writes it again: a choice that
    /// confirms what is stored writes nothing.
    static let verificationRefresh: TimeInterval = 3600

    /// Records the choice on the stored record as it is now (not on the copy the race started
    /// from), and caches it only if the network path is still the one it was made on.
    private func remember(
        _ winner: ServerAddress, matched: [String: ProbeOutcome], roundTrips: [String: Duration],
        in record: ServerRecord, path: String
    ) throws {
        let now = Date()
        let saved = try directory.update(record.key) { stored in
            guard stored.instanceID == record.instanceID else { return }
            stored.lastWinner = winner.url
            // A record without a pinned key (signed in before the server had one) pins the key its
            // primary proves, where the primary is trusted: over HTTPS, or on the network it was
            // signed in on. From then on every address must prove it.
            if stored.publicKey == nil, stored.primary.url == record.primary.url,
                stored.primary.url.hasPrefix("https://") || stored.signedInPath == path,
                case .match(let identity)? = matched[stored.primary.url], let key = identity.publicKey
            {
                stored.publicKey = key
            }
            // A round trip is stored when it is new, halved or doubled: not on every race (a write
            // is an fsync on the way to the request).
            for (url, measured) in roundTrips {
                let seconds = measured.timeInterval
                let key = path + " " + url
                if let old = stored.roundTrips?[key], seconds > old * 0.5, seconds < old * 2 { continue }
                var kept = stored.roundTrips ?? [:]
                // Many networks over the years: past a bound, only this path's are kept.
                if kept.count >= 256 { kept = kept.filter { $0.key.hasPrefix(path + " ") } }
                kept[key] = seconds
                stored.roundTrips = kept
            }
            // Stored for the clients started after this one (HTTPS only: see persistedWinner);
            // rewritten when it is another address or path, or a quarter of its life old by
            // either clock (not on every race: a write is an fsync).
            let uptime = ProcessInfo.processInfo.systemUptime
            let current = stored.verifiedWinner.map {
                $0.url == winner.url && $0.path == path
                    && $0.age(now: now, uptime: uptime).map { $0 < (configuration.winnerLifetime / 4).timeInterval }
                        == true
            }
            if !winner.url.hasPrefix("https://") {
                stored.verifiedWinner = nil
            } else if current != true {
                stored.verifiedWinner = .init(url: winner.url, path: path, at: now, uptime: uptime)
            }
            for index in stored.alternatives.indices
            where matched[stored.alternatives[index].address.url]?.isMatch == true {
                let last = stored.alternatives[index].verifiedPaths[path]
                if last.map({ now.timeIntervalSince($0) >= Self.verificationRefresh || $0 > now }) ?? true {
                    stored.alternatives[index].verifiedPaths[path] = now
                }
            }
        }
        guard saved != nil else { throw ClientError.unknownServer(record.key) }
        state.withLock { state in
            if state.path == path { state.winners[record.key] = (winner, path, ContinuousClock.now) }
        }
    }

    /// Forgets the address chosen for `key`: in this client, and the one stored for clients
    /// started after it (``ServerRecord/verifiedWinner``).
    func forgetWinner(_ key: String) {
        _ = state.withLock { $0.winners.removeValue(forKey: key) }
        if directory.server(key)?.verifiedWinner != nil { _ = try? directory.update(key) { $0.verifiedWinner = nil } }
    }

    /// The winner a client before this one stored for `record` on `path` (another process, an
    /// app launched again), taken as this client's own from when it was verified, while:
    /// - it is HTTPS: the connection itself proves the server (its name's certificate, or the
    ///   installation's own, pinned), so a network that merely shares the path's id (two
    ///   `192.168.1.1` gateways, a fixed id) gets nothing; a plain-HTTP address is probed by
    ///   every new client, as before;
    /// - it is younger than ``ClientConfiguration/winnerLifetime`` by the wall clock and by the
    ///   time since boot (a clock set back, or a device asleep, stretches neither; one from the
    ///   future, or from before a restart, is refused);
    /// - it was stored after this client last heard of a path change;
    /// - it is still one of the record's addresses: its primary, or an alternative verified on
    ///   this path.
    private func persistedWinner(of record: ServerRecord, path: String) -> ServerAddress? {
        guard let stored = record.verifiedWinner, stored.path == path, stored.url.hasPrefix("https://") else {
            return nil
        }
        if let changed = state.withLock({ $0.pathChangedAt }), stored.at <= changed { return nil }
        guard let age = stored.age(), age < configuration.winnerLifetime.timeInterval else { return nil }
        let address =
            stored.url == record.primary.url
            ? record.primary
            : record.alternatives.first { $0.address.url == stored.url && $0.verifiedPaths[path] != nil }?.address
        guard let address else { return nil }
        state.withLock { state in
            if state.path == path { state.winners[record.key] = (address, path, ContinuousClock.now - .seconds(age)) }
        }
        return address
    }
}

/// The notification streams a client has open, and how many times they were all ended (a
/// stream opened on an address chosen before a network-path change must not outlive it).
final class OpenStreams: Sendable {
    private struct State {
        var streams: [ObjectIdentifier: ClientStream] = [:]
        var generation = 0
    }

    private let state = Mutex(State())

    /// How many times every stream was ended so far.
    var generation: Int { state.withLock { $0.generation } }

    /// Keeps `stream`, unless the streams were ended since `generation` (then it is ended too and
    /// this returns false).
    func add(_ stream: ClientStream, since generation: Int) -> Bool {
        let kept = state.withLock { state -> Bool in
            guard state.generation == generation else { return false }
            state.streams[ObjectIdentifier(stream)] = stream
            return true
        }
        if !kept { stream.cancel() }
        return kept
    }

    func remove(_ stream: ClientStream) {
        _ = state.withLock { $0.streams.removeValue(forKey: ObjectIdentifier(stream)) }
    }

    func endAll() {
        let open = state.withLock { state in
            defer {
                state.streams.removeAll()
                state.generation += 1
            }
            return Array(state.streams.values)
        }
        open.forEach { $0.cancel() }
    }
}
