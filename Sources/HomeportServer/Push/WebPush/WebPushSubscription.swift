import Foundation
import HomeportCrypto
import HomeportWire

/// The rules for a Web Push subscription a device registers: its endpoint and its keys.
enum WebPushSubscription {
    /// The prefix of the name the server gives a subscription (`webpush:` and 64 hex digits).
    static let tokenPrefix = "webpush:"

    /// The server's name for the subscription at `endpoint`: `webpush:` and the SHA-256 of the
    /// endpoint, in hex (an endpoint is a secret of its device: it never goes in a path or a log).
    static func token(endpoint: String) -> String {
        tokenPrefix + Digest.sha256Hex(endpoint)
    }

    /// Whether `text` is such a name.
    static func isToken(_ text: String) -> Bool {
        text.hasPrefix(tokenPrefix) && text.utf8.count == tokenPrefix.utf8.count + 64
            && text.utf8.dropFirst(tokenPrefix.utf8.count).allSatisfy {
                (0x30...0x39).contains($0) || (0x61...0x66).contains($0)
            }
    }

    /// What is wrong with `endpoint`, or `nil`: an `https://` URL with a host (plain `http://`
    /// only on a loopback address, for tests and a distributor on the same machine), without
    /// user information or a fragment, at most 1024 characters.
    static func endpointProblem(_ endpoint: String) -> String? {
        guard (1...1024).contains(endpoint.utf8.count), endpoint.utf8.allSatisfy({ (0x21...0x7E).contains($0) }),
            let components = URLComponents(string: endpoint), let host = components.host, !host.isEmpty,
            components.user == nil, components.password == nil, components.fragment == nil
        else { return "The endpoint is the push service's https:// URL (at most 1024 characters)." }
        switch components.scheme?.lowercased() {
        case "https": return nil
        case "http" where PushGatewaySettings.isAllowedURL("http://\(components.percentEncodedHost ?? host)/"):
            return nil
        default: return "The endpoint must be https:// (plain http:// only on a loopback address)."
        }
    }

    /// The subscription's public key: base64url of a 65-byte uncompressed P-256 point on the curve.
    static func publicKey(_ text: String) -> [UInt8]? {
        guard let bytes = IdentityProof.readBase64URL(Self.unpadded(text)), bytes.count == 65, bytes.first == 0x04,
            P256Key.isValidPublicKey(bytes)
        else { return nil }
        return bytes
    }

    /// The subscription's authentication secret: base64url of 16 bytes.
    static func authSecret(_ text: String) -> [UInt8]? {
        guard let bytes = IdentityProof.readBase64URL(Self.unpadded(text)), bytes.count == 16 else { return nil }
        return bytes
    }

    /// `text` without the `=` padding some encoders add.
    private static func unpadded(_ text: String) -> String {
        String(text.prefix(200).reversed().drop { $0 == "=" }.reversed())
    }
}
