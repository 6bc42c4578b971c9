import Foundation
import HomeportAPNs
import HomeportCrypto
import HomeportWire

/// How the server notifies: the payload's app-data key, the catalogue, and APNs (or none).
package struct PushSettings: Sendable {
    /// The key of the payload's app-data block (`homeport`; a product names its own, such as `officer`).
    package var appDataKey: String
    /// Codes the operator adds to the built-in catalogue.
    package var extraCodes: [CatalogueCode]
    /// The app's bundle id (`apns-topic`): with it, notifications queue pushes; without it pushes are
    /// off (registrations, the log and the in-app stream still work).
    package var topic: String?
    /// How this process sends the queued pushes to APNs; `nil` leaves them to another process
    /// (or to ``gateway``).
    package var apns: APNsSettings?
    /// The push gateway this process sends the queued pushes to instead of APNs (the app's
    /// developer holds the APNs key); `nil` for none.
    package var gateway: PushGatewaySettings?
    /// The VAPID public key (base64url) browsers and UnifiedPush distributors subscribe with:
    /// with it, Web Push subscriptions are taken and notifications queue Web Pushes; without it,
    /// Web Push is off. Set with ``webPush`` by ``enableWebPush(_:)``.
    package var webPushKey: String?
    /// How this process sends the queued Web Pushes; `nil` leaves them to another process.
    package var webPush: WebPushSettings?
    /// The Firebase project whose Android app takes FCM pushes: with it, FCM registrations are
    /// taken and notifications queue FCM pushes. Set with ``fcm`` by ``enableFCM(_:)``.
    package var fcmProject: String?
    /// How this process sends the queued FCM pushes; `nil` leaves them to another process.
    package var fcm: FCMSettings?
    /// How long the in-app notification log keeps a notification, in seconds.
    package var logRetention: Int64
    /// Attempts at one push before it is given up.
    package var maximumAttempts: Int
    /// How often a stream gets a keep-alive comment, in seconds.
    package var streamHeartbeat: Double
    /// How often the in-app stream looks for notifications made by other processes, in seconds.
    package var streamPollInterval: Double
    /// How many in-app streams a session, an account and a client address hold at once (per process).
    package var streamLimits = StreamLimits()
    /// Devices one account keeps registered: registering one more removes its least recently
    /// registered (a phone reinstalled leaves its old token behind until Apple refuses it).
    package var maxDevicesPerAccount = 20
    /// Threads one account may keep muted; muting one more is refused until one is unmuted.
    package var maxMutesPerAccount = 1000

    /// Creates settings; pushes are off until ``apns`` is set.
    package init(
        appDataKey: String = "homeport", extraCodes: [CatalogueCode] = [], topic: String? = nil,
        apns: APNsSettings? = nil,
        logRetention: Int64 = 30 * 86400, maximumAttempts: Int = 8, streamHeartbeat: Double = 15,
        streamPollInterval: Double = 0.25
    ) {
        self.appDataKey = appDataKey
        self.extraCodes = extraCodes
        self.topic = topic
        self.apns = apns
        self.logRetention = logRetention
        self.maximumAttempts = maximumAttempts
        self.streamHeartbeat = streamHeartbeat
        self.streamPollInterval = streamPollInterval
    }

    /// Turns Web Push on, sent by this process with `settings`: ``webPushKey`` becomes its
    /// VAPID public key.
    package mutating func enableWebPush(_ settings: WebPushSettings) throws {
        webPushKey = try settings.publicKey()
        webPush = settings
    }

    /// Turns FCM on, sent by this process with `settings`.
    package mutating func enableFCM(_ settings: FCMSettings) {
        fcmProject = settings.projectID
        fcm = settings
    }

    /// Whether Web Push subscriptions on this machine or a private network are taken
    /// (`--webpush-allow-private-endpoints`, with this process's VAPID key or its gateway's).
    var takesPrivateWebPushEndpoints: Bool {
        webPush?.allowPrivateEndpoints ?? gateway?.allowPrivateWebPushEndpoints ?? false
    }

    /// Sends pushes through `gateway`: APNs always, and Web Push and FCM when the gateway carries
    /// them (its VAPID key becomes ``webPushKey``, its project ``fcmProject``).
    package mutating func sendThrough(_ gateway: PushGatewaySettings) {
        self.gateway = gateway
        if let key = gateway.webPushKey { webPushKey = key }
        if let project = gateway.fcmProject { fcmProject = project }
    }

    /// Checks an app-data key: 1–32 letters, digits, `_` or `-`, and not `aps`.
    package static func validateAppDataKey(_ key: String) -> Bool {
        (1...32).contains(key.utf8.count) && key != "aps"
            && key.utf8.allSatisfy {
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_")
                    || $0 == UInt8(ascii: "-")
            }
    }
}

/// How to reach APNs, and as whom.
package struct APNsSettings: Sendable {
    /// The auth key (`.p8`) as PEM, read from the key file; never logged.
    package var keyPEM: String
    /// The key's id (`kid`), ten characters.
    package var keyID: String
    /// The team id (`iss`), ten characters.
    package var teamID: String
    /// The hosts and the trust.
    package var client: APNsClient.Configuration

    /// Creates settings.
    package init(keyPEM: String, keyID: String, teamID: String, client: APNsClient.Configuration) {
        self.keyPEM = keyPEM
        self.keyID = keyID
        self.teamID = teamID
        self.client = client
    }

}

/// How to reach a push gateway (`homeport-server gateway serve`), and as whom.
package struct PushGatewaySettings: Sendable {
    /// The gateway's base URL: `https://…`, or `http://` on a loopback address.
    package var url: String
    /// The credential its operator issued for this installation; never logged.
    package var credential: String
    /// A CA file trusted besides the system's (a gateway with a private CA).
    package var caFile: String?
    /// Longest wait for one exchange with the gateway, in seconds (a batch of FCM and Web
    /// Pushes takes the gateway up to about 40).
    package var timeoutSeconds: Int
    /// The gateway's VAPID public key (base64url), when it carries this server's Web Pushes:
    /// subscriptions are made with it, and go to the gateway.
    package var webPushKey: String?
    /// The Firebase project of the gateway's app, when it carries this server's FCM pushes.
    package var fcmProject: String?
    /// Whether Web Push subscriptions on this machine or a private network are taken for the
    /// gateway (`--webpush-allow-private-endpoints`; whether the gateway posts there is its own
    /// flag's word).
    package var allowPrivateWebPushEndpoints = false

    /// Creates settings.
    package init(
        url: String, credential: String, caFile: String? = nil, timeoutSeconds: Int = 50, webPushKey: String? = nil,
        fcmProject: String? = nil
    ) {
        self.url = url
        self.credential = credential
        self.caFile = caFile
        self.timeoutSeconds = timeoutSeconds
        self.webPushKey = webPushKey
        self.fcmProject = fcmProject
    }

    /// The push services the gateway carries for this server.
    package var providers: Set<PushProvider> {
        var providers: Set<PushProvider> = [.apns]
        if webPushKey != nil { providers.insert(.webpush) }
        if fcmProject != nil { providers.insert(.fcm) }
        return providers
    }

    /// The credential in the file at `path`, made there first (256 random bits, mode 0600) when
    /// the file does not exist. Throws ``ConfigurationError`` for a file others may read or that
    /// holds no credential.
    package static func credential(fromFile path: String) throws -> String {
        let data = try PrivateFile.read(
            path, what: "push gateway credential file", create: { try SecretToken.generate() + "\n" })
        let credential = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard (32...512).contains(credential.utf8.count), credential.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { throw ConfigurationError("the push gateway credential file \(path) does not hold one credential") }
        return credential
    }

    /// Whether `url` may name a gateway: `https://` with a host, or `http://` on a loopback
    /// address (`127.0.0.0/8`, `[::1]`, `localhost`), where nothing crosses a network in clear.
    package static func isAllowedURL(_ url: String) -> Bool {
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty,
            components.query == nil, components.fragment == nil, components.user == nil
        else { return false }
        switch components.scheme?.lowercased() {
        case "https": return true
        case "http":
            let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
            if bare == "::1" || bare.lowercased() == "localhost" { return true }
            let parts = bare.split(separator: ".", omittingEmptySubsequences: false)
            return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
        default: return false
        }
    }
}

extension PushSettings {
    /// The settings with `product`'s notification codes in the catalogue (before the operator's
    /// extra codes, which may retitle them) and its app-data key where the operator chose none.
    func serving(_ product: Product) -> PushSettings {
        guard !product.isHomeport else { return self }
        var settings = self
        settings.extraCodes = product.notificationCodes + extraCodes
        if let key = product.pushAppDataKey, appDataKey == PushPayload.defaultAppDataKey { settings.appDataKey = key }
        return settings
    }
}
