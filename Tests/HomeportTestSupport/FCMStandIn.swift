import Foundation

/// A stand-in Firebase Cloud Messaging: `interop/fcm/standin.py`, Google's token endpoint (the
/// service account's assertion verified with google-auth) and FCM's send call (a live access
/// token and a well-formed message required), with the service-account file it made for it.
/// `scripts/test` installs it (in the APNs stand-in's virtualenv) and exports
/// `HOMEPORT_TEST_FCM_DIR`; the Python is `HOMEPORT_TEST_APNS_PYTHON`.
public final class FCMStandIn: @unchecked Sendable {
    private let running: PythonStandIn
    /// Its port on 127.0.0.1.
    public let port: Int

    /// One message it took.
    public struct Message: Sendable, Hashable {
        /// The registration token it went to.
        public var token: String
        /// Its data block.
        public var data: [String: String]
        /// Its notification's title.
        public var title: String?
        /// Its notification's body.
        public var body: String?
        /// Its Android priority.
        public var priority: String?
        /// Its Android TTL (`86400s`).
        public var ttl: String?
    }

    /// Starts it and waits until it listens.
    public init() throws {
        running = try PythonStandIn(peer: "fcm", what: "FCM stand-in")
        port = running.port
    }

    deinit {
        running.stop()
    }

    /// The service-account file it made (mode 0600), for `--fcm-service-account-file`.
    public var serviceAccountFile: String { running.directory.file("service-account.json") }

    /// Its base URL, for `--fcm-base-url`.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// Answers the next sends to `token` with FCM's errors (`UNREGISTERED`, `QUOTA_EXCEEDED`,
    /// `INVALID_ARGUMENT`, `SENDER_ID_MISMATCH`, `UNAVAILABLE`), or with an HTML 404 page that is
    /// not FCM's (`PAGE_404`), in turn.
    public func answer(_ token: String, with errors: [String], retryAfter: Int? = nil) throws {
        var request: [String: Any] = ["token": token, "answers": errors]
        if let retryAfter { request["retry_after"] = retryAfter }
        _ = try running.post("/control", request)
    }

    /// Makes every access token it issued stop working (as an expired or revoked one).
    public func revokeAccessTokens() throws {
        _ = try running.post("/control", ["revoke": true])
    }

    /// The messages it took, the sends it refused (token, status, why), and how many access
    /// tokens it issued.
    public func messages() throws -> (
        delivered: [Message], refused: [(token: String?, status: Int, reason: String)], tokensIssued: Int
    ) {
        let object = try RawHTTP.request(port: port, path: "/messages").jsonObject ?? [:]
        let delivered = (object["delivered"] as? [[String: Any]] ?? []).map { entry in
            let notification = entry["notification"] as? [String: Any]
            let android = entry["android"] as? [String: Any]
            return Message(
                token: entry["token"] as? String ?? "", data: entry["data"] as? [String: String] ?? [:],
                title: notification?["title"] as? String, body: notification?["body"] as? String,
                priority: android?["priority"] as? String, ttl: android?["ttl"] as? String)
        }
        let refused = (object["refused"] as? [[String: Any]] ?? []).map {
            ($0["token"] as? String, $0["status"] as? Int ?? 0, $0["reason"] as? String ?? "")
        }
        return (delivered, refused, object["tokens_issued"] as? Int ?? -1)
    }
}
