import Foundation
import HomeportCrypto
import HomeportHTTP
import HomeportLogging
import HomeportStorage
import HomeportWire
import Synchronization

/// Notifications from this server: what a product calls to notify an account, and what the API's
/// push and notification routes use.
///
/// One call, ``notify(_:to:)`` (or ``notify(_:to:in:)`` inside the caller's own transaction),
/// writes the notification to the account's log (which the in-app stream reads) and, in the same
/// transaction, one outbox row per registered device whose thread is not muted (which the
/// sender delivers to APNs). The payload follows PROTOCOL §4: `s` is this installation's
/// `instanceId`, `mv` the catalogue's version, the thread is namespaced by the server.
public final class PushCenter: Sendable {
    /// The settings in force.
    package let settings: PushSettings
    /// The catalogue: the built-in codes, those products declared through the product API and
    /// the operator's (`--catalogue`), read again from the database at most a second late, so
    /// every replica answers a product's change (and its new `mv`) within a second.
    package var catalogue: ServerCatalogue { catalogue(readingThrough: nil) }

    /// The catalogue, read again through `db` (the caller's connection) when the one held is
    /// older than a second.
    func catalogue(readingThrough db: (any SQLExecutor)?) -> ServerCatalogue {
        let now = ContinuousClock.now
        let cached = declared.withLock { state in
            state.readAt.map { now - $0 < .seconds(1) } == true ? state.catalogue : nil
        }
        if let cached { return cached }
        return refreshCatalogue(db)
    }
    let database: any Database
    let identity: IdentityStore
    let clock: any WallClock
    let random: any RandomSource
    let logger: Logger
    /// The budgets, of which the test notification's is charged here.
    let rateLimits: RateLimitPolicy
    private let listeners = Mutex<[@Sendable () -> Void]>([])
    private let declared: Mutex<(catalogue: ServerCatalogue, readAt: ContinuousClock.Instant?)>

    /// Creates the center.
    package init(
        database: any Database, identity: IdentityStore, settings: PushSettings, clock: any WallClock,
        random: any RandomSource = SystemRandom(), rateLimits: RateLimitPolicy = RateLimitPolicy(), logger: Logger
    ) {
        self.rateLimits = rateLimits
        self.database = database
        self.identity = identity
        self.settings = settings
        self.declared = Mutex((ServerCatalogue(extra: settings.extraCodes), nil))
        self.clock = clock
        self.random = random
        self.logger = logger.withLabel("homeport.push")
    }

    /// Reads the products' codes again and returns the catalogue they make; the last one read
    /// when the database cannot be read.
    @discardableResult
    func refreshCatalogue(_ db: (any SQLExecutor)? = nil) -> ServerCatalogue {
        let readAt = ContinuousClock.now
        do {
            let products = try ProductCatalogueStore(db ?? database).codes()
            // The operator's codes come last: they win over a product's of the same name.
            let catalogue = ServerCatalogue(extra: products + settings.extraCodes)
            declared.withLock { $0 = (catalogue, readAt) }
            return catalogue
        } catch {
            logger.warning("the products' codes were not read", metadata: ["error": String(describing: error)])
            return declared.withLock { state in
                state.readAt = readAt
                return state.catalogue
            }
        }
    }

    /// What notifying came to.
    public struct Delivery: Sendable, Hashable {
        /// The notification's number in the account's log (its stream event id).
        public var seq: Int64
        /// Pushes queued (one per registered device; none when the thread is muted or pushes are off).
        public var queued: Int
        /// Whether the account muted the thread.
        public var muted: Bool
    }

    /// Why a notification was refused; nothing was written.
    public enum Refusal: Error, Equatable, CustomStringConvertible {
        /// The code is not in the catalogue.
        case unknownCode(String)
        /// The payload would be larger than APNs takes (4096 bytes).
        case payloadTooLarge(bytes: Int)
        /// No such account.
        case noAccount
        /// A thread id must be 1–128 characters of `A-Z a-z 0-9 : . _ -`.
        case invalidThread
        /// A title must be 1–200 characters, a body at most 2000, without control characters.
        case invalidText
        /// The installation's identity cannot be read, so `s` cannot be set.
        case identityUnavailable
        /// `data` breaks `NotificationData`'s rules (the sentence says which).
        case invalidData(String)
        /// ``PushCenter/notify(_:to:in:)`` was given a connection outside a transaction.
        case notInTransaction

        /// A sentence for operators and products.
        public var description: String {
            switch self {
            case .unknownCode(let code): "'\(code.prefix(80))' is not in this server's notification catalogue"
            case .payloadTooLarge(let bytes):
                "the push payload would be \(bytes) bytes; APNs takes at most \(PushPayload.maximumBytes)"
            case .noAccount: "no such account"
            case .invalidThread: "a thread id is 1–128 characters of letters, digits and ':._-'"
            case .invalidText:
                "a title is 1–200 characters and a body at most 2000 (line breaks allowed), without control, bidirectional or invisible formatting characters"
            case .identityUnavailable: "the installation identity cannot be read"
            case .invalidData(let problem): problem
            case .notInTransaction:
                "notify(_:to:in:) takes the connection of a transaction: database.transaction { db in … }"
            }
        }
    }

    /// Notifies one account in a transaction of its own: logs the notification (the in-app
    /// stream reads the log) and queues a push to each of its devices, unless the thread is
    /// muted. Refuses a payload over 4096 bytes rather than cutting it; a refusal writes nothing.
    @discardableResult
    public func notify(_ notification: ProductNotification, to accountID: Int64) throws -> Delivery {
        try notify(notification, to: accountID, within: nil)
    }

    /// Notifies one account inside the caller's transaction: the notification, its stream event
    /// and its pushes are written with whatever else the transaction writes, so that "the loan is
    /// ready" and "its owner is told" are one act — both or neither. The stream and the sender
    /// look once the transaction commits. A refusal throws before anything is written.
    @discardableResult
    public func notify(_ notification: ProductNotification, to accountID: Int64, in db: any DatabaseConnection)
        throws -> Delivery
    {
        guard db.commitHooks.inTransaction else { throw Refusal.notInTransaction }
        // Read through the caller's connection: a second one may have to wait for its locks.
        let checked = try check(notification, readingThrough: db)
        let delivery = try log(db, accountID: accountID, checked, now: clock.unixSeconds)
        db.afterCommit { self.wakeListeners() }
        return delivery
    }

    /// Notifies the account that signs in with `email`, in a transaction of its own.
    @discardableResult
    public func notify(_ notification: ProductNotification, email: String) throws -> Delivery {
        guard let email = Credentials.normalizedEmail(email),
            let account = try AccountStore(database).find(email: email)
        else { throw Refusal.noAccount }
        return try notify(notification, to: account.id)
    }

    /// What a caller does in the notification's own transaction: `before` may answer with a
    /// delivery made earlier (then nothing new is made), `after` records what was made. A crash
    /// leaves all of it or none.
    struct TransactionHook {
        var before: (any DatabaseConnection) throws -> Delivery?
        var after: (any DatabaseConnection, Delivery) throws -> Void
    }

    /// ``notify(_:to:)`` with `hook` run in the same transaction.
    func notify(_ notification: ProductNotification, to accountID: Int64, within hook: TransactionHook?) throws
        -> Delivery
    {
        let checked = try check(notification)
        let now = clock.unixSeconds
        let delivery: Delivery = try database.transaction { db in
            if let earlier = try hook?.before(db) { return earlier }
            let delivery = try log(db, accountID: accountID, checked, now: now)
            try hook?.after(db, delivery)
            return delivery
        }
        wakeListeners()
        return delivery
    }

    /// A notification that passed the catalogue and the rules, with its push payload.
    private struct Checked {
        var notification: ProductNotification
        var catalogue: ServerCatalogue
        var payload: String
    }

    /// Checks `notification` and makes its payload; throws ``Refusal`` for one that breaks a rule.
    /// With `db`, the catalogue and the identity are read through it.
    private func check(_ notification: ProductNotification, readingThrough db: (any SQLExecutor)? = nil) throws
        -> Checked
    {
        var notification = notification
        let (code, title, body, thread) = (
            notification.code, notification.title, notification.body, notification.thread
        )
        let catalogue = catalogue(readingThrough: db)
        guard catalogue.contains(code) else { throw Refusal.unknownCode(code) }
        guard (1...200).contains(title.count), DisplayText.isShown(title), body.map({ $0.count <= 2000 }) ?? true,
            body.map({ DisplayText.isShown($0, newlines: true) }) ?? true
        else { throw Refusal.invalidText }
        if let thread, !Self.isThread(thread) { throw Refusal.invalidThread }
        if let data = notification.data, let problem = NotificationData.problem(data) {
            throw Refusal.invalidData(problem)
        }
        if notification.data?.isEmpty == true { notification.data = nil }
        let server: InstanceID
        do {
            server = try db.map { try identity.instanceID(readingThrough: $0) } ?? identity.instanceID()
        } catch {
            throw Refusal.identityUnavailable
        }
        let payload = PushPayload(
            aps: .init(
                alert: .init(title: title, body: body),
                threadID: thread.map { NotificationThread.namespaced($0, server: server) }),
            appData: PushAppData(
                s: server, c: code, id: notification.objectID, mv: catalogue.version, d: notification.data))
        let encoded = try payload.encoded(appDataKey: settings.appDataKey) { try HTTPResponse.encode($0) }
        guard encoded.count <= PushPayload.maximumBytes else { throw Refusal.payloadTooLarge(bytes: encoded.count) }
        return Checked(
            notification: notification, catalogue: catalogue, payload: String(decoding: encoded, as: UTF8.self))
    }

    /// Wakes the stream and the sender of this process.
    private func wakeListeners() {
        listeners.withLock { $0 }.forEach { $0() }
    }

    /// Logs the notification and queues its pushes, in `db`'s transaction.
    private func log(_ db: any DatabaseConnection, accountID userID: Int64, _ checked: Checked, now: Int64) throws
        -> Delivery
    {
        let notification = checked.notification
        let (catalogue, text) = (checked.catalogue, checked.payload)
        let (code, title, body, thread) = (
            notification.code, notification.title, notification.body, notification.thread
        )
        let (objectID, collapseID, data) = (notification.objectID, notification.collapseID, notification.data)
        guard
            let record = try NotificationLog(db).append(
                userID: userID, code: code, title: title, body: body, thread: thread, objectID: objectID,
                catalogueVersion: catalogue.version, data: data, now: now)
        else { throw Refusal.noAccount }
        let muted = try thread.map { try MuteStore(db).isMuted($0, userID: userID) } ?? false
        guard !muted, settings.topic != nil || settings.webPushKey != nil || settings.fcmProject != nil else {
            return Delivery(seq: record.seq, queued: 0, muted: muted)
        }
        // The newest registrations only: an account never fans out past its cap, even over rows
        // written before the cap.
        let newest = try PushDeviceStore(db).devices(userID: userID, newest: settings.maxDevicesPerAccount)
        // A registration belongs to its session: one whose session expired (not ended, so not
        // yet pruned) gets nothing.
        let live = try SessionStore(db).live(keyHashes: newest.compactMap(\.sessionKeyHash), now: now)
        let devices = newest.filter { $0.sessionKeyHash.map(live.contains) ?? true }
        var queued = 0
        for device in devices {
            var item = OutboxItem(
                id: 0, apnsID: try random.uuid().uuidString.lowercased(), deviceToken: device.token,
                environment: device.environment, topic: device.topic, payload: text, collapseID: collapseID,
                priority: 10, expiration: now + 86400, attempts: 0, provider: device.provider, webPush: device.webPush,
                fcmToken: device.fcmToken)
            switch device.provider {
            case .apns:
                // APNs pushes only with a topic (pushes on); Web Push only while it is on.
                guard let topic = settings.topic else { continue }
                if item.topic.isEmpty { item.topic = topic }
            case .webpush:
                guard settings.webPushKey != nil, device.webPush != nil else { continue }
            case .fcm:
                guard settings.fcmProject != nil, device.fcmToken != nil else { continue }
            }
            try PushOutbox(db).enqueue(item, now: now)
            queued += 1
        }
        return Delivery(seq: record.seq, queued: queued, muted: false)
    }

    /// Calls `listener` after every notification this process makes (the sender and the stream
    /// wake at once instead of at their next look).
    func onNotify(_ listener: @escaping @Sendable () -> Void) {
        listeners.withLock { $0.append(listener) }
    }

    /// Charges a test notification to the account's budget: `nil` when allowed, else the seconds
    /// to wait.
    func chargeTest(account: Account) throws -> Int64? {
        do {
            try RateLimiter(database, policy: rateLimits).charge(
                .pushTestPerAccount, String(account.id), now: clock.unixSeconds)
            return nil
        } catch let refusal as RateLimiter.Refusal {
            return refusal.retryAfter
        }
    }

    // MARK: Registrations and mutes

    /// Registers the caller's device (an APNs token, or a Web Push subscription already named by
    /// ``WebPushSubscription/token(endpoint:)``), through its session (ending the session drops it),
    /// charged to the account's budget of push changes; past ``PushSettings/maxDevicesPerAccount``
    /// the account's least recently registered device goes.
    func register(_ registration: PushDeviceRegistration, session: Session, account: Account) throws {
        let now = clock.unixSeconds
        let target = registration.keys.flatMap { keys in
            registration.endpoint.map { WebPushTarget(endpoint: $0, p256dh: keys.p256dh, auth: keys.auth) }
        }
        try database.transaction { db in
            try RateLimiter(db, policy: rateLimits).charge(
                .pushChangesPerAccount, String(account.id), now: now)
            let devices = PushDeviceStore(db)
            if let held = try devices.holder(token: registration.token), held.userID != account.id {
                // A subscription moves to another account only with its own keys: its endpoint
                // alone (which a shared distributor may show others) does not take it from its holder.
                if let target, held.webPush.map({ ($0.p256dh, $0.auth) }) ?? ("", "") != (target.p256dh, target.auth) {
                    throw SubscriptionTaken()
                }
                // What waits for the device was made for its holder until now.
                try PushOutbox(db).deletePending(deviceTokens: [registration.token])
            }
            try devices.register(
                token: registration.token, environment: registration.environment, topic: settings.topic ?? "",
                userID: account.id, session: session.keyHash, now: now, provider: registration.provider,
                webPush: target, fcmToken: registration.provider == .fcm ? registration.endpoint : nil)
            let evicted = try devices.keepNewest(
                settings.maxDevicesPerAccount, keeping: registration.token, userID: account.id)
            try PushOutbox(db).deletePending(deviceTokens: evicted)
        }
    }

    /// Removes one of the account's device tokens, and the pushes waiting for it; removing an
    /// unknown one changes nothing.
    func unregister(token: String, account: Account) throws {
        try database.transaction { db in
            if try PushDeviceStore(db).remove(token: token, userID: account.id) {
                try PushOutbox(db).deletePending(deviceTokens: [token])
            }
        }
    }

    /// The account's devices.
    package func devices(accountID: Int64) throws -> [PushDevice] {
        try PushDeviceStore(database).devices(userID: accountID)
    }

    /// Every registered device, with its account's address.
    package func allDevices() throws -> [(device: PushDevice, email: String)] {
        try PushDeviceStore(database).all()
    }

    /// Mutes a thread, charged to the account's budget of push changes; refused with
    /// ``MuteRefusal`` past ``PushSettings/maxMutesPerAccount`` (muting a thread muted already
    /// changes nothing and costs nothing).
    func mute(_ thread: String, account: Account) throws {
        let now = clock.unixSeconds
        try database.transaction { db in
            let mutes = MuteStore(db)
            guard try !mutes.isMuted(thread, userID: account.id) else { return }
            guard try mutes.count(userID: account.id) < settings.maxMutesPerAccount else {
                throw MuteRefusal(limit: settings.maxMutesPerAccount)
            }
            try RateLimiter(db, policy: rateLimits).charge(
                .pushChangesPerAccount, String(account.id), now: now)
            try mutes.mute(thread, userID: account.id, now: now)
        }
    }

    /// Another account holds the Web Push subscription with other keys.
    struct SubscriptionTaken: Error {}

    /// The account holds as many mutes as it may.
    struct MuteRefusal: Error {
        var limit: Int
    }

    func unmute(_ thread: String, account: Account) throws {
        try MuteStore(database).unmute(thread, userID: account.id)
    }

    func mutedThreads(account: Account) throws -> [String] {
        try MuteStore(database).threads(userID: account.id)
    }

    /// A device token: hex, an even count of 16–200 digits; returned lowercase.
    package static func normalizedDeviceToken(_ text: String) -> String? {
        let lower = text.lowercased()
        return isNormalizedDeviceToken(lower) ? lower : nil
    }

    /// Whether `text` is a device token as ``normalizedDeviceToken(_:)`` returns it, told without
    /// making a copy (a gateway asks for each push of a batch).
    package static func isNormalizedDeviceToken(_ text: String) -> Bool {
        guard (16...200).contains(text.utf8.count), text.utf8.count % 2 == 0 else { return false }
        // From the string's own bytes where it has them (a token read from a request does).
        return text.utf8.withContiguousStorageIfAvailable(isLowercaseHex) ?? isLowercaseHex(Array(text.utf8))
    }

    private static func isLowercaseHex(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.allSatisfy(HexDigit.lowercase)
    }

    /// A thread id: 1–128 characters of `A-Z a-z 0-9 : . _ -`, not `.` or `..`.
    static func isThread(_ text: String) -> Bool {
        // `.` and `..` are dot segments: clients remove them from a path before sending it, so such
        // a thread could be muted (by a raw request) but never unmuted.
        (1...128).contains(text.utf8.count) && text != "." && text != ".."
            && text.utf8.allSatisfy {
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: ":")
                    || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
            }
    }
}
