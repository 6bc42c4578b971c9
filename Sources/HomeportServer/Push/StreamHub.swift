import Dispatch
import Foundation
import HomeportHTTP
import HomeportLifecycle
import HomeportLogging
import HomeportStorage
import HomeportWire
import Synchronization

/// The in-app stream's fan-out: every open `GET /api/v1/notifications/stream` of this process,
/// fed from the notification log, without a thread per stream.
///
/// One timer, on one queue, does the work for all streams:
/// - new notifications (made by this process, which pokes the hub at once, or by another
///   replica, which the hub finds at its next look) are read once per account and written to
///   each of the account's streams after the event id it already has;
/// - every second the hub checks that the streams' sessions still exist, and ends those whose
///   session ended (logout, password change or reset, hold), on every replica;
/// - every ``PushSettings/streamHeartbeat`` seconds each stream gets a keep-alive comment, which
///   also finds the clients that left.
final class StreamHub: Service, @unchecked Sendable {
    private final class Subscriber: @unchecked Sendable {
        let stream: HTTPBodyStream
        let userID: Int64
        let sessionKeyHash: String
        /// The last event id written (guarded by the hub's queue).
        var lastSeq: Int64

        init(stream: HTTPBodyStream, userID: Int64, sessionKeyHash: String, lastSeq: Int64) {
            self.stream = stream
            self.userID = userID
            self.sessionKeyHash = sessionKeyHash
            self.lastSeq = lastSeq
        }
    }

    private let database: any Database
    private let identity: IdentityStore
    private let settings: PushSettings
    private let clock: any WallClock
    private let logger: Logger
    private let queue = DispatchQueue(label: "homeport.stream.hub")
    private let pokePending = Atomic<Bool>(false)
    /// The open streams by account, then by subscriber (guarded by the hub's queue): a look reads
    /// each account once, and a stream that opens catches up on its own account alone.
    private var subscribers: [Int64: [ObjectIdentifier: Subscriber]] = [:]
    /// Its timer, on its queue, while it runs (guarded by the hub's queue).
    private var ticker: RepeatingTask?
    private var lastSessionCheck = Date.distantPast
    private var lastHeartbeat = Date()
    private static let keepAlive = Array(": keepalive\n\n".utf8)
    /// The open streams by their census number, and who holds them (any thread, briefly).
    private let census: Mutex<(census: StreamCensus, streams: [Int: HTTPBodyStream], next: Int)>

    init(database: any Database, identity: IdentityStore, settings: PushSettings, clock: any WallClock, logger: Logger)
    {
        self.database = database
        self.identity = identity
        self.settings = settings
        self.clock = clock
        self.logger = logger.withLabel("homeport.stream")
        census = Mutex((StreamCensus(limits: settings.streamLimits), [:], 0))
    }

    let name = "homeport.stream.hub"

    /// Starts the timer.
    func start() {
        let interval = Duration.milliseconds(Int(settings.streamPollInterval * 1000))
        let ticker = RepeatingTask(name, on: queue, after: interval, every: interval, failed: { _ in }) {
            [weak self] in self?.tick()
        }
        let previous = queue.sync {
            defer { self.ticker = ticker }
            return self.ticker
        }
        previous?.stop()
        ticker.start()
    }

    /// Stops the timer and ends every stream.
    func stop() {
        queue.sync { ticker.take() }?.stop()
        queue.sync {
            subscribers.values.forEach { $0.values.forEach { $0.stream.finish() } }
            subscribers.removeAll()
        }
    }

    /// A notification was made by this process: deliver it now rather than at the next look.
    /// Pokes that come while one is waiting to run join it (its look reads every notification
    /// committed before it starts), so a burst of notifications costs one look, not one each.
    func poke() {
        guard pokePending.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        queue.async { [weak self] in
            self?.pokePending.store(false, ordering: .sequentiallyConsistent)
            guard let self else { return }
            deliver(to: subscribers)
        }
    }

    /// Opens a stream for a signed-in session from `client` (an address), resuming after
    /// `lastEventID` when the client gives one (within the log's retention), else starting with
    /// the next notification. An id past the
    /// account's newest event was never sent to it (a database restored from a backup numbers
    /// again from lower, or a client made the number up): the stream starts with the next
    /// notification, rather than waiting, silent, until the log catches up.
    ///
    /// Within ``StreamLimits``: a session's stream past its share replaces the session's oldest;
    /// past the account's or the address's cap, 429 `too_many_streams` with `Retry-After`.
    func open(session: Session, account: Account, client: String, lastEventID: Int64?) throws -> HTTPBodyStream {
        let newest = try NotificationLog(database).latest(userIDs: [account.id])[account.id] ?? 0
        let start = min(lastEventID ?? newest, newest)
        let stream = HTTPBodyStream()
        let (number, admission, replaced) = census.withLock { state in
            state.next += 1
            let number = state.next
            let admission = state.census.admit(
                number, session: session.keyHash, account: account.id, client: RateLimiter.clientKey(client))
            guard case .admitted(let replacing) = admission else { return (number, admission, [HTTPBodyStream]()) }
            state.streams[number] = stream
            return (number, admission, replacing.compactMap { state.streams.removeValue(forKey: $0) })
        }
        switch admission {
        case .accountFull:
            throw Self.tooMany("This account has \(settings.streamLimits.perAccount) notification streams open")
        case .clientFull:
            throw Self.tooMany("This address has \(settings.streamLimits.perClient) notification streams open")
        case .admitted: replaced.forEach { $0.finish() }
        }
        let subscriber = Subscriber(
            stream: stream, userID: account.id, sessionKeyHash: session.keyHash, lastSeq: max(0, start))
        let key = ObjectIdentifier(subscriber)
        let userID = account.id
        stream.onClose = { [weak self] in
            guard let hub = self else { return }
            hub.census.withLock { state in
                state.census.remove(number)
                state.streams[number] = nil
            }
            hub.queue.async { hub.remove(key, of: userID) }
        }
        // The client learns at once that the stream is open (and a proxy flushes its headers).
        stream.write(Array(": connected\n\n".utf8))
        queue.async { [weak self] in
            guard let self, !stream.isClosed else { return }
            subscribers[userID, default: [:]][key] = subscriber
            // What was made between reading `newest` and now: this stream's catch-up alone, so
            // that opening n streams costs n small looks, not n looks at every stream.
            deliver(to: [userID: [key: subscriber]])
        }
        return stream
    }

    /// Streams open right now.
    var openCount: Int { queue.sync { subscribers.values.reduce(0) { $0 + $1.count } } }

    /// 429 `too_many_streams`: the client's stream retries after `Retry-After`.
    private static func tooMany(_ what: String) -> HTTPError {
        HTTPError(
            status: 429, code: APIErrorCode.tooManyStreams, message: what + "; close one, or try again later.",
            headers: ["Retry-After": "30"])
    }

    // MARK: On the hub's queue

    private func remove(_ key: ObjectIdentifier, of userID: Int64) {
        subscribers[userID]?[key] = nil
        if subscribers[userID]?.isEmpty == true { subscribers[userID] = nil }
    }

    private func tick() {
        deliver(to: subscribers)
        let now = Date()
        if now.timeIntervalSince(lastSessionCheck) >= 1 {
            lastSessionCheck = now
            endStreamsOfEndedSessions()
        }
        if now.timeIntervalSince(lastHeartbeat) >= settings.streamHeartbeat {
            lastHeartbeat = now
            subscribers.values.forEach { $0.values.forEach { $0.stream.write(Self.keepAlive) } }
        }
    }

    /// Writes each account's notifications after each of its streams' last event id. Each
    /// notification is encoded once, and the streams that need the same events get the same bytes.
    private func deliver(to accounts: [Int64: [ObjectIdentifier: Subscriber]]) {
        guard !accounts.isEmpty else { return }
        do {
            let latest = try NotificationLog(database).latest(userIDs: Array(accounts.keys))
            for (userID, streams) in accounts {
                guard let newest = latest[userID], let oldest = streams.values.map(\.lastSeq).min(), newest > oldest
                else { continue }
                var after = oldest
                while after < newest {
                    let records = try NotificationLog(database).after(userID: userID, seq: after)
                    guard let last = records.last else { break }
                    let events = records.map(event)
                    // The bytes from the first event a stream lacks to the last, made once per start.
                    var bytesFrom: [Int: [UInt8]] = [:]
                    for subscriber in streams.values {
                        guard let first = records.firstIndex(where: { $0.seq > subscriber.lastSeq }) else { continue }
                        let bytes = bytesFrom[first] ?? Array(events[first...].joined().utf8)
                        bytesFrom[first] = bytes
                        subscriber.stream.write(bytes)
                        subscriber.lastSeq = max(subscriber.lastSeq, last.seq)
                    }
                    after = last.seq
                }
            }
        } catch {
            logger.warning("notifications not read for streams", metadata: ["error": String(describing: error)])
        }
    }

    /// One server-sent event.
    private func event(_ record: NotificationRecord) -> String {
        let data = StreamNotification(
            id: record.seq, s: try? identity.instanceID(), c: record.code, object: record.objectID,
            thread: record.thread,
            mv: record.catalogueVersion, title: record.title, body: record.body, at: record.createdAt,
            data: record.data)
        let json = (try? HTTPResponse.encode(data)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return "id: \(record.seq)\nevent: notification\ndata: \(json)\n\n"
    }

    /// Ends the streams whose session no longer exists (or expired).
    private func endStreamsOfEndedSessions() {
        guard !subscribers.isEmpty else { return }
        let keys = Array(Set(subscribers.values.flatMap { $0.values.map(\.sessionKeyHash) }))
        do {
            let live = try SessionStore(database).live(keyHashes: keys, now: clock.unixSeconds)
            for (userID, streams) in subscribers {
                for (key, subscriber) in streams where !live.contains(subscriber.sessionKeyHash) {
                    subscriber.stream.finish()
                    remove(key, of: userID)
                }
            }
        } catch {
            logger.warning("stream sessions not checked", metadata: ["error": String(describing: error)])
        }
    }
}
