/// `GET /api/v1/notifications/catalogue`: the codes a server sends, and a version that is a hash
/// of their content (the same on every replica with the same catalogue; the `ETag` too).
public struct NotificationCatalogue: Codable, Hashable, Sendable {
    /// The content hash of ``codes``.
    public var version: String
    /// Every notification code the server may send.
    public var codes: [Code]

    /// Creates a catalogue.
    public init(version: String, codes: [Code]) {
        self.version = version
        self.codes = codes
    }

    /// One code and what a person reads for it.
    public struct Code: Codable, Hashable, Sendable {
        /// `namespace:name`, such as `homeport/core:chat.turn-ended`.
        public var code: String
        /// A title to show.
        public var title: String

        /// Creates a code.
        public init(code: String, title: String) {
            self.code = code
            self.title = title
        }
    }
}

/// `POST /api/v1/push/devices`: a device to push to (and the answer, naming it).
///
/// Three kinds: an APNs device token (`provider` `apns`, the default: `token` and `environment`),
/// an FCM registration token (`fcm`: `token`), and a Web Push subscription (`webpush`:
/// `endpoint` and `keys`, as a browser's `PushSubscription` or a UnifiedPush distributor gives
/// them). The answer names an FCM token and a Web Push subscription by a `token` of the server's
/// own (`fcm:` or `webpush:` and a SHA-256 in hex), which `DELETE /api/v1/push/devices/{token}`
/// takes; it never echoes the keys.
public struct PushDeviceRegistration: Codable, Hashable, Sendable {
    /// Which push service carries the pushes.
    public var provider: PushProvider
    /// The APNs device token, in hex (64 characters today; Apple may lengthen it); for Web
    /// Push, the server's name for the subscription (empty in a request).
    public var token: String
    /// `sandbox` or `production`: which APNs host the token belongs to (APNs only).
    public var environment: PushEnvironment
    /// The push service's URL the pushes are posted to (Web Push only).
    public var endpoint: String?
    /// The subscription's keys (Web Push only; requests only).
    public var keys: WebPushKeys?

    /// Creates an APNs registration.
    public init(token: String, environment: PushEnvironment) {
        self.provider = .apns
        self.token = token
        self.environment = environment
    }

    /// Creates a Web Push registration for `endpoint` with the subscription's `keys`.
    public init(webPushEndpoint endpoint: String, keys: WebPushKeys) {
        self.provider = .webpush
        self.token = ""
        self.environment = .production
        self.endpoint = endpoint
        self.keys = keys
    }

    /// Creates an FCM registration (the app's registration token; the answer names it by the
    /// server's own name, `fcm:` and its SHA-256).
    public init(fcmToken token: String) {
        self.provider = .fcm
        self.token = token
        self.environment = .production
    }

    /// The answer naming a Web Push subscription by `token`.
    public init(webPushToken token: String) {
        self.provider = .webpush
        self.token = token
        self.environment = .production
    }

    enum CodingKeys: String, CodingKey {
        case provider, token, environment, endpoint, keys
    }

    /// Reads a registration; without `provider` it is an APNs one (as before Web Push).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        provider = try container.decodeIfPresent(PushProvider.self, forKey: .provider) ?? .apns
        token = try container.decodeIfPresent(String.self, forKey: .token) ?? ""
        // Only an APNs token has an environment (it is not written for the others).
        let environment = try container.decodeIfPresent(PushEnvironment.self, forKey: .environment)
        self.environment = provider == .apns ? environment ?? .production : .production
        endpoint = try container.decodeIfPresent(String.self, forKey: .endpoint)
        keys = try container.decodeIfPresent(WebPushKeys.self, forKey: .keys)
        if provider == .apns, !container.contains(.token) || !container.contains(.environment) {
            throw DecodingError.dataCorruptedError(
                forKey: .token, in: container, debugDescription: "an APNs registration has a token and an environment")
        }
    }

    /// Writes the fields of its kind only.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(provider, forKey: .provider)
        if provider == .apns || !token.isEmpty { try container.encode(token, forKey: .token) }
        if provider == .apns { try container.encode(environment, forKey: .environment) }
        try container.encodeIfPresent(endpoint, forKey: .endpoint)
        try container.encodeIfPresent(keys, forKey: .keys)
    }
}

/// Which push service carries a device's pushes.
public enum PushProvider: String, Codable, Hashable, Sendable, CaseIterable {
    /// Apple Push Notification service.
    case apns
    /// Web Push (RFC 8030): a browser's push service, or a UnifiedPush distributor.
    case webpush
    /// Firebase Cloud Messaging: an Android app with Google's services.
    case fcm
}

/// A Web Push subscription's keys, base64url as `PushSubscription.toJSON()` gives them.
public struct WebPushKeys: Codable, Hashable, Sendable {
    /// The subscription's P-256 public key: 65 bytes, uncompressed.
    public var p256dh: String
    /// The authentication secret: 16 bytes.
    public var auth: String

    /// Creates keys.
    public init(p256dh: String, auth: String) {
        self.p256dh = p256dh
        self.auth = auth
    }
}

/// `GET /api/v1/push/webpush-key`: the server's VAPID public key, which a browser or a
/// UnifiedPush distributor subscribes with (`applicationServerKey`).
public struct WebPushServerKey: Codable, Hashable, Sendable {
    /// The key: a 65-byte uncompressed P-256 point, base64url without padding.
    public var publicKey: String

    /// Creates the answer.
    public init(publicKey: String) {
        self.publicKey = publicKey
    }
}

/// Which APNs environment a device token was issued by.
public enum PushEnvironment: String, Codable, Hashable, Sendable, CaseIterable {
    /// `api.sandbox.push.apple.com`: development builds.
    case sandbox
    /// `api.push.apple.com`: App Store and TestFlight builds.
    case production
}

/// `GET /api/v1/notifications/mutes`: the threads the account muted on this server.
public struct MutedThreads: Codable, Hashable, Sendable {
    /// Thread ids as the server names them (`chat:42`), not prefixed with the server.
    public var threads: [String]

    /// Creates the list.
    public init(threads: [String]) {
        self.threads = threads
    }
}

/// One notification as the in-app stream carries it (the `data` of a server-sent event whose
/// `id` is ``id``): the same notification a push carries, with its text.
public struct StreamNotification: Codable, Hashable, Sendable {
    /// The event id: the notification's place in the account's log (`Last-Event-ID` resumes after it).
    public var id: Int64
    /// The server's `instanceId`.
    public var s: InstanceID?
    /// The notification code.
    public var c: String
    /// The object it is about.
    public var object: Int64?
    /// The thread, as the server names it (`chat:42`).
    public var thread: String?
    /// The catalogue version.
    public var mv: String?
    /// The title.
    public var title: String
    /// The body, when there is one.
    public var body: String?
    /// When it was made, in Unix seconds.
    public var at: Int64
    /// The product's own small string values (``NotificationData``); absent when none.
    public var data: [String: String]?

    /// Creates a stream notification.
    public init(
        id: Int64, s: InstanceID?, c: String, object: Int64?, thread: String?, mv: String?, title: String,
        body: String?, at: Int64, data: [String: String]? = nil
    ) {
        self.data = data
        self.id = id
        self.s = s
        self.c = c
        self.object = object
        self.thread = thread
        self.mv = mv
        self.title = title
        self.body = body
        self.at = at
    }
}

/// How threads are named across servers: a server's thread `chat:42` is `<instanceId>:chat:42`
/// in a payload's `thread-id`, so that two servers' conversations never share a banner.
public enum NotificationThread {
    /// The namespaced thread id.
    public static func namespaced(_ thread: String, server: InstanceID) -> String {
        "\(server):\(thread)"
    }

    /// The server's own thread id out of a namespaced one, when it names `server`.
    public static func local(_ namespaced: String, server: InstanceID) -> String? {
        let prefix = "\(server):"
        guard namespaced.hasPrefix(prefix) else { return nil }
        return String(namespaced.dropFirst(prefix.count))
    }
}

/// The rules for a notification's `data`: the product's own string values that travel with it
/// (`d` in a push's app data, `data` on the stream), such as the id of an entry to open.
public enum NotificationData {
    /// At most this many keys.
    public static let maximumKeys = 16
    /// A key's longest spelling, in characters.
    public static let maximumKeyLength = 64
    /// A value's longest spelling, in characters.
    public static let maximumValueLength = 256

    /// Why `data` breaks the rules, in a sentence; `nil` when it keeps them: at most 16 keys of
    /// 1–64 characters of `A-Z a-z 0-9 _ . -`, each value at most 256 characters without control
    /// characters.
    public static func problem(_ data: [String: String]) -> String? {
        guard data.count <= maximumKeys else { return "data holds at most \(maximumKeys) keys" }
        for (key, value) in data {
            let keyAllowed = key.utf8.allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
                    || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-")
            }
            guard (1...maximumKeyLength).contains(key.count), keyAllowed else {
                return "a data key is 1–\(maximumKeyLength) characters of letters, digits and '_.-'"
            }
            guard value.count <= maximumValueLength,
                !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
            else { return "a data value is at most \(maximumValueLength) characters, without control characters" }
        }
        return nil
    }
}
