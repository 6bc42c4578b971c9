import Foundation
import HomeportHTTP
import HomeportWire

extension Router where Context == RequestContext {
    /// Adds the push and notification routes under the API prefix (signed-in, header token only,
    /// like every route there): device registration, the catalogue, mutes, a test push and the
    /// in-app stream.
    mutating func addPush(_ push: PushCenter, hub: StreamHub) {
        let routes = PushRoutes(push: push, hub: hub)
        post(HomeportPath.pushDevices) { try routes.register($0, $1.caller) }
        delete(HomeportPath.pushDevices + "/:token") { try routes.unregister($0, $1.caller) }
        // A device token in the path is written to the access log as `…/devices/***`.
        logsSecrets(under: HomeportPath.pushDevices)
        get(HomeportPath.pushWebPushKey) { _, context in
            _ = try routes.signedInCaller(context.caller)
            return try routes.webPushKey()
        }
        post(HomeportPath.pushTest) { try routes.test($0, $1.caller) }
        get(HomeportPath.notificationsCatalogue) { request, _ in routes.catalogue(request) }
        get(HomeportPath.notificationsMutes) { try routes.mutes($1.caller) }
        put(HomeportPath.notificationsMutes + "/:thread") { try routes.mute($0, $1.caller, muted: true) }
        delete(HomeportPath.notificationsMutes + "/:thread") { try routes.mute($0, $1.caller, muted: false) }
        get(HomeportPath.notificationsStream) { try routes.stream($0, $1.caller) }
    }
}

/// The handlers of the push routes. The group's middleware has already refused anyone not signed in.
struct PushRoutes: Sendable {
    let push: PushCenter
    let hub: StreamHub

    /// The caller, when signed in (every route here answers only the signed-in).
    func signedInCaller(_ caller: Caller) throws -> Account {
        try signedIn(caller).1
    }

    private func signedIn(_ caller: Caller) throws -> (Session, Account) {
        guard case .signedIn(let session, let account) = caller else { throw RequireSignedIn.refusal }
        return (session, account)
    }

    func register(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        let (session, account) = try signedIn(caller)
        struct Body: Decodable {
            var provider: String?
            var token: String?
            var environment: String?
            var endpoint: String?
            var keys: Keys?
            struct Keys: Decodable {
                var p256dh: String?
                var auth: String?
            }
        }
        guard StrictJSON.isValidWithoutRepeatedKeys(Array(request.body)),
            let body = try? JSONDecoder().decode(Body.self, from: request.body)
        else {
            throw HTTPError.invalidField(
                "token",
                "Send {\"token\": \"<hex>\", \"environment\": \"sandbox\"|\"production\"}, or {\"provider\": \"webpush\", "
                    + "\"endpoint\": \"https://…\", \"keys\": {\"p256dh\": \"…\", \"auth\": \"…\"}}.")
        }
        // Left out, the provider is apns (as before there were others); given, it is a name.
        let given = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any]
        if given?["provider"] is NSNull {
            throw HTTPError.invalidField("provider", "The provider is apns, fcm or webpush.")
        }
        let registration: PushDeviceRegistration
        switch body.provider ?? PushProvider.apns.rawValue {
        case PushProvider.apns.rawValue:
            guard let token = body.token.flatMap(PushCenter.normalizedDeviceToken) else {
                throw HTTPError.invalidField("token", "A device token is hex: an even number of 16 to 200 digits.")
            }
            guard let environment = body.environment.flatMap(PushEnvironment.init(rawValue:)) else {
                throw HTTPError.invalidField("environment", "The environment is sandbox or production.")
            }
            registration = PushDeviceRegistration(token: token, environment: environment)
        case PushProvider.fcm.rawValue:
            registration = try FCMRegistration.registration(token: body.token)
            guard push.settings.fcmProject != nil else {
                throw HTTPError.invalidField("provider", "This server does not send to FCM.")
            }
        case PushProvider.webpush.rawValue:
            registration = try WebPushSubscription.registration(
                endpoint: body.endpoint, body.keys?.p256dh, body.keys?.auth,
                allowPrivate: push.settings.takesPrivateWebPushEndpoints)
            guard push.settings.webPushKey != nil else {
                throw HTTPError.invalidField("provider", "This server does not send Web Push.")
            }
        default:
            throw HTTPError.invalidField("provider", "The provider is apns, fcm or webpush.")
        }
        try Self.register(registration, push: push, session: session, account: account)
        switch registration.provider {
        case .apns: return try .json(registration)
        case .webpush: return try .json(PushDeviceRegistration(webPushToken: registration.token))
        case .fcm: return try .json(PushDeviceRegistration(fcmToken: registration.token))
        }
    }

    /// `GET /api/v1/push/webpush-key`: the VAPID public key to subscribe with; 404 when the
    /// server does not send Web Push.
    func webPushKey() throws -> HTTPResponse {
        guard let key = push.settings.webPushKey else {
            throw HTTPError(status: 404, code: APIErrorCode.notFound, message: "This server does not send Web Push.")
        }
        return try .json(WebPushServerKey(publicKey: key))
    }

    /// Registers `registration` for the account through `session`; its refusals as answers: 429
    /// for a spent budget, 409 for a subscription another account holds with other keys.
    static func register(_ registration: PushDeviceRegistration, push: PushCenter, session: Session, account: Account)
        throws
    {
        do {
            try push.register(registration, session: session, account: account)
        } catch let refusal as RateLimiter.Refusal {
            throw tooManyChanges(refusal)
        } catch is PushCenter.SubscriptionTaken {
            throw HTTPError(
                status: 409, code: APIErrorCode.subscriptionTaken,
                message: "Another account holds this subscription with other keys; subscribe again for this one.")
        }
    }

    /// 429 `rate_limited`: the account's budget of registrations and mutes is spent.
    static func tooManyChanges(_ refusal: RateLimiter.Refusal) -> HTTPError {
        HTTPError(
            status: 429, code: APIErrorCode.rateLimited,
            message: "Too many device registrations and mutes; try again later.",
            headers: ["Retry-After": String(refusal.retryAfter)])
    }

    func unregister(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        let (_, account) = try signedIn(caller)
        let given = request.pathParameters["token"] ?? ""
        let named = WebPushSubscription.isToken(given) || FCMRegistration.isName(given)
        guard let token = PushCenter.normalizedDeviceToken(given) ?? (named ? given : nil) else {
            throw HTTPError.invalidField(
                "token",
                "A device token is hex: an even number of 16 to 200 digits; a Web Push or FCM one is the name the "
                    + "registration answered (webpush:… or fcm:…).")
        }
        try push.unregister(token: token, account: account)
        return HTTPResponse(status: 204)
    }

    func test(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        let (_, account) = try signedIn(caller)
        if let retryAfter = try push.chargeTest(account: account) {
            throw HTTPError(
                status: 429, code: APIErrorCode.rateLimited, message: "Too many test notifications; try again later.",
                headers: ["Retry-After": String(retryAfter)])
        }
        let delivery = try push.notify(
            ProductNotification(
                code: ServerCatalogue.testCode, title: "Test notification",
                body: "Notifications from this server reach this device."), to: account.id)
        var response = try HTTPResponse.json(["queued": delivery.queued])
        response.status = 202
        return response
    }

    func catalogue(_ request: HTTPRequest) -> HTTPResponse {
        let catalogue = push.catalogue
        let etag = "\"\(catalogue.version)\""
        let asked = request.headers.values("If-None-Match").flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        if asked.contains(where: { $0 == etag || $0 == "W/" + etag || $0 == "*" || $0 == catalogue.version }) {
            return HTTPResponse(status: 304, headers: ["ETag": etag])
        }
        var response = (try? HTTPResponse.json(catalogue.answer)) ?? HTTPError.internalError.response
        response.headers.set("ETag", etag)
        return response
    }

    func mutes(_ caller: Caller) throws -> HTTPResponse {
        let (_, account) = try signedIn(caller)
        return try .json(MutedThreads(threads: try push.mutedThreads(account: account)))
    }

    func mute(_ request: HTTPRequest, _ caller: Caller, muted: Bool) throws -> HTTPResponse {
        let (_, account) = try signedIn(caller)
        guard let thread = request.pathParameters["thread"], PushCenter.isThread(thread) else {
            throw HTTPError.invalidField("thread", "A thread id is 1–128 characters of letters, digits and ':._-'.")
        }
        do {
            if muted { try push.mute(thread, account: account) } else { try push.unmute(thread, account: account) }
        } catch let refusal as RateLimiter.Refusal {
            throw Self.tooManyChanges(refusal)
        } catch let refusal as PushCenter.MuteRefusal {
            throw HTTPError(
                status: 409, code: APIErrorCode.tooManyMutes,
                message: "This account has \(refusal.limit) muted threads; unmute one first.")
        }
        return HTTPResponse(status: 204)
    }

    func stream(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        let (session, account) = try signedIn(caller)
        var resume: Int64?
        if let text = request.headers["Last-Event-ID"] {
            guard let value = Int64(text.trimmingCharacters(in: .whitespaces)), value >= 0 else {
                throw HTTPError.invalidField("Last-Event-ID", "Last-Event-ID is an event id this stream sent.")
            }
            resume = value
        }
        let stream = try hub.open(
            session: session, account: account, client: request.remoteAddress, lastEventID: resume)
        return .streaming(
            stream,
            headers: [
                "Content-Type": "text/event-stream; charset=utf-8", "X-Accel-Buffering": "no",
                "X-Content-Type-Options": "nosniff",
            ])
    }
}
