/// The body of the authenticated `GET /api/v1/app-info`: what this server is and can do.
///
/// Clients use it for feature detection, so it answers even when the identity cannot be read:
/// then ``instanceId`` is absent.
public struct AppInfo: Codable, Hashable, Sendable {
    /// The product name the operator configured.
    public var product: String
    /// The server's software version.
    public var version: String
    /// The protocol version the server speaks.
    public var protocolVersion: Int
    /// Capabilities, such as ``Feature/serverConnectionIdentity``; unknown ones are to be ignored.
    public var features: [String]
    /// The installation's identifier, when it could be read.
    public var instanceId: InstanceID?

    /// Creates an app-info answer.
    public init(
        product: String, version: String, protocolVersion: Int = HomeportProtocol.version, features: [String],
        instanceId: InstanceID?
    ) {
        self.product = product
        self.version = version
        self.protocolVersion = protocolVersion
        self.features = features
        self.instanceId = instanceId
    }
}

/// Names of capabilities a server announces in ``AppInfo/features``.
public enum Feature {
    /// `GET /api/v1/server-identity` exists and app-info carries `instanceId`.
    public static let serverConnectionIdentity = "server-connection-identity"
    /// Native apps authenticate with a session token in ``HomeportHeader/sessionToken``.
    public static let sessionToken = "session-token"
    /// Push payloads carry the server's `instanceId` as `s`.
    public static let pushServerID = "push-server-id"
    /// `GET /api/v1/notifications/stream` carries the account's notifications while the app is open.
    public static let notificationsStream = "notifications-stream"
}

/// The body of `GET /api/v1/auth/standing`: what the session earned on its last attempt to get in.
public struct StandingAnswer: Codable, Hashable, Sendable {
    /// `waiting`, `held`, `mail_failed`, or `nil` for nothing to report.
    public var standing: Standing?

    /// Creates an answer.
    public init(standing: Standing?) {
        self.standing = standing
    }

    /// Encodes `standing` always, as `null` when there is nothing to say.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(standing, forKey: .standing)
    }

    private enum CodingKeys: String, CodingKey {
        case standing
    }
}

/// A pre-login session's standing.
public enum Standing: String, Codable, Hashable, Sendable {
    /// The account waits for approval (also said to a rejected account).
    case waiting
    /// The account is on hold.
    case held
    /// A mail the attempt needed could not be sent.
    case mailFailed = "mail_failed"
}
