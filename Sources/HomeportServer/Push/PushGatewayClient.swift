import Foundation
import HomeportAPNs
import HomeportCrypto
import HomeportCurl
import HomeportHTTP
import HomeportLogging
import HomeportStorage
import HomeportWire
import Synchronization

/// Sends the outbox to a push gateway instead of APNs (and FCM and Web Push, when the gateway
/// carries them): the device changes it has not heard of first (``PushGatewaySync``), then the
/// batch of pushes as one request, over one kept-alive HTTPS connection (libcurl). The gateway
/// answers with each service's outcome of each push in Apple's terms, so the sender records them
/// as it would APNs' own.
///
/// Device changes go from one replica at a time (a lease in `serving_settings`), in the order
/// they were made: a removal never overtakes the registration it undoes.
///
/// ``batchesAtOnce`` batches go out at once, each on a connection of its own, so the gateway's
/// work on one overlaps the round trips of the others, and the server records and claims while
/// they are out. A gateway that answers that this server has as many batches in flight as it
/// may (a gateway that allows fewer, or another replica's batches) sent nothing: the batch is
/// sent again as soon as another batch of this process that the gateway took ends, or after
/// the gateway's `Retry-After` (at most five seconds) when none is out (three times at most,
/// then it is a transient failure like any other), and for the next minute this process sends
/// at most as many at once as it had out beside the refused one (at least one). A batch written
/// larger than ``pushesBytes`` goes as two requests.
///
/// A gateway that cannot be reached, or that refuses the request as a whole (a revoked
/// credential, a gateway overloaded), makes every push of the batch a transient failure: they
/// are tried again with backoff.
final class PushGatewayClient: PushTransport {
    /// The gateway this process sends to, and its credential there.
    let settings: PushGatewaySettings
    private let database: any Database
    private let clock: any WallClock
    private let logger: Logger
    /// Kept-alive connections not in use (one per batch out at once).
    private let sessions = Mutex<[CurlSession]>([])
    /// This process's batches posted to the gateway: how many are out, and how many the gateway
    /// took have ended (signalled as each ends).
    private let batches = NSCondition()
    private nonisolated(unsafe) var batchesOut = 0
    private nonisolated(unsafe) var batchesEnded = 0
    /// ``pushesBytes``, or less for a test.
    private let pushesBytes: Int
    /// Until when (Unix seconds) fewer batches go out at once, after the gateway said "busy",
    /// and how many.
    private let narrowed = Mutex<(until: Int64, depth: Int)>((0, batchesAtOnce))
    /// One forwarding of device changes at a time in this process: a removal read after a
    /// registration is never sent before it.
    private let forwarding = NSLock()
    private let lastWarning = Mutex<ContinuousClock.Instant?>(nil)
    private let base: String
    /// This process's name in the forwarding lease.
    private let claimant: String
    /// The push services it carries for this process.
    let providers: Set<PushProvider>
    /// Whether what the gateway carries was compared with this process's flags (once it answers).
    private let servicesChecked = Mutex(false)

    init(
        database: any Database, settings: PushGatewaySettings, providers: Set<PushProvider>, clock: any WallClock,
        logger: Logger, pushesBytes: Int = PushGatewayClient.pushesBytes
    ) throws {
        self.pushesBytes = pushesBytes
        self.settings = settings
        self.providers = providers
        self.database = database
        self.clock = clock
        self.logger = logger
        self.base = settings.url.hasSuffix("/") ? String(settings.url.dropLast()) : settings.url
        self.claimant = try SystemRandom().uuid().uuidString.lowercased()
    }

    func deliver(_ items: [OutboxItem]) throws -> [APNsResponse] {
        if let failure = try forwardDeviceChanges() {
            // The gateway still working on this server's last changes sent nothing: the batch
            // goes at the next pass, its attempt not counted.
            if failure.busy { return items.map { _ in .notSent(failure.description) } }
            return items.map { _ in APNsResponse(status: 0, transportError: failure.description) }
        }
        return send(items[...])
    }

    /// Posts `items` as one request, or (written larger than ``pushesBytes``) as two halves in
    /// turn; one outcome per item.
    private func send(_ items: ArraySlice<OutboxItem>) -> [APNsResponse] {
        let batch = GatewayPushBatch(
            pushes: items.map {
                GatewayPush(
                    provider: $0.provider, apnsId: $0.apnsID, deviceToken: $0.deviceToken, environment: $0.environment,
                    topic: $0.topic,
                    payload: $0.payload, priority: $0.priority, expiration: $0.expiration, collapseId: $0.collapseID)
            })
        // Written without the generic encoder, as the gateway's answer is read: the same bytes.
        let body = Data(batch.json())
        if body.count > pushesBytes, items.count > 1 {
            let half = items.startIndex + items.count / 2
            return send(items[..<half]) + send(items[half...])
        }
        var endedBefore = batches.withLock { batchesEnded }
        var (answer, others) = postBatch(body)
        for _ in 0..<3 {
            guard case .failure(let failure) = answer, failure.busy else { break }
            // The gateway had no room beside the batches this process had out when it posted.
            narrowed.withLock { $0 = (clock.unixSeconds + 60, max(1, min(depth(under: $0), others))) }
            awaitAnotherBatch(since: endedBefore, orSeconds: failure.retryAfter ?? 1)
            endedBefore = batches.withLock { batchesEnded }
            (answer, others) = postBatch(body)
        }
        if case .failure(let failure) = answer, failure.busy {
            warn("push gateway refused the request", ["status": "429", "error": failure.description])
        }
        switch answer {
        case .failure(let failure):
            return items.map { _ in APNsResponse(status: 0, transportError: failure.description) }
        case .success(let body):
            // Read without JSONDecoder when it is as the gateway writes it (it costs several µs a push).
            guard
                let answer = GatewayPushResults(reading: Array(body))
                    ?? (try? JSONDecoder().decode(GatewayPushResults.self, from: body)),
                answer.results.count == items.count
            else {
                let failure = "the push gateway's answer is not one outcome per push"
                warn(failure, [:])
                return items.map { _ in APNsResponse(status: 0, transportError: failure) }
            }
            return answer.results.map {
                APNsResponse(
                    status: $0.status, reason: $0.reason.map(APNsReason.init(rawValue:)), timestamp: $0.timestamp,
                    retryAfter: $0.retryAfter)
            }
        }
    }

    /// Posts a batch's text, counting it out and, unless the gateway had no room for it, in
    /// again as it ends (it held one of the server's places there meanwhile); the answer, and
    /// how many other batches of this process were out, the more of as it was posted and as it
    /// was answered (those out before may have ended by the answer, and those posted after may
    /// have reached the gateway first).
    private func postBatch(_ body: Data) -> (Result<Data, GatewayFailure>, others: Int) {
        let before = batches.withLock {
            batchesOut += 1
            return batchesOut - 1
        }
        let answer = post(PushGatewayPath.pushes, body)
        let refused = if case .failure(let failure) = answer { failure.busy } else { false }
        let after = batches.withLock {
            batchesOut -= 1
            if !refused { batchesEnded += 1 }
            batches.broadcast()
            return batchesOut
        }
        return (answer, max(before, after))
    }

    /// Waits until another batch of this process that the gateway took ends (each ends within
    /// the timeout), or not at all when one ended since `before`; `seconds` (at most five) when
    /// none is out, or none that ends was taken: then what holds the places is another
    /// replica's.
    private func awaitAnotherBatch(since before: Int, orSeconds seconds: Int64) {
        let freed = batches.withLock {
            let deadline = Date(timeIntervalSinceNow: TimeInterval(settings.timeoutSeconds))
            while batchesEnded == before, batchesOut > 0, batches.wait(until: deadline) {}
            return batchesEnded != before
        }
        if !freed { Thread.sleep(forTimeInterval: TimeInterval(min(max(seconds, 1), 5))) }
    }

    /// The most bytes one request's pushes are written in: well under the gateway's 8 MiB body
    /// (a thousand pushes of 4 KiB whose every byte is escaped would pass it).
    static let pushesBytes = 4 << 20

    /// As many as one request to the gateway takes: each request costs the gateway a lookup of
    /// the credential, a charge to the server's rate and its counters, whatever its size.
    var batchSize: Int { GatewayPushBatch.maximumCount }

    /// Batches out at once, unless the gateway said "busy" within the minute: four, so that the
    /// gateway, APNs and the server (recording one, claiming the next) always have one to work
    /// on (with two, the cores stood idle a fifth of a drain while both waited at APNs; see
    /// BENCHMARKS.md).
    static let batchesAtOnce = 4

    var batchesInFlight: Int {
        narrowed.withLock { depth(under: $0) }
    }

    /// How many batches go out at once under `narrowing`: its depth until it lapses, then
    /// ``batchesAtOnce``.
    private func depth(under narrowing: (until: Int64, depth: Int)) -> Int {
        clock.unixSeconds < narrowing.until ? narrowing.depth : Self.batchesAtOnce
    }

    func idle() throws {
        checkServices()
        // Why it failed is logged by the exchange; the changes wait for the next pass.
        _ = try forwardDeviceChanges()
    }

    /// Compares what the gateway carries with this process's flags, once the gateway answers:
    /// a kind it does not send, or a VAPID key or Firebase project other than the flags name,
    /// would have every such push refused, so it is said in the log.
    private func checkServices() {
        guard !servicesChecked.withLock({ $0 }),
            case .success(let answer) = exchange({
                $0.perform(base + PushGatewayPath.services, headers: ["Authorization: Bearer \(settings.credential)"])
            }),
            answer.status == 200, let services = try? JSONDecoder().decode(GatewayServices.self, from: answer.body)
        else { return }
        servicesChecked.withLock { $0 = true }
        for problem in Self.mismatches(services, settings: settings, providers: providers) {
            logger.warning("the push gateway does not carry what this server was told", metadata: ["problem": problem])
        }
    }

    /// What the gateway's `services` answer says against the flags, one sentence each.
    static func mismatches(_ services: GatewayServices, settings: PushGatewaySettings, providers: Set<PushProvider>)
        -> [String]
    {
        var problems: [String] = []
        for provider in providers.sorted(by: { $0.rawValue < $1.rawValue })
        where !services.providers.contains(provider) {
            problems.append("it does not send \(provider.rawValue): those pushes are refused")
        }
        if providers.contains(.webpush), let key = services.webPushKey, key != settings.webPushKey {
            problems.append(
                "its VAPID key is not --push-gateway-webpush-key: push services refuse pushes to subscriptions made with that key"
            )
        }
        if providers.contains(.fcm), let project = services.fcmProject, project != settings.fcmProject {
            problems.append(
                "its Firebase project is \(project), not --push-gateway-fcm-project \(settings.fcmProject ?? "")")
        }
        return problems
    }

    /// Logs a failed exchange, at most once a minute (the idle pass tries four times a second).
    private func warn(_ message: String, _ metadata: [String: String]) {
        let now = ContinuousClock.now
        let due = lastWarning.withLock { last in
            guard last.map({ now - $0 >= .seconds(60) }) ?? true else { return false }
            last = now
            return true
        }
        if due { logger.warning(message, metadata: metadata) }
    }

    /// Sends every device change the gateway has not acknowledged, unless another replica holds
    /// the forwarding lease; why it could not, or `nil`.
    private func forwardDeviceChanges() throws -> GatewayFailure? {
        try forwarding.withLock { try forwardDeviceChangesAlone() }
    }

    private func forwardDeviceChangesAlone() throws -> GatewayFailure? {
        // The lease outlasts an exchange that times out, so a holder's changes always land before
        // the next holder reads any. It is claimed before the changes are read, and only when
        // there are some (a write four times a second would be for nothing).
        let lease = Int64(2 * settings.timeoutSeconds + 30)
        guard try !PushGatewaySync(database).pending(limit: 1).isEmpty else { return nil }
        while true {
            guard
                try database.transaction({
                    try PushGatewaySync($0).claimForwarding(claimant, now: clock.unixSeconds, lease: lease)
                })
            else { return nil }
            let pending = try PushGatewaySync(database).pending(limit: GatewayDeviceChanges.maximumCount)
            guard !pending.isEmpty else { return nil }
            let changes = Self.fitting(pending)
            // Changes of kinds the gateway does not carry for this process are only acknowledged.
            let carried = changes.filter { providers.contains($0.provider) }
            let body = GatewayDeviceChanges(
                register: carried.compactMap(\.registration),
                remove: carried.filter { !$0.registered }.map(\.token))
            if !body.register.isEmpty || !body.remove.isEmpty {
                switch post(PushGatewayPath.devices, try HTTPResponse.encode(body)) {
                case .failure(let failure):
                    return GatewayFailure(
                        "device registrations not forwarded: " + failure.description, busy: failure.busy,
                        retryAfter: failure.retryAfter)
                case .success(let answer):
                    // What the gateway refused stays refused if sent again: said, and let go.
                    if let results = try? JSONDecoder().decode(GatewayDeviceResults.self, from: answer),
                        !results.refused.isEmpty
                    {
                        logger.warning(
                            "the push gateway refused device registrations",
                            metadata: [
                                "count": String(results.refused.count),
                                "fields": results.refused.prefix(5).map(\.field).joined(separator: ","),
                                "reason": results.refused.first?.message ?? "",
                            ])
                    }
                }
            }
            try database.transaction { try PushGatewaySync($0).acknowledge(changes) }
            if pending.count < GatewayDeviceChanges.maximumCount, changes.count == pending.count { return nil }
        }
    }

    /// The most of a request's changes' text, in bytes: well under the gateway's 8 MiB body (an FCM
    /// token may be 4 KiB, a Web Push endpoint 1 KiB).
    static let changesBytes = 4 << 20

    /// The first of `changes` whose registrations fit in ``changesBytes`` (at least one).
    static func fitting(_ changes: [PushGatewaySync.Change]) -> [PushGatewaySync.Change] {
        var bytes = 0
        var count = 0
        for change in changes {
            bytes +=
                128 + change.token.utf8.count + (change.endpoint?.utf8.count ?? 0) + (change.p256dh?.utf8.count ?? 0)
                + (change.auth?.utf8.count ?? 0)
            if bytes > changesBytes, count > 0 { break }
            count += 1
        }
        return Array(changes.prefix(count))
    }

    /// Runs `perform` with a kept-alive connection no other exchange is using.
    private func exchange<T>(_ perform: (CurlSession) -> T) -> T {
        let session =
            sessions.withLock { $0.popLast() }
            ?? CurlSession(caFile: settings.caFile, timeoutSeconds: settings.timeoutSeconds)
        defer { sessions.withLock { $0.append(session) } }
        return perform(session)
    }

    /// POSTs `body` as JSON to `path`; the answer's body when it is a 200, else why not.
    private func post(_ path: String, _ body: Data) -> Result<Data, GatewayFailure> {
        let headers = ["Content-Type: application/json", "Authorization: Bearer \(settings.credential)"]
        switch exchange({ $0.perform(base + path, headers: headers, body: body) }) {
        case .failure(let failure):
            let reason = "the push gateway was not reached: \(failure)"
            warn("push gateway unreachable", ["error": reason])
            return .failure(GatewayFailure(reason))
        case .success(let answer) where answer.status == 200:
            return .success(answer.body)
        case .success(let answer):
            let envelope = try? JSONDecoder().decode(ErrorEnvelope.self, from: answer.body)
            let message = envelope?.error.message ?? String(decoding: answer.body.prefix(200), as: UTF8.self)
            // Nothing was sent: the caller sends it again shortly, and says so only if that fails.
            let busy = answer.status == 429 && envelope?.error.code == APIErrorCode.tooManyRequests
            if !busy {
                warn("push gateway refused the request", ["status": String(answer.status), "error": message])
            }
            return .failure(
                GatewayFailure(
                    "the push gateway answered \(answer.status): \(message)", busy: busy,
                    retryAfter: answer.retryAfter))
        }
    }

    /// Why an exchange with the gateway failed.
    struct GatewayFailure: Error, CustomStringConvertible {
        var description: String
        /// Whether the gateway refused the request only because this server had as many
        /// batches in flight as it may (it sent nothing).
        var busy = false
        /// The seconds the gateway's `Retry-After` asked for, if it gave one.
        var retryAfter: Int64?
        init(_ description: String, busy: Bool = false, retryAfter: Int64? = nil) {
            self.description = description
            self.busy = busy
            self.retryAfter = retryAfter
        }
    }
}
