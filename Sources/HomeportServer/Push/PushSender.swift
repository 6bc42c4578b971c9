import Dispatch
import Foundation
import HomeportAPNs
import HomeportCrypto
import HomeportLifecycle
import HomeportLogging
import HomeportStorage
import HomeportWire
import Synchronization

/// Delivers the outbox on a thread of its own: claims due rows (every replica's sender claims its
/// own, never the same), hands them as one batch to its transport (APNs itself, as HTTP/2
/// streams, or a push gateway), and records each outcome, in one transaction per batch. While a
/// batch is out, the thread records the one before and claims the next, so the database's work
/// and the push services' overlap (a batch claimed that way has its lease renewed as it goes).
///
/// Outcomes (a Web Push service's answers are mapped onto Apple's by ``WebPushDelivery``):
/// delivered rows are deleted; `410 Unregistered` deletes the registration unless it
/// was registered again after Apple's timestamp; `BadDeviceToken` and `DeviceTokenNotForTopic`
/// delete it; a gateway that does not know the device from this server gets it registered again
/// and the push is tried again later; no answer, 429 and 5xx are tried again later, with exponential
/// backoff and jitter (never before a `Retry-After`), up to the attempt limit; any other reason is not retried. Every outcome is
/// logged by its `apns-id`, never with the device token, the key or the payload.
final class PushSender: Service, @unchecked Sendable {
    private let database: any Database
    private let transport: any PushTransport
    private let maximumAttempts: Int
    private let clock: any WallClock
    private let logger: Logger
    private let claimant: String
    private let batchSize: Int
    /// How long a claim holds before another replica may take the rows over, in seconds.
    private let lease: Int64
    /// The sending thread, while it runs.
    private let thread = Mutex<ServiceThread?>(nil)
    /// One pass at a time.
    private let pass = NSLock()
    /// When this sender last looked for rows whose lease ran out (its clock's second), under
    /// `pass`: once a second, not with each batch.
    private var lapsedLookedAt: Int64?

    init(
        database: any Database, transport: any PushTransport, maximumAttempts: Int, clock: any WallClock,
        logger: Logger, batchSize: Int? = nil, lease: Int64 = 60
    ) throws {
        self.database = database
        self.transport = transport
        self.maximumAttempts = maximumAttempts
        self.clock = clock
        self.logger = logger.withLabel("homeport.push")
        self.claimant = try SystemRandom().uuid().uuidString.lowercased()
        self.batchSize = batchSize ?? transport.batchSize
        self.lease = lease
    }

    let name = "homeport.push.sender"

    /// Starts the sending thread.
    func start() {
        let sending = ServiceThread(name) { [self] thread in
            while !thread.isStopping {
                let handled: Int
                do {
                    handled = try pass.withLock { try drainWhileDue(thread) }
                } catch {
                    logger.warning("push batch failed", metadata: ["error": String(describing: error)])
                    handled = 0
                }
                // Nothing due: wait for a notification from this process, or look again shortly
                // (another process may have queued some).
                if handled == 0 { thread.rest(upTo: .milliseconds(250)) }
            }
        }
        let previous = thread.withLock { slot in
            defer { slot = sending }
            return slot
        }
        previous?.stop()
        sending.start()
    }

    /// Stops the thread after its batch in flight.
    func stop() {
        thread.withLock { $0.take() }?.stop()
    }

    /// Something was queued: look now.
    func wake() {
        thread.withLock { $0 }?.wake()
    }

    /// One pass: claims a batch, sends it, records the outcomes. Returns how many rows it handled.
    @discardableResult
    func drainOnce() throws -> Int {
        try pass.withLock { try drainBatch() }
    }

    private func drainBatch() throws -> Int {
        let items = try claim(now: clock.unixSeconds)
        guard !items.isEmpty else {
            try transport.idle()
            return 0
        }
        // A transport that throws sent nothing: the rows wait out their lease and go again.
        let responses = try transport.deliver(items)
        try record(items, responses, now: clock.unixSeconds)
        return items.count
    }

    /// Batches one after another until none is due or the thread stops; returns how many rows it
    /// handled. Up to the transport's ``PushTransport/batchesInFlight`` batches go out at once,
    /// each on a thread of the pool, while this thread records those that came back and claims
    /// the next. A batch claimed more than a second before it goes (it waited for an answer) has
    /// its lease renewed first (a row another sender took over meanwhile is left to it), so every
    /// batch goes with all but a second or two of its lease left; and while the thread waits for
    /// the oldest batch out, every third of a lease it holds every batch out (answered or not)
    /// for another, so a slow delivery's batches, or one answered behind it, are never taken over
    /// and sent again.
    /// A batch claimed when the thread is stopping, or when the run ends in an error, is given
    /// back unsent, due at once; every batch sent is recorded before the run ends, whatever ended
    /// it.
    private func drainWhileDue(_ thread: ServiceThread) throws -> Int {
        var claimedAt = clock.unixSeconds
        var claimed = try claim(now: claimedAt)
        guard !claimed.isEmpty else {
            try transport.idle()
            return 0
        }
        // Asked before each send: a transport may narrow it (a gateway with no room for more).
        var depth: Int { max(1, transport.batchesInFlight) }
        var handled = 0
        /// On their way, oldest first.
        var out: [Delivery] = []
        /// Answered, not yet recorded.
        var answered: (items: [OutboxItem], responses: [APNsResponse])?
        do {
            while true {
                if !claimed.isEmpty, out.count < depth {
                    if thread.isStopping {
                        try release(claimed)
                        claimed = []
                    } else if clock.unixSeconds - claimedAt > 1 {
                        let held = try hold(claimed)
                        claimed = claimed.filter { held.contains($0.id) }
                    }
                    if !claimed.isEmpty {
                        out.append(Delivery(transport, claimed))
                        handled += claimed.count
                        claimed = []
                    }
                }
                // While batches are out: the one that came back is recorded, the next claimed.
                if let done = answered {
                    try record(done.items, done.responses, now: clock.unixSeconds)
                    answered = nil
                }
                if claimed.isEmpty, !thread.isStopping {
                    claimedAt = clock.unixSeconds
                    claimed = try claim(now: claimedAt)
                    if !claimed.isEmpty, out.count < depth { continue }
                }
                guard let oldest = out.first else { break }
                // A transport that throws sent nothing: those rows wait out their lease and go again.
                var responses = try oldest.wait(upTo: heartbeat)
                while responses == nil {
                    // Out for a third of a lease: every batch out (or answered and waiting for the
                    // oldest) is held for another, so none is taken over and sent again meanwhile.
                    try hold(out.flatMap(\.items))
                    responses = try oldest.wait(upTo: heartbeat)
                }
                out.removeFirst()
                answered = (oldest.items, responses ?? [])
            }
        } catch {
            // Sent is recorded before the error ends the run; claimed and unsent is given back.
            if let done = answered { try? record(done.items, done.responses, now: clock.unixSeconds) }
            try? release(claimed)
            for delivery in out {
                guard let responses = try? delivery.wait() ?? nil else { continue }
                try? record(delivery.items, responses, now: clock.unixSeconds)
            }
            throw error
        }
        return handled
    }

    /// How long the thread waits for a batch before it holds every batch out for another lease.
    private var heartbeat: DispatchTimeInterval { .seconds(Int(max(1, lease / 3))) }

    /// Holds rows this sender claimed, and sent or is about to, for another lease; the ids it
    /// still held (a row another sender took over after its lease ran out is that sender's).
    @discardableResult
    private func hold(_ items: [OutboxItem]) throws -> Set<Int64> {
        guard !items.isEmpty else { return [] }
        return try database.transaction {
            try PushOutbox($0).renew(items.map(\.id), for: claimant, until: clock.unixSeconds + lease)
        }
    }

    /// Gives back claimed rows that were not sent.
    private func release(_ items: [OutboxItem]) throws {
        guard !items.isEmpty else { return }
        try database.transaction { try PushOutbox($0).release(items.map(\.id), by: claimant) }
    }

    /// Due rows at `now`, claimed for this sender; first, once a second, rows whose lease ran out
    /// (another sender's that stopped, or a batch of this one's that outlasted its lease). To
    /// tell, a claim reads every row in flight, up to six batches of a thousand (four out
    /// through a gateway, one answered, one claimed).
    private func claim(now: Int64) throws -> [OutboxItem] {
        let lapsed = lapsedLookedAt != now
        let items = try database.transaction {
            try PushOutbox($0).claim(
                claimant, limit: batchSize, now: now, lease: lease, dialect: database.dialect,
                providers: transport.providers, lapsed: lapsed)
        }
        if lapsed { lapsedLookedAt = now }
        return items
    }

    private func record(_ items: [OutboxItem], _ responses: [APNsResponse], now: Int64) throws {
        var done: [Int64] = []
        var delivered = 0
        try database.transaction { db in
            let outbox = PushOutbox(db)
            let devices = PushDeviceStore(db)
            for (item, response) in zip(items, responses) {
                let detail = response.reason?.rawValue ?? response.transportError ?? "status \(response.status)"
                if response.status == 403, response.reason?.rawValue == PushGatewayReason.unknownDevice {
                    // The gateway lost this server's registration (or never had it): register the
                    // device again, if it is still registered here, and try again later.
                    let attempts = item.attempts + 1
                    if try PushGatewaySync(db).requeue(token: item.deviceToken), attempts < maximumAttempts {
                        try outbox.retry(item.id, attempts: attempts, at: now + Self.backoff(attempts), error: detail)
                        log("the push gateway does not know the device; registered again", item, response)
                    } else {
                        done.append(item.id)
                        log("the push gateway does not know the device; push dropped", item, response)
                    }
                    continue
                }
                if response.wasNotSent {
                    // Never started (its batch ran out of time behind slow push services): it
                    // goes again at the next pass, and the attempt is not counted against it.
                    try outbox.retry(item.id, attempts: item.attempts, at: now + 1, error: detail)
                    continue
                }
                switch response.outcome {
                case .delivered:
                    delivered += 1
                    done.append(item.id)
                    logger.debug("push delivered", metadata: ["apns-id": item.apnsID])
                case .unregistered(let since):
                    done.append(item.id)
                    let removed = try devices.prune(token: item.deviceToken, unlessUpdatedAfter: since ?? now)
                    log(
                        removed
                            ? "device unregistered; registration removed"
                            : "device unregistered; a newer registration of the token is kept", item, response)
                case .badDevice:
                    done.append(item.id)
                    let removed = try devices.prune(token: item.deviceToken)
                    log(
                        removed
                            ? "device token refused; registration removed" : "device token refused; no registration",
                        item, response)
                case .giveUp:
                    try outbox.fail(item.id, attempts: item.attempts + 1, error: detail)
                    log("push refused; not retried", item, response)
                case .retry, .providerTokenRejected:
                    let attempts = item.attempts + 1
                    if attempts >= maximumAttempts {
                        try outbox.fail(item.id, attempts: attempts, error: detail)
                        log("push given up after \(attempts) attempts", item, response)
                    } else {
                        // Not before the service's Retry-After, when it gave one.
                        let wait = max(Self.backoff(attempts), response.retryAfter ?? 0)
                        try outbox.retry(item.id, attempts: attempts, at: now + wait, error: detail)
                        log("push will be tried again", item, response)
                    }
                }
            }
            try outbox.delete(done)
        }
        if delivered > 0 { logger.info("pushes delivered", metadata: ["count": String(delivered)]) }
    }

    private func log(_ message: String, _ item: OutboxItem, _ response: APNsResponse) {
        logger.notice(
            message,
            metadata: [
                "apns-id": item.apnsID, "status": String(response.status),
                "reason": response.reason?.rawValue ?? response.transportError ?? "",
            ])
    }

    /// Seconds before attempt `attempts + 1`: 2, 4, 8, … up to an hour, each with ±50 % jitter.
    static func backoff(_ attempts: Int) -> Int64 {
        let base = Double(min(3600, 1 << min(attempts, 12)))
        return Int64((base * Double.random(in: 0.5...1.5)).rounded(.up))
    }
}

/// A batch on its way out on a thread of the pool, and its answers once they are all in.
private final class Delivery: @unchecked Sendable {
    /// The rows it sends.
    let items: [OutboxItem]
    private let done = DispatchSemaphore(value: 0)
    /// Written once by the sending thread before `done` is signalled, read after it.
    private var result: Result<[APNsResponse], any Error> = .success([])

    init(_ transport: any PushTransport, _ items: [OutboxItem]) {
        self.items = items
        DispatchQueue.global().async { [self] in
            result = Result { try transport.deliver(items) }
            done.signal()
        }
    }

    /// The answers, in the items' order (or what the transport threw), or `nil` when they are
    /// not all in within `timeout`.
    func wait(upTo timeout: DispatchTimeInterval? = nil) throws -> [APNsResponse]? {
        if let timeout {
            guard done.wait(timeout: .now() + timeout) == .success else { return nil }
        } else {
            done.wait()
        }
        // Another wait returns at once too.
        done.signal()
        return try result.get()
    }
}
