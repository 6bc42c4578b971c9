import Dispatch
import Foundation
import HomeportAPNs
import HomeportCrypto
import HomeportCurl
import HomeportLogging
import HomeportWire
import Synchronization

/// Sends Web Pushes (RFC 8030) to the push services of browsers and UnifiedPush distributors:
/// each payload encrypted for its subscription (RFC 8291, `aes128gcm`), each request signed
/// with the server's VAPID key (RFC 8292), with `TTL`, `Urgency` and a `Topic` made from the
/// push's collapse id or thread, so a newer push replaces one still waiting at the service.
///
/// The services' answers become the sender's outcomes: 200–202 delivered; 404 and 410 the
/// subscription is gone (removed, unless registered again since); 413 and other refusals are
/// given up; 429 and 5xx (and no answer) are tried again, not before `Retry-After`.
package final class WebPushDelivery: Sendable {
    private let vapid: VAPIDToken
    /// The key of the topics' HMAC.
    private let topicKey: [UInt8]
    /// Whether endpoints on this machine or a private network are posted to.
    private let allowPrivate: Bool
    private let clock: any WallClock
    private let logger: Logger
    /// How long a batch may start new requests.
    private let budget: Duration
    /// The requests in flight: each subscription names its own push service, and one that is
    /// slow or never answers holds only its own request until the timeout.
    private let multi: CurlMulti

    /// `budget`: how long a batch may start new requests.
    package init(
        settings: WebPushSettings, clock: any WallClock, logger: Logger, budget: Duration = .seconds(40)
    ) throws {
        vapid = try VAPIDToken(settings: settings, clock: clock)
        topicKey = try ES256Key(pem: settings.keyPEM).derivedSecret("homeport web push topic")
        allowPrivate = settings.allowPrivateEndpoints
        self.clock = clock
        self.logger = logger
        self.budget = budget
        // An endpoint is a stranger's word: a public name that resolves into the network is
        // refused when the socket would open, not only a private address spelled out; with
        // private endpoints allowed, a link-local one (a cloud's instance metadata) still is.
        multi = try CurlMulti(
            timeoutSeconds: settings.timeoutSeconds,
            reach: settings.allowPrivateEndpoints ? .notLinkLocal : .publicOnly, extraCA: settings.extraCA)
    }

    /// Sends each item (all Web Push ones) and returns the outcomes, in order: each message is
    /// encrypted as its request starts, on the thread of the batch's part it is in (one a core),
    /// while the requests before it are out.
    package func deliver(_ items: [OutboxItem]) -> [APNsResponse] {
        let deadline = ContinuousClock.now + budget
        // One notification goes to many subscriptions, and many subscriptions to one push
        // service: a notification's topic, and a service's rule and VAPID token, are made once a
        // batch.
        var topics: [String: String?] = [:]
        var services: [String: Result<String, Refusal>] = [:]
        var prepared: [(topic: String?, service: Result<String, Refusal>)] = []
        for item in items {
            let key = (item.collapseID ?? "") + "\u{0}" + item.payload
            let made = topics[key] ?? topic(item)
            topics[key] = .some(made)
            let origin = WebPushSubscription.origin(of: item.webPush?.endpoint ?? "")
            let service = services[origin] ?? self.service(origin)
            services[origin] = service
            prepared.append((made, service))
        }
        let now = clock.unixSeconds
        // A message that cannot be encrypted as its request starts is not sent: its outcome.
        let refused = Mutex([Int: APNsResponse]())
        let requests = items.indices.map { index in
            request(items[index], prepared[index].topic, prepared[index].service, now: now) { response in
                refused.withLock { $0[index] = response }
            }
        }
        var responses = requests.map { request -> APNsResponse in
            if case .answered(let response) = request { return response }
            return APNsResponse(status: 0, transportError: "not sent")
        }
        let ready = requests.indices.compactMap { index -> (Int, CurlMulti.Request)? in
            guard case .ready(let request) = requests[index] else { return nil }
            return (index, request)
        }
        multi.send(ready, deadline: deadline, into: &responses, reading: Self.response)
        for (index, response) in refused.withLock({ $0 }) { responses[index] = response }
        return responses
    }

    /// A push about to go: its request, or the outcome it has without one.
    enum Outgoing {
        case ready(CurlMulti.Request)
        case answered(APNsResponse)
    }

    /// Why a push service's pushes are not sent.
    struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    /// The `Authorization` for the push service at `origin` (`scheme://host[:port]`), unless this
    /// server does not post there: a subscription registered while private endpoints were
    /// allowed, or before the rule, is not posted to now.
    private func service(_ origin: String) -> Result<String, Refusal> {
        guard WebPushSubscription.endpointProblem(origin + "/", allowPrivate: allowPrivate) == nil else {
            return .failure(Refusal(description: "the endpoint is not one this server posts to"))
        }
        do {
            return .success(try vapid.authorization(audience: origin))
        } catch {
            return .failure(Refusal(description: "no VAPID token: \(error)"))
        }
    }

    /// The request for one push (its message encrypted for its subscription as it starts), or
    /// the outcome it gets without one; `refuse` is told the outcome of a message that cannot be
    /// encrypted, which is then not sent.
    private func request(
        _ item: OutboxItem, _ topic: String?, _ service: Result<String, Refusal>, now: Int64,
        refuse: @escaping @Sendable (APNsResponse) -> Void
    ) -> Outgoing {
        let authorization: String
        switch service {
        case .failure(let refusal): return .answered(APNsResponse(status: 400, transportError: refusal.description))
        case .success(let value): authorization = value
        }
        // The key's point is checked on the curve as the message's own key agrees with it.
        guard let target = item.webPush,
            let p256dh = WebPushSubscription.publicKeyBytes(target.p256dh),
            let auth = WebPushSubscription.authSecret(target.auth)
        else { return .answered(APNsResponse(status: 400, transportError: "the subscription's keys are not usable")) }
        guard item.expiration > now else {
            return .answered(APNsResponse(status: 400, transportError: "expired before it could be delivered"))
        }
        let plaintext = Array(item.payload.utf8)
        guard plaintext.count <= WebPushContent.maximumPlaintextBytes else {
            let failure = WebPushContent.Failure.tooLarge(bytes: plaintext.count)
            return .answered(APNsResponse(status: 413, transportError: failure.description))
        }
        let body = CurlMulti.Request.Body.made {
            do {
                return Data(try WebPushContent.encrypt(plaintext, p256dh: p256dh, auth: auth))
            } catch WebPushContent.Failure.badSubscriptionKey {
                refuse(APNsResponse(status: 400, transportError: "the subscription's keys are not usable"))
            } catch {
                refuse(APNsResponse(status: 413, transportError: String(describing: error)))
            }
            return nil
        }
        var headers = [
            "Content-Type: application/octet-stream", "Content-Encoding: aes128gcm",
            "TTL: \(item.expiration - now)",
            "Urgency: \(item.priority >= 10 ? "high" : "normal")", "Authorization: \(authorization)",
        ]
        if let topic { headers.append("Topic: \(topic)") }
        return .ready(CurlMulti.Request(url: target.endpoint, headers: headers, making: body))
    }

    /// The sender's view of a push service's answer.
    static func response(_ answer: CurlSession.Answer) -> APNsResponse {
        let detail = "web push \(answer.status)"
        switch answer.status {
        case 200...202: return APNsResponse(status: 200)
        case 404, 410: return APNsResponse(status: 410, transportError: detail)
        case 429, 500...599:
            let status = answer.status == 429 ? 429 : 503
            return APNsResponse(status: status, transportError: detail, retryAfter: answer.retryAfter)
        default: return APNsResponse(status: answer.status == 413 ? 413 : 400, transportError: detail)
        }
    }

    /// The `Topic` (at most 32 characters of base64url, RFC 8030 §5.4): the push's collapse id,
    /// or else its thread, under an HMAC keyed with a secret derived from the VAPID key (a push
    /// service cannot read a thread back from it); none when it has neither.
    func topic(_ item: OutboxItem) -> String? {
        var key = item.collapseID
        if key == nil, let object = try? JSONSerialization.jsonObject(with: Data(item.payload.utf8)) as? [String: Any],
            let aps = object["aps"] as? [String: Any]
        {
            key = aps["thread-id"] as? String
        }
        guard let key, !key.isEmpty else { return nil }
        return String(IdentityProof.base64URL(Digest.hmacSHA256(key: topicKey, Array(key.utf8))).prefix(32))
    }
}
