import Foundation
import HomeportWire

/// Names the enrolled server a push came from, and resolves its thread and deep link there
/// (PROTOCOL §4). It fails closed: a push is attributed to a server only when its app data names
/// that server by `s` (the server's `instanceId`, the key the client keeps it under), or when it
/// names none and exactly one server is enrolled. It never guesses.
///
/// `s` is attribution, not authentication: every server that holds the developer account's push
/// key can send any payload to the app. What routing prevents is the accident the seed describes —
/// a push from one server opening, threading or resyncing as another's.
public struct PushRouter: Sendable {
    /// The most bytes of payload read: twice what APNs delivers, so that a payload the app
    /// serialised again still fits.
    public static let maximumBytes = 2 * PushPayload.maximumBytes

    /// The key of the product's block (`homeport` unless the product names its own).
    public var appDataKey: String
    /// The scheme of deep links: `<scheme>://session/{id}`.
    public var deepLinkScheme: String

    /// Creates a router.
    public init(appDataKey: String = PushPayload.defaultAppDataKey, deepLinkScheme: String = "homeport") {
        self.appDataKey = appDataKey
        self.deepLinkScheme = deepLinkScheme
    }

    /// Whether `scheme` is a URL scheme (a letter, then letters, digits, `+`, `-` or `.`).
    public static func isValidScheme(_ scheme: String) -> Bool {
        guard let first = scheme.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else {
            return false
        }
        return scheme.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0))
        }
    }

    /// Routes `payload` (the notification's JSON, as delivered) among `servers` (every enrolled
    /// server). Throws ``PushRoutingFailure`` when it cannot say for sure which server sent it.
    public func route(_ payload: Data, among servers: [ServerRecord]) throws -> RoutedPush {
        let push = try decode(payload)
        guard let app = push.appData else { throw PushRoutingFailure.noAppData(key: appDataKey) }
        let record: ServerRecord
        let attribution: RoutedPush.Attribution
        if let s = app.s {
            guard let named = servers.first(where: { $0.instanceID == s }) else {
                throw PushRoutingFailure.unknownServer(s)
            }
            record = named
            attribution = .serverID
        } else {
            // Only an older server (no installation id) sends pushes without `s`: a server with an
            // id always names itself, so a push without `s` is not from it — with one server
            // left after another was removed, the removed one's pushes must not land here.
            guard servers.count == 1, servers[0].instanceID == nil else {
                throw PushRoutingFailure.unattributable(enrolled: servers.count)
            }
            record = servers[0]
            attribution = .onlyServer
        }
        let thread = try push.aps.threadID.map { try localThread($0, of: record) }
        let linkID = app.id.flatMap { id in
            Self.isValidScheme(deepLinkScheme) ? URL(string: "\(deepLinkScheme)://session/\(id)") : nil
        }
        return RoutedPush(
            server: record.key, instanceID: record.instanceID, attribution: attribution,
            code: ServerText.clean(app.c), objectID: app.id, thread: thread,
            threadID: thread.map { "\(record.key):\($0)" }, deepLink: linkID,
            catalogueVersion: app.mv.map { ServerText.clean($0) }, title: ServerText.clean(push.aps.alert?.title ?? ""),
            body: push.aps.alert?.body.map { ServerText.clean($0) }, isSilent: push.aps.isSilent)
    }

    /// The payload, read twice — keeping the first and the last of any key given twice — and
    /// refused when the two readings differ: two readers (this one, the app's) must never see two
    /// servers in one payload.
    private func decode(_ payload: Data) throws -> PushPayload {
        guard payload.count <= Self.maximumBytes else {
            throw PushRoutingFailure.unreadable("the payload is larger than \(Self.maximumBytes) bytes")
        }
        // An APNs payload (a decrypted Web Push is one too), or an FCM message: `aps`, or `data`.
        let object = try? JSONSerialization.jsonObject(with: payload) as? [String: Any]
        let isFCM = object?["aps"] == nil && object?["data"] != nil
        let read = { (bytes: Data) in
            isFCM ? try PushPayload(decodingFCM: bytes) : try PushPayload(decoding: bytes, appDataKey: appDataKey)
        }
        let first: PushPayload
        do {
            first = try read(payload)
        } catch {
            throw PushRoutingFailure.unreadable("not a push payload (\(Self.reason(error)))")
        }
        guard let object, let again = try? JSONSerialization.data(withJSONObject: object),
            let last = try? read(again)
        else { throw PushRoutingFailure.unreadable("not a push payload") }
        guard first == last else { throw PushRoutingFailure.ambiguous }
        return first
    }

    /// The server's own thread id out of a payload's `thread-id` (see ``ThreadName/local(_:of:)``).
    private func localThread(_ threadID: String, of record: ServerRecord) throws -> String {
        switch ThreadName.local(threadID, of: record) {
        case .own(let local): return local
        case .otherServer(let other): throw PushRoutingFailure.threadOfAnotherServer(other)
        case .invalid: throw PushRoutingFailure.unreadable("the thread id is not a thread name")
        }
    }

    private static func reason(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "no \(key.stringValue)"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
            DecodingError.dataCorrupted(let context):
            context.codingPath.isEmpty
                ? "not JSON" : "bad \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        default: "not JSON"
        }
    }
}

/// A push attributed to one enrolled server, with its thread and deep link resolved there.
public struct RoutedPush: Sendable, Equatable {
    /// How the server was named.
    public enum Attribution: String, Sendable, Equatable {
        /// The payload's `s` is the server's `instanceId`.
        case serverID
        /// The payload has no `s`, and this is the only enrolled server, an older one without an
        /// installation id (which never names itself).
        case onlyServer
    }

    /// The key the server is kept under (its `instanceId`).
    public var server: String
    /// The server's `instanceId`, when it has one.
    public var instanceID: InstanceID?
    /// How the server was named.
    public var attribution: Attribution
    /// The notification code (`homeport/core:chat.turn-ended`).
    public var code: String
    /// The object on that server the push is about.
    public var objectID: Int64?
    /// The thread as the server names it (`chat:42`).
    public var thread: String?
    /// The thread across servers: `<server>:<thread>`, so two servers' threads never merge.
    public var threadID: String?
    /// `<scheme>://session/{id}`, to be opened on ``server`` and nowhere else.
    public var deepLink: URL?
    /// The server's catalogue version the push was sent with (`mv`).
    public var catalogueVersion: String?
    /// The banner's title (empty when it has none: a string alert, a silent push).
    public var title: String
    /// The banner's body (a string alert is one).
    public var body: String?
    /// A silent push (`content-available` and no alert): nothing to show; the app refreshes
    /// ``server``'s data.
    public var isSilent = false
    /// Whether `mv` differs from the catalogue this client keeps for ``server`` (set by the client).
    public var resyncDue = false
    /// The code's title in the catalogue kept for ``server`` (set by the client), if it is there.
    public var codeTitle: String?
}

/// Why a push was not attributed to any server.
public enum PushRoutingFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not a push payload (not JSON, no `aps`, a bad field, too large).
    case unreadable(String)
    /// No app-data block under the product's key.
    case noAppData(key: String)
    /// `s` names no enrolled server.
    case unknownServer(InstanceID)
    /// No `s`, and not exactly one server enrolled.
    case unattributable(enrolled: Int)
    /// The thread id is namespaced with another installation's id than the server it came from.
    case threadOfAnotherServer(InstanceID)
    /// A key given twice changes what the payload says.
    case ambiguous

    /// A sentence for people.
    public var description: String {
        switch self {
        case .unreadable(let reason): "the push cannot be read: \(reason)"
        case .noAppData(let key): "the push has no '\(key)' block, so it cannot say which server sent it"
        case .unknownServer(let id): "the push names server \(id), which is not enrolled here"
        case .unattributable(let count):
            switch count {
            case 0: "the push does not say which server sent it, and no server is enrolled"
            case 1:
                "the push does not say which server sent it, and the one server enrolled names itself in "
                    + "every push, so it came from another (one removed from this device?)"
            default: "the push does not say which server sent it, and \(count) servers are enrolled"
            }
        case .threadOfAnotherServer(let id):
            "the push's thread id belongs to another server (\(id)) than the one that sent it"
        case .ambiguous: "the push gives a field twice with different values"
        }
    }
}

/// What an app shows its user when a push cannot be routed (the precise reason is
/// ``PushRoutingFailure/description``, for logs).
extension PushRoutingFailure: LocalizedError {
    /// What happened, for the app's user.
    public var errorDescription: String? {
        switch self {
        case .unreadable, .noAppData, .ambiguous: "A notification could not be read."
        case .unknownServer: "A notification came from a server that is not among yours."
        case .unattributable: "A notification did not say which of your servers sent it."
        case .threadOfAnotherServer: "A notification claimed to belong to another server's conversation."
        }
    }

    /// What the app's user can do about it.
    public var recoverySuggestion: String? {
        switch self {
        case .unknownServer: "If you removed that server, sign out of it on the server too, so it stops notifying you."
        case .unreadable, .noAppData, .ambiguous, .unattributable, .threadOfAnotherServer:
            "It was not shown. Open the app to see what is new."
        }
    }
}

/// The server's own thread names: 1–128 characters of `A-Z a-z 0-9 : . _ -`.
public enum ThreadName {
    /// What a thread id is to one server.
    public enum Reading: Sendable, Equatable {
        /// The server's own thread name.
        case own(String)
        /// A thread id namespaced with another installation's id.
        case otherServer(InstanceID)
        /// Not a thread name.
        case invalid
    }

    /// The server's own name out of `threadID`: `<instanceId>:<thread>` with `record`'s id loses
    /// the prefix, a bare thread name stays as it is (an older server, or a person typing `chat:42`),
    /// and one namespaced with another installation's id is that server's, not this one's.
    public static func local(_ threadID: String, of record: ServerRecord) -> Reading {
        var local = threadID
        if let id = record.instanceID, let own = NotificationThread.local(threadID, server: id) {
            local = own
        } else if let other = namespace(of: threadID) {
            return .otherServer(other)
        }
        return isValid(local) ? .own(local) : .invalid
    }

    /// The installation id a thread id is namespaced with, if it is.
    static func namespace(of threadID: String) -> InstanceID? {
        let prefix = threadID.prefix(37)
        guard prefix.count == 37, prefix.last == ":" else { return nil }
        return InstanceID(String(prefix.dropLast()))
    }

    /// Whether `name` is a thread name the API accepts.
    public static func isValid(_ name: String) -> Bool {
        (1...128).contains(name.utf8.count)
            && name.utf8.allSatisfy {
                (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0)
                    || [0x3A, 0x2E, 0x5F, 0x2D].contains($0)
            }
    }
}
