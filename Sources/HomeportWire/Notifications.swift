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

/// `POST /api/v1/push/devices`: a device token to push to (and the answer, echoing it).
public struct PushDeviceRegistration: Codable, Hashable, Sendable {
    /// The APNs device token, in hex (64 characters today; Apple may lengthen it).
    public var token: String
    /// `sandbox` or `production`: which APNs host the token belongs to.
    public var environment: PushEnvironment

    /// Creates a registration.
    public init(token: String, environment: PushEnvironment) {
        self.token = token
        self.environment = environment
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
