import Foundation
import HomeportAPNs
import HomeportCurl
import HomeportHTTP
import HomeportLogging
import HomeportStorage
import HomeportWire

/// Sends pushes to Android apps through Firebase Cloud Messaging (HTTP v1,
/// `POST /v1/projects/PROJECT/messages:send`), a batch at once (``CurlMulti``: streams of one
/// HTTP/2 connection to FCM): a data message with the APNs
/// payload's fields (`s`, `c`, `id`, `mv`, `d`, and `thread`, all strings) and a notification
/// block with the title and body. FCM's answers become the sender's outcomes: 200 delivered;
/// `UNREGISTERED` (FCM's own 404) removes the registration (unless registered again since); 401
/// gets a new access token once; 429, 500 and 503 are tried again, not before `Retry-After`;
/// `SENDER_ID_MISMATCH`, `INVALID_ARGUMENT`, a 404 that is not FCM's word (a proxy's page, a
/// wrong `--fcm-base-url`) and the rest are given up, the device kept: a token of another
/// Firebase project says, nearly always, that the service account here is the wrong one, and
/// taking it for the device's fault would remove every Android device at the first push.
package final class FCMDelivery: Sendable {
    private let settings: FCMSettings
    private let token: FCMAccessToken
    private let clock: any WallClock
    /// How long a batch may start new requests.
    private let budget: Duration
    /// The requests in flight: many at once, as streams of one HTTP/2 connection to FCM.
    private let multi: CurlMulti

    /// `budget`: how long a batch may start new requests.
    package init(
        settings: FCMSettings, database: any Database, clock: any WallClock, budget: Duration = .seconds(40)
    ) throws {
        self.settings = settings
        token = try FCMAccessToken(settings: settings, database: database, clock: clock)
        self.clock = clock
        self.budget = budget
        multi = try CurlMulti(timeoutSeconds: settings.timeoutSeconds, reach: .anywhere)
    }

    /// Sends each item (all FCM ones) and returns the outcomes, in order. Items FCM refused for
    /// the access token go again once with a new one.
    package func deliver(_ items: [OutboxItem]) -> [APNsResponse] {
        let bearer: String
        do {
            bearer = try token.current()
        } catch {
            return items.map { _ in APNsResponse(status: 0, transportError: String(describing: error)) }
        }
        let now = clock.unixSeconds
        let deadline = ContinuousClock.now + budget
        let bodies = Self.bodies(items, now: now)
        var responses = send(items, bodies, bearer: bearer, now: now, deadline: deadline)
        let refused = responses.indices.filter { responses[$0].outcome == .providerTokenRejected }
        guard !refused.isEmpty, let fresh = try? token.refresh(after: bearer) else { return responses }
        let again = send(
            refused.map { items[$0] }, refused.map { bodies[$0] }, bearer: fresh, now: now, deadline: deadline)
        for (index, response) in zip(refused, again) { responses[index] = response }
        return responses
    }

    /// Each item's request body, in order (`nil` for one that cannot be made a message).
    /// One notification goes to many devices: its message is made once a batch, and each
    /// device's is its token put in front.
    static func bodies(_ items: [OutboxItem], now: Int64) -> [Data?] {
        struct Shape: Hashable {
            var payload: String
            var priority: Int
            var expiration: Int64
            var collapseID: String?
        }
        var made: [Shape: [UInt8]?] = [:]
        var bodies: [Data?] = []
        for item in items {
            guard let token = item.fcmToken, FCMRegistration.isToken(token) else {
                bodies.append(nil)
                continue
            }
            let shape = Shape(
                payload: item.payload, priority: item.priority, expiration: item.expiration, collapseID: item.collapseID
            )
            let rest: [UInt8]? =
                made[shape]
                ?? {
                    // The message without its token: `{…}`, whose first byte gives way to the token.
                    let text = (try? HTTPResponse.encode(untyped: message(item, now: now))).map(Array.init)
                    made[shape] = .some(text)
                    return text
                }()
            guard let rest, rest.first == UInt8(ascii: "{") else {
                bodies.append(nil)
                continue
            }
            // The token is letters, digits and -_:. only (FCMRegistration.isToken): nothing to escape.
            let separator = rest.count > 2 ? "," : ""
            bodies.append(
                Data(
                    #"{"message":{"token":""#.utf8 + Array(token.utf8) + Array("\"\(separator)".utf8) + rest.dropFirst()
                        + [UInt8(ascii: "}")]))
        }
        return bodies
    }

    /// Sends `items` at once with their `bodies` and returns the outcomes, in order.
    private func send(
        _ items: [OutboxItem], _ bodies: [Data?], bearer: String, now: Int64,
        deadline: ContinuousClock.Instant
    ) -> [APNsResponse] {
        var responses = [APNsResponse](
            repeating: APNsResponse(status: 0, transportError: "not sent"), count: items.count)
        var ready: [(Int, CurlMulti.Request)] = []
        let url = "\(settings.baseURL)/v1/projects/\(settings.projectID)/messages:send"
        let headers = ["Content-Type: application/json", "Authorization: Bearer \(bearer)"]
        for (index, item) in items.enumerated() {
            if item.expiration <= now {
                responses[index] = APNsResponse(status: 400, transportError: "expired before it could be delivered")
            } else if let body = bodies[index] {
                ready.append((index, CurlMulti.Request(url: url, headers: headers, body: body)))
            } else {
                responses[index] = APNsResponse(status: 400, transportError: "the push cannot be made an FCM message")
            }
        }
        multi.send(ready, deadline: deadline, into: &responses, reading: Self.response)
        return responses
    }

    /// The FCM message for `item`, without its token: its payload's app data as the data block,
    /// its alert as the notification, and how Android should treat it.
    static func message(_ item: OutboxItem, now: Int64) -> [String: Any] {
        let payload = (try? JSONSerialization.jsonObject(with: Data(item.payload.utf8)) as? [String: Any]) ?? [:]
        let aps = payload["aps"] as? [String: Any] ?? [:]
        var data: [String: String] = [:]
        if let appData = payload.first(where: { $0.key != "aps" })?.value as? [String: Any] {
            // `thread` is aps.thread-id's, set below (a server's own, which the gateway checks):
            // an app-data key of that name, which nothing checks, never stands in for it.
            for (key, value) in appData where key != "thread" {
                switch value {
                case let text as String: data[key] = text
                case let number as NSNumber: data[key] = number.stringValue
                default:
                    if let encoded = try? HTTPResponse.encode(untyped: value) {
                        data[key] = String(decoding: encoded, as: UTF8.self)
                    }
                }
            }
        }
        if let thread = aps["thread-id"] as? String { data["thread"] = thread }
        var android: [String: Any] = [
            "priority": item.priority >= 10 ? "HIGH" : "NORMAL", "ttl": "\(max(0, item.expiration - now))s",
        ]
        if let collapse = item.collapseID { android["collapse_key"] = collapse }
        var message: [String: Any] = ["data": data, "android": android]
        if let alert = aps["alert"] as? [String: Any], let title = alert["title"] as? String {
            var notification = ["title": title]
            if let body = alert["body"] as? String { notification["body"] = body }
            message["notification"] = notification
        }
        return message
    }

    /// The sender's view of FCM's answer.
    static func response(_ answer: CurlSession.Answer) -> APNsResponse {
        let object = try? JSONSerialization.jsonObject(with: answer.body) as? [String: Any]
        let error = object?["error"] as? [String: Any]
        let details = error?["details"] as? [[String: Any]] ?? []
        let code = details.compactMap { $0["errorCode"] as? String }.first ?? (error?["status"] as? String)
        // FCM's own word, cleaned; or the status of an answer that is not FCM's.
        let detail = code.map { "fcm \(ServerTextLimit.clean($0))" } ?? "fcm HTTP \(answer.status)"
        switch (answer.status, code ?? "") {
        case (200, _): return APNsResponse(status: 200)
        case (_, "UNREGISTERED"): return APNsResponse(status: 410, transportError: detail)
        case (401, _): return APNsResponse(status: 403, reason: .expiredProviderToken, transportError: detail)
        case (429, _), (500...599, _):
            let status = answer.status == 429 ? 429 : 503
            return APNsResponse(status: status, transportError: detail, retryAfter: answer.retryAfter)
        default: return APNsResponse(status: 400, transportError: detail)
        }
    }
}

/// A push service's words, cut to a log's measure: printable ASCII, at most 64 characters.
enum ServerTextLimit {
    static func clean(_ text: String) -> String {
        String(String(decoding: text.utf8.filter { $0 > 0x20 && $0 < 0x7F }, as: UTF8.self).prefix(64))
    }
}
