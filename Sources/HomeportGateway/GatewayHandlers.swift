import Foundation
import HomeportAPNs
import HomeportCrypto
import HomeportHTTP
import HomeportLogging
import HomeportServer
import HomeportStorage
import HomeportWire

/// The gateway's two routes. Each request names its server by the credential it carries, looked
/// up (and, for pushes, charged to the server's rate) in one statement, so a revocation holds at
/// once on every replica.
struct GatewayHandlers: Sendable {
    let database: any Database
    let deliveries: PushDispatch
    let configuration: PushGatewayConfiguration
    let clock: any WallClock
    let logger: Logger
    let counters: GatewayCounters
    let inFlight: GatewayInFlight
    /// Each server's device changes in flight: one at a time (a server forwards them in order,
    /// from one replica at a time), so a server never holds the threads with them either.
    let changesInFlight: GatewayInFlight
    /// The live credentials' digests, for the head check.
    let credentials: GatewayCredentials
    /// The devices servers registered, as this process knows them.
    let deviceCache: GatewayDeviceCache

    /// `POST /gateway/v1/pushes`: checks each push, sends those that pass to their services
    /// (APNs in one batch; FCM and Web Push side by side, each many at once), and answers each push's outcome
    /// in order.
    func pushes(_ request: HTTPRequest) throws -> HTTPResponse {
        // Who it is, before the body is parsed: a stranger costs one indexed lookup.
        let credential = try Self.credential(request)
        guard let known = try GatewayServerStore(database).live(credentialHash: credential) else { throw Self.refused }
        guard inFlight.enter(known.id) else { throw Self.busy }
        defer { inFlight.leave(known.id) }
        // A batch as servers write it is read without JSONDecoder (several µs a push); anything
        // else is read, and refused, by the API's one decoder.
        let batch =
            try GatewayPushBatch(reading: Array(request.body)) ?? ProductAPI.decode(GatewayPushBatch.self, request.body)
        guard (1...GatewayPushBatch.maximumCount).contains(batch.pushes.count) else {
            throw HTTPError.invalidField("pushes", "Send 1 to \(GatewayPushBatch.maximumCount) pushes.")
        }
        let now = clock.unixSeconds
        // Charged, and looked up again: a revocation since the first lookup holds.
        guard
            let (server, allowed) = try GatewayServerStore(database).authenticate(
                credentialHash: credential, charging: batch.pushes.count, perMinute: configuration.pushesPerMinute,
                now: now)
        else { throw Self.refused }
        // Every token and identifier is checked before it goes near the database or Apple.
        var outcomes = batch.pushes.map(Self.malformed)
        let registered = try devices(
            of: server, for: batch.pushes, at: batch.pushes.indices.filter { outcomes[$0] == nil })
        var sending: [Int] = []
        let carried = deliveries.providers
        // One notification fans out as the same payload to each device: it is read once a batch.
        // By its bytes, not by `==`: two spellings Unicode counts as one (a precomposed `Å` and
        // U+212B) differ in length and in what a parser makes of them, and each is sent as written.
        var checked: [[UInt8]: GatewayPushOutcome?] = [:]
        // The one before, first: read from the batch, a repeated payload is the same string, and
        // telling so costs nothing (hashing it costs a read of it).
        var last: (payload: String, outcome: GatewayPushOutcome?)?
        func refusal(of payload: String) -> GatewayPushOutcome? {
            if let last, JSONText.sameBytes(last.payload, payload) { return last.outcome }
            let bytes = Array(payload.utf8)
            let outcome = checked[bytes] ?? check(payload, from: server)
            checked[bytes] = .some(outcome)
            last = (payload, outcome)
            return outcome
        }
        // By index, each field read where it is: a push taken out whole is a copy (a retain and a
        // release of each of its strings).
        for index in batch.pushes.indices where outcomes[index] == nil {
            let provider = batch.pushes[index].provider
            if index >= allowed {
                outcomes[index] = GatewayPushOutcome(status: 429, reason: PushGatewayReason.tooManyRequests)
            } else if !carried.contains(provider) {
                outcomes[index] = GatewayPushOutcome(status: 400, reason: PushGatewayReason.providerUnavailable)
            } else if provider == .apns, batch.pushes[index].topic != configuration.topic {
                outcomes[index] = GatewayPushOutcome(status: 400, reason: PushGatewayReason.topicDisallowed)
            } else if let refusal = refusal(of: batch.pushes[index].payload) {
                outcomes[index] = refusal
            } else if registered[index]?.provider != provider {
                outcomes[index] = GatewayPushOutcome(status: 403, reason: PushGatewayReason.unknownDevice)
            } else {
                sending.append(index)
            }
        }
        let answers = try deliveries.deliver(
            sending.map { index in
                // An APNs device's record has nothing more for the item: it is not copied out.
                let device = batch.pushes[index].provider == .apns ? nil : registered[index]
                // Each field copied once, into the item; the push itself is not (as above).
                return OutboxItem(
                    apnsID: batch.pushes[index].apnsId, deviceToken: batch.pushes[index].deviceToken,
                    environment: batch.pushes[index].environment, topic: batch.pushes[index].topic,
                    payload: batch.pushes[index].payload,
                    collapseID: batch.pushes[index].collapseId.map { Self.collapseID($0, of: server) },
                    priority: batch.pushes[index].priority, expiration: batch.pushes[index].expiration,
                    provider: batch.pushes[index].provider, webPush: device.flatMap(Self.webPushTarget),
                    fcmToken: batch.pushes[index].provider == .fcm ? device?.endpoint : nil)
            })
        // The service's word on a device ends this server's registration of it (only this
        // one's: another server learns it from its own push).
        var gone: [(token: String, since: Int64?)] = []
        for (index, answer) in zip(sending, answers) {
            outcomes[index] = Self.outcome(answer, provider: batch.pushes[index].provider)
            switch answer.outcome {
            case .unregistered(let since): gone.append((batch.pushes[index].deviceToken, since ?? now))
            case .badDevice: gone.append((batch.pushes[index].deviceToken, nil))
            default: break
            }
        }
        if !gone.isEmpty {
            // A server revoked meanwhile has no devices left to remove.
            let marks = try database.transaction { db in
                let devices = GatewayDeviceStore(db)
                return try devices.change(server: server.id) {
                    for (token, since) in gone {
                        try devices.remove(server: server.id, token: token, unlessUpdatedAfter: since)
                    }
                }
            }
            if let marks {
                deviceCache.apply(
                    server: server.id, from: marks.before, to: marks.after, registered: [], removed: gone.map(\.token))
            }
        }
        let results = outcomes.map { $0 ?? GatewayPushOutcome(status: 0) }
        let delivered = results.filter { $0.status == 200 }.count
        let failed = results.filter { $0.status == 0 }.count
        let refused = results.count - delivered - failed
        try GatewayServerStore(database).count(
            server: server.id, delivered: delivered, refused: refused, failed: failed, now: clock.unixSeconds)
        counters.add(server: server.name, delivered: delivered, refused: refused, failed: failed)
        let reasons = Dictionary(grouping: results.compactMap(\.reason), by: { $0 }).mapValues(\.count)
        logger.info(
            "pushes forwarded",
            metadata: [
                "server": server.name, "delivered": String(delivered), "refused": String(refused),
                "failed": String(failed),
                "reasons": reasons.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ","),
            ])
        // The bytes JSONWriter writes, without its generic path (a thousand outcomes a batch).
        return HTTPResponse.json(bytes: Data(GatewayPushResults(results: results).json()))
    }

    /// The device each push at `indices` names, where `server` registered it (`nil` elsewhere):
    /// from this process's cache when it holds it at the server's mark as the request read it,
    /// the rest from the database (and learnt).
    func devices(of server: GatewayServer, for pushes: [GatewayPush], at indices: [Int]) throws -> [GatewayDevice?] {
        var found = [GatewayDevice?](repeating: nil, count: pushes.count)
        var cached = deviceCache.lookup(
            server: server.id, version: server.devicesVersion, indices.map { pushes[$0].deviceToken })
        var missing: [Int] = []
        // Each device moved from the cache's answer, not copied (a retain and a release of each
        // of its strings).
        for (position, index) in indices.enumerated() {
            if let device = cached[position].take() { found[index] = device } else { missing.append(index) }
        }
        guard !missing.isEmpty else { return found }
        let store = GatewayDeviceStore(database)
        let read = try store.registered(server: server.id, among: missing.map { pushes[$0].deviceToken })
        // Learnt only when no change landed since the request's authentication: a device read
        // after one is not what the mark it read stands for.
        if !read.isEmpty, try store.version(server: server.id) == server.devicesVersion {
            deviceCache.learn(server: server.id, at: server.devicesVersion, Array(read.values))
        }
        for index in missing { found[index] = read[pushes[index].deviceToken] }
        return found
    }

    /// Where a registered Web Push subscription's pushes go, and its keys.
    static func webPushTarget(_ device: GatewayDevice) -> WebPushTarget? {
        guard device.provider == .webpush, let endpoint = device.endpoint, let p256dh = device.p256dh,
            let auth = device.auth
        else { return nil }
        return WebPushTarget(endpoint: endpoint, p256dh: p256dh, auth: auth)
    }

    /// A service's answer as the server reads it: Apple's reason, or (FCM, Web Push) the
    /// service's own words the delivery noted, which never name the device (a transport failure's
    /// could name the endpoint, so none is passed on).
    static func outcome(_ answer: APNsResponse, provider: PushProvider) -> GatewayPushOutcome {
        var reason = answer.reason?.rawValue
        if reason == nil, provider != .apns, answer.status != 0 {
            reason = answer.transportError.map { String($0.prefix(64)) }
        }
        return GatewayPushOutcome(
            status: answer.status, reason: reason, timestamp: answer.timestamp, retryAfter: answer.retryAfter)
    }

    /// Whether `token` names a device of `provider` as servers and the gateway name them: an
    /// APNs token in lowercase hex, or `fcm:`/`webpush:` and 64 hex digits.
    static func isDeviceName(_ token: String, of provider: PushProvider) -> Bool {
        switch provider {
        case .apns: PushCenter.isNormalizedDeviceToken(token)
        case .fcm: FCMRegistration.isName(token)
        case .webpush: WebPushSubscription.isToken(token)
        }
    }

    /// What is wrong with a push's device token or identifiers, as Apple would say it (400, its
    /// own reason), or `nil` when nothing is: a NUL in a token never reaches the database.
    static func malformed(_ push: GatewayPush) -> GatewayPushOutcome? {
        let reason: String? =
            if !isDeviceName(push.deviceToken, of: push.provider) {
                PushGatewayReason.badDeviceToken
            } else if !UUIDText.isCanonical(push.apnsId) {
                PushGatewayReason.badMessageID
            } else if let collapse = push.collapseId,
                !(1...64).contains(collapse.utf8.count) || !DisplayText.isShown(collapse)
            {
                PushGatewayReason.badCollapseID
            } else if APNsPriority(rawValue: push.priority) == nil {
                PushGatewayReason.badPriority
            } else if push.expiration < 0 {
                PushGatewayReason.badExpirationDate
            } else {
                nil
            }
        return reason.map { GatewayPushOutcome(status: 400, reason: $0) }
    }

    /// Why the payload may not go out as `server`'s, or `nil` when it may: at most 4096 bytes
    /// (413, as Apple answers a larger one), and one JSON
    /// object, no key twice (in any spelling a parser could merge), with nothing at its top but
    /// `aps` and the app-data block (a key planted beside them could speak for another server
    /// where the app reads it), whose `s` is the server's installation id, and whose
    /// `thread-id`, if any, is under it.
    func check(_ payload: String, from server: GatewayServer) -> GatewayPushOutcome? {
        let bytes = Array(payload.utf8)
        guard bytes.count <= PushPayload.maximumBytes else {
            return GatewayPushOutcome(status: 413, reason: PushGatewayReason.payloadTooLarge)
        }
        guard StrictJSON.isValidWithoutRepeatedKeys(bytes),
            let object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any],
            object.keys.allSatisfy({ $0 == "aps" || $0 == configuration.appDataKey }),
            let appData = object[configuration.appDataKey] as? [String: Any]
        else { return GatewayPushOutcome(status: 400, reason: PushGatewayReason.badPayload) }
        let instance = server.instanceID.lowercased()
        guard (appData["s"] as? String)?.lowercased() == instance else {
            return GatewayPushOutcome(status: 403, reason: PushGatewayReason.senderMismatch)
        }
        if let aps = object["aps"] as? [String: Any], let thread = aps["thread-id"] {
            guard let thread = thread as? String, thread.lowercased().hasPrefix(instance + ":") else {
                return GatewayPushOutcome(status: 403, reason: PushGatewayReason.senderMismatch)
            }
        }
        return nil
    }

    /// The `apns-collapse-id` sent to Apple: the server's own, namespaced by its installation (a
    /// digest, 64 characters, Apple's limit), so one server's notification never replaces
    /// another's on a phone both reach.
    static func collapseID(_ id: String, of server: GatewayServer) -> String {
        Digest.sha256Hex(server.instanceID.lowercased() + "\u{0}" + id)
    }

    /// `POST /gateway/v1/devices`: records the server's registrations and removals; a server
    /// holds at most ``PushGatewayConfiguration/devicesPerServer`` devices. Removals come first;
    /// a registration of a new device past the cap is refused by its field, the rest recorded:
    /// a server that reached it keeps its removals and its pushes to the devices it holds.
    func devices(_ request: HTTPRequest) throws -> HTTPResponse {
        let credential = try Self.credential(request)
        guard let known = try GatewayServerStore(database).live(credentialHash: credential) else { throw Self.refused }
        guard changesInFlight.enter(known.id) else { throw Self.changesBusy }
        defer { changesInFlight.leave(known.id) }
        let changes = try ProductAPI.decode(GatewayDeviceChanges.self, request.body)
        guard changes.register.count + changes.remove.count <= GatewayDeviceChanges.maximumCount else {
            throw HTTPError.invalidField("register", "Send at most \(GatewayDeviceChanges.maximumCount) changes.")
        }
        // Each change stands alone: one the gateway refuses is answered by its field, and the
        // others are recorded (a server's queue of changes never stops on one). A device of a
        // service the gateway does not carry is not kept: its pushes are refused by kind.
        var registering: [(index: Int, device: GatewayDevice)] = []
        var refused: [GatewayDeviceResults.Refusal] = []
        var ignored = 0
        let carried = deliveries.providers
        for (index, registration) in changes.register.enumerated() {
            guard carried.contains(registration.provider) else {
                ignored += 1
                continue
            }
            do {
                registering.append((index, try Self.device(registration, field: "register[\(index)]")))
            } catch let error as HTTPError {
                refused.append(.init(field: error.field ?? "register[\(index)]", message: error.message))
            }
        }
        var removing: [String] = []
        for (index, token) in changes.remove.enumerated() {
            if PushProvider.allCases.contains(where: { Self.isDeviceName(token, of: $0) }) {
                removing.append(token)
            } else {
                refused.append(
                    .init(
                        field: "remove[\(index)]",
                        message:
                            "A device is named by its APNs token (16–200 lowercase hex digits) or fcm:/webpush: and 64 hex digits."
                    ))
            }
        }
        let now = clock.unixSeconds
        let cap = configuration.devicesPerServer
        let (server, change) = try database.transaction { db in
            guard let server = try GatewayServerStore(db).live(credentialHash: credential) else { throw Self.refused }
            let devices = GatewayDeviceStore(db)
            let change = try devices.change(server: server.id) {
                for token in removing { try devices.remove(server: server.id, token: token) }
                var held = registering.isEmpty ? 0 : try devices.count(server: server.id)
                // Within the cap even if every one is new, none is looked up first.
                let mayReachCap = held + Int64(registering.count) > Int64(cap)
                var overCap: [Int] = []
                for (index, device) in registering {
                    if mayReachCap, try !devices.holds(server: server.id, token: device.token) {
                        guard held < cap else {
                            overCap.append(index)
                            continue
                        }
                        held += 1
                    }
                    try devices.register(server: server.id, device, now: now)
                }
                return overCap
            }
            guard let change else { throw Self.refused }
            return (server, change)
        }
        let overCap = change.result
        let refusedIndices = Set(overCap)
        deviceCache.apply(
            server: server.id, from: change.before, to: change.after,
            registered: registering.filter { !refusedIndices.contains($0.index) }.map(\.device), removed: removing)
        refused += overCap.map {
            .init(field: "register[\($0)]", message: "This server holds \(cap) devices at most; remove some first.")
        }
        logger.info(
            "devices changed",
            metadata: [
                "server": server.name, "registered": String(registering.count - overCap.count),
                "removed": String(removing.count),
                "ignored": String(ignored), "refused": refused.map(\.field).joined(separator: ","),
            ])
        return try HTTPResponse.json(
            GatewayDeviceResults(
                registered: registering.count - overCap.count, removed: removing.count, ignored: ignored,
                refused: refused))
    }

    /// `GET /gateway/v1/services`: what this gateway carries, for an enrolled server to check
    /// its flags against.
    func services(_ request: HTTPRequest) throws -> HTTPResponse {
        guard try GatewayServerStore(database).live(credentialHash: try Self.credential(request)) != nil else {
            throw Self.refused
        }
        return try HTTPResponse.json(
            GatewayServices(
                providers: PushProvider.allCases.filter(deliveries.providers.contains),
                webPushKey: try configuration.webPush?.publicKey(), fcmProject: configuration.fcm?.projectID))
    }

    /// The device a registration names, as the gateway keeps it, or the 400 that names the field
    /// (under `field`) that is wrong. An FCM token and a Web Push subscription are named as the
    /// server names them. A subscription on a private network is kept: whether the gateway posts
    /// there is its own flag's word at each push (`--webpush-allow-private-endpoints`).
    static func device(_ registration: PushDeviceRegistration, field: String) throws -> GatewayDevice {
        switch registration.provider {
        case .apns:
            guard PushCenter.normalizedDeviceToken(registration.token) == registration.token else {
                throw HTTPError.invalidField(field + ".token", "A device token is 16–200 lowercase hex digits.")
            }
            return GatewayDevice(token: registration.token, provider: .apns, environment: registration.environment)
        case .fcm, .webpush:
            // Checked and named as the server checks and names them.
            let kept: PushDeviceRegistration
            do {
                kept =
                    registration.provider == .fcm
                    ? try FCMRegistration.registration(token: registration.token)
                    : try WebPushSubscription.registration(
                        endpoint: registration.endpoint, registration.keys?.p256dh, registration.keys?.auth,
                        allowPrivate: true)
            } catch let error as HTTPError {
                throw HTTPError.invalidField(field + "." + (error.field ?? "endpoint"), error.message)
            }
            return GatewayDevice(
                token: kept.token, provider: kept.provider, environment: .production, endpoint: kept.endpoint,
                p256dh: kept.keys?.p256dh, auth: kept.keys?.auth)
        }
    }

    /// The answer to a request's head, before a byte of its body is read: 401 unless it carries a
    /// live server's credential (``GatewayCredentials``: no database round trip per stranger,
    /// and no 8 MiB read). The handler checks again, with the body, in the database: a
    /// revocation holds there at once.
    func checkHead(_ request: HTTPRequest) -> HTTPError? {
        guard [PushGatewayPath.pushes, PushGatewayPath.devices, PushGatewayPath.services].contains(request.path)
        else { return nil }
        do {
            return credentials.isLive(try Self.credential(request)) ? nil : Self.refused
        } catch let error as HTTPError {
            return error
        } catch {
            return nil
        }
    }

    /// The digest of the credential the request carries once in `Authorization: Bearer`; 401
    /// otherwise.
    static func credential(_ request: HTTPRequest) throws -> String {
        let values = request.headers.values("Authorization")
        guard values.count == 1, let value = values.first, value.lowercased().hasPrefix("bearer ") else {
            throw refused
        }
        let credential = value.dropFirst(7).trimmingCharacters(in: .whitespaces)
        guard !credential.isEmpty else { throw refused }
        return SecretToken.storedForm(of: credential)
    }

    static let busy = HTTPError(
        status: 429, code: APIErrorCode.tooManyRequests,
        message: "This server has as many batches in flight as it may; send again in a moment.",
        headers: ["Retry-After": "1"])

    static let changesBusy = HTTPError(
        status: 429, code: APIErrorCode.tooManyRequests,
        message: "This server's last device changes are still being recorded; send again in a moment.",
        headers: ["Retry-After": "1"])

    static let refused = HTTPError(
        status: 401, code: APIErrorCode.notAuthenticated,
        message: "Send this server's working gateway credential, once: Authorization: Bearer KEY.",
        headers: ["WWW-Authenticate": "Bearer"])
}
