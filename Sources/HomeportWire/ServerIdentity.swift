/// The body of `GET /api/v1/server-identity`: who this installation is.
///
/// Exactly three fields travel in the plain answer; to a request with a challenge, an
/// installation with a key adds `publicKey` and `signature` (see ``IdentityProof``). The route is
/// public and carries no credential in either direction.
public struct ServerIdentity: Codable, Hashable, Sendable {
    /// The product name the operator configured (`"homeport"` by default).
    public var product: String
    /// The protocol version the server speaks; see ``HomeportProtocol/version``.
    public var protocolVersion: Int
    /// The installation's persisted identifier.
    public var instanceId: InstanceID
    /// The installation key's public half (``IdentityProof/writeKey(_:)``), in an answer to a
    /// challenge from a server with a key.
    public var publicKey: String?
    /// The key's signature of ``IdentityProof/message(instanceId:challenge:host:)`` for the
    /// request's challenge, base64url; only in an answer to a challenge.
    public var signature: String?

    /// Creates an identity answer.
    public init(
        product: String, protocolVersion: Int = HomeportProtocol.version, instanceId: InstanceID,
        publicKey: String? = nil, signature: String? = nil
    ) {
        self.product = product
        self.protocolVersion = protocolVersion
        self.instanceId = instanceId
        self.publicKey = publicKey
        self.signature = signature
    }
}

/// Constants of the Homeport protocol shared by both sides.
public enum HomeportProtocol {
    /// The protocol version this package speaks.
    public static let version = 1
    /// The default product name.
    public static let defaultProduct = "homeport"
}
