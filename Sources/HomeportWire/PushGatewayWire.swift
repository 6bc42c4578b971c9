/// The push gateway's API (`homeport-server gateway serve`), which a Homeport server sends its
/// pushes to instead of APNs (and, when the gateway carries them, FCM and Web Push) when the
/// app's developer holds the keys and the server is run by someone else. Every request carries the server's credential, `Authorization: Bearer KEY`,
/// which the gateway's operator issued bound to one installation id.
public enum PushGatewayPath {
    /// `POST`: a batch of pushes (``GatewayPushBatch``), answered with Apple's outcome of each
    /// (``GatewayPushResults``), in order.
    public static let pushes = "/gateway/v1/pushes"
    /// `POST`: devices the server registered and removed (``GatewayDeviceChanges``); the
    /// gateway sends a server's pushes only to devices it registered.
    public static let devices = "/gateway/v1/devices"
    /// `GET`: the push services the gateway carries (``GatewayServices``), which the server
    /// checks against what its operator told it.
    public static let services = "/gateway/v1/services"
    /// `GET`, on the server (not the gateway): what the gateway enrolls it by
    /// (``PushGatewayEnrollment``), fetched from the server's own public address, so that only
    /// whoever serves that address can be enrolled with the credential it names.
    public static let enrollment = "/.well-known/homeport-push-gateway"
}

/// What a server that pushes through a gateway publishes at ``PushGatewayPath/enrollment``: its
/// installation id and the SHA-256 of the credential it holds (never the credential).
public struct PushGatewayEnrollment: Codable, Hashable, Sendable {
    /// The installation id, as the identity route answers it.
    public var instanceId: InstanceID
    /// The credential's SHA-256, lowercase hex.
    public var credentialSha256: String

    /// Creates the answer.
    public init(instanceId: InstanceID, credentialSha256: String) {
        self.instanceId = instanceId
        self.credentialSha256 = credentialSha256
    }
}

/// Reasons the gateway itself gives (besides Apple's, which it passes on as they are).
public enum PushGatewayReason {
    /// 403: the push's `s` is not the sender's enrolled installation id.
    public static let senderMismatch = "SenderMismatch"
    /// 403: the sender never registered this device with the gateway (or removed it).
    public static let unknownDevice = "UnknownDevice"
    /// 400: the payload is not a JSON object with the app-data block.
    public static let badPayload = "BadPayload"
    /// 400: the topic is not the gateway's app.
    public static let topicDisallowed = "TopicDisallowed"
    /// 429: the sender is past its rate limit; try again later.
    public static let tooManyRequests = "TooManyRequests"
    /// 413: the payload is larger than APNs takes (4096 bytes); Apple's own reason for it.
    public static let payloadTooLarge = "PayloadTooLarge"
    /// 400: the device token is not 16–200 lowercase hex digits; Apple's own reason for it.
    public static let badDeviceToken = "BadDeviceToken"
    /// 400: the `apns-id` is not a UUID; Apple's own reason for it.
    public static let badMessageID = "BadMessageId"
    /// 400: the collapse id is not 1–64 bytes of printable text; Apple's own reason for it.
    public static let badCollapseID = "BadCollapseId"
    /// 400: the priority is not 1, 5 or 10; Apple's own reason for it.
    public static let badPriority = "BadPriority"
    /// 400: the expiration is before 1970; Apple's own reason for it.
    public static let badExpirationDate = "BadExpirationDate"
    /// 400: the gateway does not send to this push service (it holds no FCM service account, or
    /// no VAPID key).
    public static let providerUnavailable = "ProviderUnavailable"
    /// 0: the push was not started (its batch's time ran out behind slow push services); it
    /// goes again without counting as an attempt.
    public static let notSent = "NotSent"
}

/// One push, as the server's outbox holds it.
public struct GatewayPush: Codable, Hashable, Sendable {
    /// Which push service carries it (`apns` when left out, as before there were others).
    public var provider: PushProvider
    /// `apns-id` (the push's id for the other services), the same on every attempt.
    public var apnsId: String
    /// The APNs device token, lowercase hex; for FCM and Web Push, the name the device was
    /// registered by (`fcm:` or `webpush:` and a SHA-256 in hex): the gateway pushes to the
    /// address and keys it holds for that name.
    public var deviceToken: String
    /// Which APNs host.
    public var environment: PushEnvironment
    /// `apns-topic`: the app's bundle id.
    public var topic: String
    /// The payload as the server made it; the gateway sends these bytes.
    public var payload: String
    /// `apns-priority`.
    public var priority: Int
    /// `apns-expiration`, Unix seconds.
    public var expiration: Int64
    /// `apns-collapse-id`, when there is one.
    public var collapseId: String?

    /// Creates a push.
    public init(
        provider: PushProvider = .apns, apnsId: String, deviceToken: String, environment: PushEnvironment,
        topic: String, payload: String, priority: Int, expiration: Int64, collapseId: String?
    ) {
        self.provider = provider
        self.apnsId = apnsId
        self.deviceToken = deviceToken
        self.environment = environment
        self.topic = topic
        self.payload = payload
        self.priority = priority
        self.expiration = expiration
        self.collapseId = collapseId
    }

    enum CodingKeys: String, CodingKey {
        case provider, apnsId, deviceToken, environment, topic, payload, priority, expiration, collapseId
    }

    /// Reads a push; without `provider` it is an APNs one.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        provider = try container.decodeIfPresent(PushProvider.self, forKey: .provider) ?? .apns
        apnsId = try container.decode(String.self, forKey: .apnsId)
        deviceToken = try container.decode(String.self, forKey: .deviceToken)
        environment = try container.decode(PushEnvironment.self, forKey: .environment)
        topic = try container.decode(String.self, forKey: .topic)
        payload = try container.decode(String.self, forKey: .payload)
        priority = try container.decode(Int.self, forKey: .priority)
        expiration = try container.decode(Int64.self, forKey: .expiration)
        collapseId = try container.decodeIfPresent(String.self, forKey: .collapseId)
    }
}

/// `GET /gateway/v1/services`: what the gateway sends to, and the public facts a server's
/// flags must repeat.
public struct GatewayServices: Codable, Hashable, Sendable {
    /// The push services it carries.
    public var providers: [PushProvider]
    /// Its VAPID public key (base64url), when it sends Web Pushes.
    public var webPushKey: String?
    /// The Firebase project of its FCM service account, when it sends to FCM.
    public var fcmProject: String?

    /// Creates the answer.
    public init(providers: [PushProvider], webPushKey: String? = nil, fcmProject: String? = nil) {
        self.providers = providers
        self.webPushKey = webPushKey
        self.fcmProject = fcmProject
    }
}

/// `POST /gateway/v1/pushes`.
public struct GatewayPushBatch: Codable, Hashable, Sendable {
    /// The most pushes one request carries.
    public static let maximumCount = 1000
    /// The pushes.
    public var pushes: [GatewayPush]

    /// Creates a batch.
    public init(pushes: [GatewayPush]) {
        self.pushes = pushes
    }
}

/// What became of one push: the push service's answer passed on (FCM's and Web Push's in
/// Apple's terms: 410 for a device that is gone, 429 and 503 to try again), or the gateway's
/// refusal.
public struct GatewayPushOutcome: Codable, Hashable, Sendable {
    /// The HTTP status (Apple's, or the gateway's own); 0 when the service gave no answer.
    public var status: Int
    /// Apple's reason, the other service's own words, or one of ``PushGatewayReason``.
    public var reason: String?
    /// For a 410, when Apple learned the token stopped being valid, in milliseconds.
    public var timestamp: Int64?
    /// For a 429 or 503, the seconds the service asked to wait before trying again.
    public var retryAfter: Int64?

    /// Creates an outcome.
    public init(status: Int, reason: String? = nil, timestamp: Int64? = nil, retryAfter: Int64? = nil) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.retryAfter = retryAfter
    }
}

/// The answer to ``GatewayPushBatch``: one outcome per push, in the batch's order.
public struct GatewayPushResults: Codable, Hashable, Sendable {
    /// The outcomes.
    public var results: [GatewayPushOutcome]

    /// Creates the answer.
    public init(results: [GatewayPushOutcome]) {
        self.results = results
    }
}

/// `POST /gateway/v1/devices`: devices registered on the server, and devices removed from it.
public struct GatewayDeviceChanges: Codable, Hashable, Sendable {
    /// The most changes one request carries.
    public static let maximumCount = 5000
    /// Devices the server may push to from now on: APNs tokens, FCM registration tokens and Web
    /// Push subscriptions (the gateway names the latter two as the server does, `fcm:` or
    /// `webpush:` and a SHA-256).
    public var register: [PushDeviceRegistration]
    /// Devices the server may no longer push to: APNs tokens, or the names of the others.
    public var remove: [String]

    /// Creates the changes.
    public init(register: [PushDeviceRegistration], remove: [String]) {
        self.register = register
        self.remove = remove
    }
}

/// The answer to ``GatewayDeviceChanges``: each change stands alone, so one the gateway refuses
/// does not hold the others back.
public struct GatewayDeviceResults: Codable, Hashable, Sendable {
    /// Registrations recorded.
    public var registered: Int
    /// Removals made (of a device the server had registered, or not).
    public var removed: Int
    /// Registrations of a push service the gateway does not carry: not kept (a push to one is
    /// answered `ProviderUnavailable`).
    public var ignored: Int
    /// The changes refused, each by its field (`register[3].endpoint`) and why.
    public var refused: [Refusal]

    /// Creates the answer.
    public init(registered: Int, removed: Int, ignored: Int = 0, refused: [Refusal] = []) {
        self.registered = registered
        self.removed = removed
        self.ignored = ignored
        self.refused = refused
    }

    /// One refused change.
    public struct Refusal: Codable, Hashable, Sendable {
        /// The field, as `register[INDEX].NAME` or `remove[INDEX]`.
        public var field: String
        /// Why, in a sentence.
        public var message: String

        /// Creates a refusal.
        public init(field: String, message: String) {
            self.field = field
            self.message = message
        }
    }
}
