import Foundation

/// How an installation proves, for one probe, that it holds its installation key: what it
/// signs, and how the key and the signature are written on the wire. Both sides build the signed
/// bytes here, so that they cannot drift apart.
///
/// The key is Ed25519 (RFC 8032), written `ed25519:` and its 32 raw bytes in base64url without
/// padding; a signature is its 64 raw bytes the same way.
public enum IdentityProof {
    /// What the signed bytes begin with: a signature made for anything else never verifies here.
    public static let context = "homeport-identity-proof-v1"
    /// The prefix of a written public key.
    public static let keyPrefix = "ed25519:"
    /// Fewest bytes a challenge decodes to.
    public static let minimumChallengeBytes = 16
    /// Most bytes a challenge decodes to.
    public static let maximumChallengeBytes = 64
    /// The query parameter that carries the challenge.
    public static let challengeParameter = "challenge"

    /// The bytes the installation signs for `challenge` (as sent, base64url), asked through
    /// `host` (see ``host(of:)``): the context, the installation's id, the challenge and the host,
    /// one per line.
    public static func message(instanceId: InstanceID, challenge: String, host: String) -> [UInt8] {
        Array([context, instanceId.description, challenge, host].joined(separator: "\n").utf8)
    }

    /// The host an address or a `Host` header names, as both sides write it into the signed
    /// bytes: lowercased, without the port, an IPv6 literal without its brackets. The port and the
    /// scheme are left out because a proxy in front of the server may change them (nginx's
    /// `$host` drops the port). `nil` for an empty host.
    public static func host(of authority: String) -> String? {
        var text = authority.lowercased()
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            text = String(text[text.index(after: text.startIndex)..<close])
        } else if let colon = text.lastIndex(of: ":"), text.firstIndex(of: ":") == colon {
            text = String(text[..<colon])
        }
        return text.isEmpty ? nil : text
    }

    /// A public key as written on the wire.
    public static func writeKey(_ raw: [UInt8]) -> String { keyPrefix + base64URL(raw) }

    /// The raw public key written as ``writeKey(_:)`` writes it; `nil` for anything else.
    public static func readKey(_ text: String) -> [UInt8]? {
        guard text.hasPrefix(keyPrefix), let raw = readBase64URL(String(text.dropFirst(keyPrefix.count))),
            raw.count == 32
        else { return nil }
        return raw
    }

    /// A key's fingerprint as people compare it, from the SHA-256 of its raw public key: `SHA256:`
    /// and the digest in base64 without padding, as `ssh-keygen -l` writes one.
    public static func fingerprint(sha256 digest: [UInt8]) -> String {
        "SHA256:" + Data(digest).base64EncodedString().replacingOccurrences(of: "=", with: "")
    }

    /// A challenge's bytes, when it is base64url of 16 to 64 bytes; `nil` otherwise.
    public static func readChallenge(_ text: String) -> [UInt8]? {
        guard let raw = readBase64URL(text),
            (minimumChallengeBytes...maximumChallengeBytes).contains(raw.count)
        else { return nil }
        return raw
    }

    /// Base64url without padding.
    public static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of base64url text without padding; `nil` when it is not exactly that (padding,
    /// the standard alphabet, white space or a length no encoder writes).
    public static func readBase64URL(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.count % 4 != 1,
            text.utf8.allSatisfy({ byte in
                (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
                    || byte == 0x2D || byte == 0x5F
            })
        else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: standard) else { return nil }
        let bytes = [UInt8](data)
        // Only the canonical spelling: unused bits set would let two texts name one value.
        return base64URL(bytes) == text ? bytes : nil
    }
}
