import Foundation

/// One notification to one device, as the APNs provider API takes it.
public struct APNsRequest: Sendable, Hashable {
    /// `apns-id`: a UUID naming this notification (the same on every retry).
    public var apnsID: String
    /// The device token, hex.
    public var deviceToken: String
    /// `apns-topic`: the app's bundle id.
    public var topic: String
    /// The JSON payload.
    public var payload: Data
    /// `apns-priority`.
    public var priority: APNsPriority
    /// `apns-expiration`: Unix seconds after which Apple stops trying (0: try once).
    public var expiration: Int64
    /// `apns-collapse-id`: notifications with the same one replace each other (64 bytes at most).
    public var collapseID: String?
    /// `apns-push-type`.
    public var pushType: APNsPushType
    /// The host the token belongs to: a development build's tokens are sandbox ones.
    public var environment: APNsEnvironment

    /// Creates a request.
    public init(
        apnsID: String, deviceToken: String, topic: String, payload: Data, priority: APNsPriority = .immediate,
        expiration: Int64, collapseID: String? = nil, pushType: APNsPushType = .alert, environment: APNsEnvironment
    ) {
        self.apnsID = apnsID
        self.deviceToken = deviceToken
        self.topic = topic
        self.payload = payload
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.pushType = pushType
        self.environment = environment
    }
}

/// What APNs answered to one request, or why there was no answer.
public struct APNsResponse: Sendable, Hashable {
    /// The HTTP status; 0 when the request got no answer (connection or TLS failure, timeout).
    public var status: Int
    /// Apple's `reason`, when it gave one.
    public var reason: APNsReason?
    /// For `410`: when Apple learned that the token stopped being valid, in milliseconds.
    public var timestamp: Int64?
    /// The transport's error, when there was no answer (or, for a push service other than
    /// Apple's, what it answered).
    public var transportError: String?
    /// Seconds the service asked to wait before trying again (`Retry-After`), when it did.
    public var retryAfter: Int64?

    /// Creates a response.
    public init(
        status: Int, reason: APNsReason? = nil, timestamp: Int64? = nil, transportError: String? = nil,
        retryAfter: Int64? = nil
    ) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.transportError = transportError
        self.retryAfter = retryAfter
    }

    /// What to do about it.
    public var outcome: APNsOutcome {
        switch (status, reason) {
        case (200, _): .delivered
        case (410, _): .unregistered(since: timestamp.map { $0 / 1000 })
        case (_, .badDeviceToken?), (_, .deviceTokenNotForTopic?): .badDevice
        case (403, .expiredProviderToken?): .providerTokenRejected
        case (0, _), (429, _), (500, _), (503, _): .retry
        default: .giveUp
        }
    }
}

/// What a sender does with an answer.
public enum APNsOutcome: Sendable, Hashable {
    /// Delivered to Apple.
    case delivered
    /// The device token is no longer valid (410); Apple knew since this Unix second.
    case unregistered(since: Int64?)
    /// The token is malformed or not for this app: forget it.
    case badDevice
    /// The provider token was refused as expired: mint another and try once more. (A token
    /// refused as invalid, a wrong key or team, is not retried: another would fail the same way.)
    case providerTokenRejected
    /// A transient failure (no answer, 429, 500, 503): try again later.
    case retry
    /// A reason Apple says not to retry (`PayloadTooLarge`, `BadTopic`, `Forbidden`, …).
    case giveUp
}
