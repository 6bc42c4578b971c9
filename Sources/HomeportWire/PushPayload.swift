import Foundation

/// A notification's APNs payload (PROTOCOL §4): Apple's `aps` dictionary and the product's
/// app-data block, under a key the product chooses (`homeport` by default).
///
/// ```json
/// {"aps": {"alert": {"title": "…"}, "thread-id": "<instanceId>:chat:42", "mutable-content": 1},
///  "homeport": {"s": "<instanceId>", "c": "homeport/core:chat.turn-ended", "id": 42, "mv": "<catalogue version>"}}
/// ```
public struct PushPayload: Hashable, Sendable {
    /// The largest payload APNs accepts for an alert, in bytes.
    public static let maximumBytes = 4096
    /// The app-data key when the product names none.
    public static let defaultAppDataKey = "homeport"

    /// Apple's part.
    public var aps: APS
    /// The product's part; `nil` in a payload that has none.
    public var appData: PushAppData?

    /// Creates a payload.
    public init(aps: APS, appData: PushAppData?) {
        self.aps = aps
        self.appData = appData
    }

    /// Apple's `aps` dictionary, as Homeport fills it, and as any sender may: the alert is a
    /// dictionary or a string (its body), or absent in a silent push (`content-available` only).
    public struct APS: Codable, Hashable, Sendable {
        /// The banner's text; `nil` in a silent push.
        public var alert: Alert?
        /// Groups banners: `<instanceId>:<thread>`, so that two servers' threads never merge.
        public var threadID: String?
        /// 1: a notification service extension may change the content before it is shown.
        public var mutableContent: Int?
        /// 1: the app is woken in the background (without an alert, a silent push).
        public var contentAvailable: Int?

        /// Creates the dictionary.
        public init(alert: Alert?, threadID: String? = nil, mutableContent: Int? = 1, contentAvailable: Int? = nil) {
            self.alert = alert
            self.threadID = threadID
            self.mutableContent = mutableContent
            self.contentAvailable = contentAvailable
        }

        /// Whether it wakes the app without showing anything.
        public var isSilent: Bool { alert == nil && contentAvailable == 1 }

        private enum CodingKeys: String, CodingKey {
            case alert
            case threadID = "thread-id"
            case mutableContent = "mutable-content"
            case contentAvailable = "content-available"
        }
    }

    /// The banner's text.
    public struct Alert: Codable, Hashable, Sendable {
        /// The title (empty when the sender gave none).
        public var title: String
        /// The body, when there is one.
        public var body: String?

        /// Creates an alert.
        public init(title: String, body: String? = nil) {
            self.title = title
            self.body = body
        }

        private enum CodingKeys: String, CodingKey {
            case title, body
        }

        /// Reads Apple's two forms: a dictionary (`title`, `body`), or a string, which Apple shows
        /// as the body.
        public init(from decoder: any Decoder) throws {
            if let text = try? decoder.singleValueContainer().decode(String.self) {
                self.init(title: "", body: text)
                return
            }
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                title: try container.decodeIfPresent(String.self, forKey: .title) ?? "",
                body: try container.decodeIfPresent(String.self, forKey: .body))
        }

        /// Writes the dictionary form.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(title, forKey: .title)
            try container.encodeIfPresent(body, forKey: .body)
        }
    }

    /// The payload as JSON, with `appData` under `appDataKey` (sorted keys, slashes as they are).
    public func encoded(appDataKey: String = PushPayload.defaultAppDataKey) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(Envelope(payload: self, appDataKey: appDataKey))
    }

    /// The payload as `write` encodes it, with `appData` under `appDataKey`: the server passes
    /// its own writer (the same bytes as ``encoded(appDataKey:)``, several times faster, for a
    /// payload made on every notification).
    public func encoded(appDataKey: String = PushPayload.defaultAppDataKey, with write: (any Encodable) throws -> Data)
        rethrows -> Data
    {
        try write(Envelope(payload: self, appDataKey: appDataKey))
    }

    /// Reads a payload whose app data is under `appDataKey`; a payload without that key has no app data.
    public init(decoding data: Data, appDataKey: String = PushPayload.defaultAppDataKey) throws {
        let decoder = JSONDecoder()
        decoder.userInfo[Envelope.keyInfo] = appDataKey
        self = try decoder.decode(Envelope.self, from: data).payload
    }

    /// Coding with an app-data key chosen at run time.
    private struct Envelope: Codable {
        static let keyInfo = CodingUserInfoKey(rawValue: "homeport.appDataKey")!

        var payload: PushPayload
        var appDataKey: String

        init(payload: PushPayload, appDataKey: String) {
            self.payload = payload
            self.appDataKey = appDataKey
        }

        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            appDataKey = decoder.userInfo[Self.keyInfo] as? String ?? PushPayload.defaultAppDataKey
            let container = try decoder.container(keyedBy: Key.self)
            payload = PushPayload(
                aps: try container.decode(APS.self, forKey: Key(stringValue: "aps")),
                appData: try container.decodeIfPresent(PushAppData.self, forKey: Key(stringValue: appDataKey)))
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(payload.aps, forKey: Key(stringValue: "aps"))
            try container.encodeIfPresent(payload.appData, forKey: Key(stringValue: appDataKey))
        }
    }
}

/// The product's part of a push: which server, what happened, about what, and the version of
/// that server's catalogue.
public struct PushAppData: Codable, Hashable, Sendable {
    /// The server's `instanceId`: the key the client keeps the server under. Optional so older
    /// apps (and older servers) interoperate; a client attributes a payload without it only when
    /// exactly one server is enrolled.
    public var s: InstanceID?
    /// The notification code from the server's catalogue (`homeport/core:chat.turn-ended`).
    public var c: String
    /// The object the notification is about (a conversation's id, say), on that server.
    public var id: Int64?
    /// The version of that server's catalogue (``NotificationCatalogue/version``).
    public var mv: String?
    /// The product's own small string values for the app (``NotificationData``); absent when none.
    public var d: [String: String]?

    /// Creates app data.
    public init(s: InstanceID?, c: String, id: Int64?, mv: String?, d: [String: String]? = nil) {
        self.s = s
        self.c = c
        self.id = id
        self.mv = mv
        self.d = d
    }
}
