/// The body of `GET /api/v1/server-identity`: who this installation is.
///
/// Exactly three fields travel on the wire. The route is public and carries no
/// credential in either direction.
public struct ServerIdentity: Codable, Hashable, Sendable {
    /// The product name the operator configured (`"homeport"` by default).
    public var product: String
    /// The protocol version the server speaks; see ``HomeportProtocol/version``.
    public var protocolVersion: Int
    /// The installation's persisted identifier.
    public var instanceId: InstanceID

    /// Creates an identity answer.
    public init(
        product: String, protocolVersion: Int = HomeportProtocol.version, instanceId: InstanceID
    ) {
        self.product = product
        self.protocolVersion = protocolVersion
        self.instanceId = instanceId
    }
}

/// Constants of the Homeport protocol shared by both sides.
public enum HomeportProtocol {
    /// The protocol version this package speaks.
    public static let version = 1
    /// The default product name.
    public static let defaultProduct = "homeport"
}
