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

    /// The members read, each of its JSON type (`crossOrigin` a boolean, not a number).
    private struct Members: Decodable {
        var type: String
        var challenge: String
        var origin: String
        var crossOrigin: Bool?
    }

    /// Reads the JSON `bytes`; throws when they are not client data.
    public init(_ bytes: [UInt8]) throws {
        guard bytes.count <= 4096,
            (try? JSONSerialization.jsonObject(with: Data(bytes))) is [String: Any]
        else { throw WebAuthnError.malformed("client data that is not a JSON object") }
        guard let members = try? JSONDecoder().decode(Members.self, from: Data(bytes)) else {
            throw WebAuthnError.malformed(
                "client data without type, challenge and origin as text, or crossOrigin as a boolean")
        }
        guard let decoded = IdentityProof.readBase64URL(members.challenge) else {
            throw WebAuthnError.malformed("a challenge that is not base64url")
        }
        type = members.type
        challenge = decoded
        origin = members.origin
        crossOrigin = members.crossOrigin ?? false
    }
}
