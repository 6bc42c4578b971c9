import Foundation
import HomeportCrypto

/// An APNs provider token: an ES256 JSON Web Token, `{"alg":"ES256","kid":<key id>}` over
/// `{"iss":<team id>,"iat":<seconds>}`, signed with the developer account's auth key.
///
/// Apple wants it reused: refreshed no more often than every 20 minutes and at least every 60.
public struct ProviderToken: Sendable, Hashable {
    /// The compact JWS.
    public var jwt: String
    /// The key id (`kid`).
    public var keyID: String
    /// The team id (`iss`).
    public var teamID: String
    /// When it was issued (`iat`), in Unix seconds.
    public var issuedAt: Int64

    /// Creates a token from its parts (as stored).
    public init(jwt: String, keyID: String, teamID: String, issuedAt: Int64) {
        self.jwt = jwt
        self.keyID = keyID
        self.teamID = teamID
        self.issuedAt = issuedAt
    }

    /// Signs a new token.
    public static func mint(key: ES256Key, keyID: String, teamID: String, issuedAt: Int64) throws -> ProviderToken {
        let header = #"{"alg":"ES256","kid":"\#(Self.escaped(keyID))"}"#
        let claims = #"{"iss":"\#(Self.escaped(teamID))","iat":\#(issuedAt)}"#
        let signingInput = SecretToken.base64URL(Array(header.utf8)) + "." + SecretToken.base64URL(Array(claims.utf8))
        let signature = try key.sign(Array(signingInput.utf8))
        return ProviderToken(
            jwt: signingInput + "." + SecretToken.base64URL(signature), keyID: keyID, teamID: teamID,
            issuedAt: issuedAt)
    }

    /// Key and team ids are ten uppercase letters and digits; anything else is refused before here,
    /// this only keeps the JSON well formed whatever comes.
    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }

    /// Whether `text` is an Apple key or team id: ten characters of `A-Z` and `0-9`.
    public static func isAppleID(_ text: String) -> Bool {
        text.utf8.count == 10
            && text.utf8.allSatisfy {
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
            }
    }
}
