import Foundation

/// A stand-in Web Push service: `interop/webpush/standin.py`, which makes subscriptions, and
/// checks each push it is sent with libraries Homeport does not use (http_ece decrypts the body,
/// py_vapid and PyJWT verify the VAPID token). `scripts/test` installs it (in the APNs stand-in's
/// virtualenv) and exports `HOMEPORT_TEST_WEBPUSH_DIR`; the Python is `HOMEPORT_TEST_APNS_PYTHON`.
public final class WebPushStandIn: @unchecked Sendable {
    private let running: PythonStandIn
    /// Its port on 127.0.0.1.
    public let port: Int

    /// One subscription: where pushes go, and its keys (base64url).
    public struct Subscription: Sendable, Hashable {
        /// The stand-in's name for it.
        public var id: String
        /// The URL pushes are posted to.
        public var endpoint: String
        /// The subscription's public key.
        public var p256dh: String
        /// Its authentication secret.
        public var auth: String

        /// Creates one (a subscription at another service, for tests that send nothing).
        public init(id: String, endpoint: String, p256dh: String, auth: String) {
            self.id = id
            self.endpoint = endpoint
            self.p256dh = p256dh
            self.auth = auth
        }
    }

    /// One push the stand-in took: decrypted and checked.
    public struct Message: @unchecked Sendable {
        /// The subscription it went to.
        public var id: String
        /// The decrypted payload.
        public var payload: [String: Any]
        /// Its `TTL` header.
        public var ttl: Int
        /// Its `Urgency` header.
        public var urgency: String?
        /// Its `Topic` header.
        public var topic: String?
        /// The VAPID token's `sub`.
        public var subject: String
        /// The VAPID key the request carried (`k`).
        public var key: String
    }

    /// Starts it and waits until it listens.
    public init() throws {
        running = try PythonStandIn(peer: "webpush", what: "Web Push stand-in")
        port = running.port
    }

    deinit {
        running.stop()
    }

    /// A new subscription, as a browser's `pushManager.subscribe` would give it.
    public func subscribe() throws -> Subscription {
        let object = try post("/subscribe", [:]).jsonObject ?? [:]
        let keys = object["keys"] as? [String: Any] ?? [:]
        return Subscription(
            id: object["id"] as? String ?? "", endpoint: object["endpoint"] as? String ?? "",
            p256dh: keys["p256dh"] as? String ?? "", auth: keys["auth"] as? String ?? "")
    }

    /// Answers the next pushes to `subscription` with `statuses`, in turn (with `Retry-After`).
    public func answer(_ subscription: Subscription, with statuses: [Int], retryAfter: Int? = nil) throws {
        var request: [String: Any] = ["id": subscription.id, "statuses": statuses]
        if let retryAfter { request["retry_after"] = retryAfter }
        _ = try post("/control", request)
    }

    /// The pushes it took, and the ones it refused (subscription, status, why).
    public func messages() throws -> (delivered: [Message], refused: [(id: String, status: Int, reason: String)]) {
        let object = try RawHTTP.request(port: port, path: "/messages").jsonObject ?? [:]
        let delivered = (object["delivered"] as? [[String: Any]] ?? []).map {
            Message(
                id: $0["id"] as? String ?? "", payload: $0["payload"] as? [String: Any] ?? [:],
                ttl: $0["ttl"] as? Int ?? -1, urgency: $0["urgency"] as? String, topic: $0["topic"] as? String,
                subject: $0["vapid_sub"] as? String ?? "", key: $0["vapid_k"] as? String ?? "")
        }
        let refused = (object["refused"] as? [[String: Any]] ?? []).map {
            ($0["id"] as? String ?? "", $0["status"] as? Int ?? 0, $0["reason"] as? String ?? "")
        }
        return (delivered, refused)
    }

    private func post(_ path: String, _ object: [String: Any]) throws -> RawResponse {
        try running.post(path, object)
    }
}
