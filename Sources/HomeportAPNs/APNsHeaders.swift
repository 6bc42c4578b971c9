/// `apns-push-type`: what the notification is for. Apple requires it, and it must match the
/// payload (an `alert` shows something; `background` only wakes the app).
public enum APNsPushType: String, Sendable, Hashable, CaseIterable {
    /// Shows an alert, plays a sound or badges the icon (Homeport's notifications).
    case alert
    /// Wakes the app in the background; shows nothing (`content-available`).
    case background
    /// Updates a Live Activity.
    case liveactivity
    /// Asks for the device's location (the Location Push Service extension).
    case location
    /// A VoIP call (PushKit).
    case voip
    /// Updates a watchOS complication.
    case complication
    /// Signals a File Provider extension.
    case fileprovider
    /// Asks an MDM-managed device to check in.
    case mdm
    /// A Push to Talk channel update.
    case pushtotalk
    /// Reloads widgets.
    case widgets
}

/// `apns-priority`: when the device is to receive the notification.
public enum APNsPriority: Int, Sendable, Hashable, CaseIterable {
    /// At once (`10`); required for an alert that should show now.
    case immediate = 10
    /// When convenient for the device's power (`5`); what `background` pushes must use.
    case considerate = 5
    /// Prioritising the device's power over all else (`1`): it may never arrive.
    case low = 1
}

/// Which of Apple's hosts a device token belongs to.
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable {
    /// `api.push.apple.com`: App Store and TestFlight builds.
    case production
    /// `api.sandbox.push.apple.com`: development builds.
    case sandbox
}

/// Apple's `reason` for refusing a notification (the JSON body of a non-200 answer).
///
/// An open set: the reasons Apple documents are named here, and one it adds later is kept as it
/// was sent (``rawValue``) rather than lost.
public struct APNsReason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The reason as Apple spelled it.
    public var rawValue: String

    /// The reason `rawValue`.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The reason as Apple spelled it.
    public var description: String { rawValue }

    /// 400: the device token is malformed, or for the other environment.
    public static let badDeviceToken = APNsReason(rawValue: "BadDeviceToken")
    /// 400: the device token is not for this topic (another app's).
    public static let deviceTokenNotForTopic = APNsReason(rawValue: "DeviceTokenNotForTopic")
    /// 400: the topic is not one the key may send to.
    public static let badTopic = APNsReason(rawValue: "BadTopic")
    /// 400: the priority is not 1, 5 or 10, or not allowed for the push type.
    public static let badPriority = APNsReason(rawValue: "BadPriority")
    /// 400: `apns-push-type` is missing or not one Apple knows.
    public static let invalidPushType = APNsReason(rawValue: "InvalidPushType")
    /// 400: `apns-collapse-id` is longer than 64 bytes.
    public static let badCollapseId = APNsReason(rawValue: "BadCollapseId")
    /// 400: `apns-expiration` is not a Unix time.
    public static let badExpirationDate = APNsReason(rawValue: "BadExpirationDate")
    /// 400: `apns-id` is not a UUID.
    public static let badMessageId = APNsReason(rawValue: "BadMessageId")
    /// 400: the payload is empty.
    public static let payloadEmpty = APNsReason(rawValue: "PayloadEmpty")
    /// 403: the provider token has expired (older than an hour): mint another.
    public static let expiredProviderToken = APNsReason(rawValue: "ExpiredProviderToken")
    /// 403: the provider token is not valid (a wrong key id, team or signature).
    public static let invalidProviderToken = APNsReason(rawValue: "InvalidProviderToken")
    /// 403: no provider token was sent.
    public static let missingProviderToken = APNsReason(rawValue: "MissingProviderToken")
    /// 403: the certificate or key may not send this.
    public static let forbidden = APNsReason(rawValue: "Forbidden")
    /// 410: the device token is no longer valid for the topic.
    public static let unregistered = APNsReason(rawValue: "Unregistered")
    /// 413: the payload is over Apple's limit (4 KiB for an alert).
    public static let payloadTooLarge = APNsReason(rawValue: "PayloadTooLarge")
    /// 429: the provider token is being replaced too often.
    public static let tooManyProviderTokenUpdates = APNsReason(rawValue: "TooManyProviderTokenUpdates")
    /// 429: too many notifications to one device token, too fast.
    public static let tooManyRequests = APNsReason(rawValue: "TooManyRequests")
    /// 500: Apple's own failure.
    public static let internalServerError = APNsReason(rawValue: "InternalServerError")
    /// 503: the service is unavailable.
    public static let serviceUnavailable = APNsReason(rawValue: "ServiceUnavailable")
    /// 503: the server is shutting down.
    public static let shutdown = APNsReason(rawValue: "Shutdown")
}
