import Foundation
import HomeportWire

/// The browser's account of a ceremony (`clientDataJSON`, WebAuthn §5.8.1): which ceremony,
/// the challenge it answers, and the page it ran on.
public struct ClientData: Sendable, Hashable {
    /// `webauthn.create` or `webauthn.get`.
    public let type: String
    /// The challenge, decoded.
    public let challenge: [UInt8]
    /// The page's origin (`https://books.example.net`).
    public let origin: String
    /// Whether the ceremony ran in a frame of another site.
    public let crossOrigin: Bool

    /// Reads the JSON `bytes`; throws when they are not client data.
    public init(_ bytes: [UInt8]) throws {
        guard bytes.count <= 4096,
            let object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
        else { throw WebAuthnError.malformed("client data that is not a JSON object") }
        guard let type = object["type"] as? String, let challenge = object["challenge"] as? String,
            let origin = object["origin"] as? String
        else { throw WebAuthnError.malformed("client data without type, challenge and origin") }
        guard let decoded = IdentityProof.readBase64URL(challenge) else {
            throw WebAuthnError.malformed("a challenge that is not base64url")
        }
        self.type = type
        self.challenge = decoded
        self.origin = origin
        crossOrigin = object["crossOrigin"] as? Bool ?? false
    }
}
