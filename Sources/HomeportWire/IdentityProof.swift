import Foundation

/// How an installation proves, for one probe, that it holds its installation key: what it
/// signs, and how the key and the signature are written on the wire. Both sides build the signed
/// bytes here, so that they cannot drift apart.
///
/// The key is ECDSA P-256 (with SHA-256), written `p256:` and its 65-byte uncompressed point in
/// base64url without padding, its signature the raw 64 bytes `r ‖ s` the same way — a key every
/// TLS stack (browsers, Apple's) accepts in a certificate. Installations whose key was made before
/// P-256 have an Ed25519 key (RFC 8032), written `ed25519:` and its 32 raw bytes, and sign with it
/// (64 raw bytes); both are read everywhere.
public enum IdentityProof {
    /// What the signed bytes begin with: a signature made for anything else never verifies here.
    public static let context = "homeport-identity-proof-v1"

    /// The kinds of installation key.
    public enum KeyKind: String, Sendable, CaseIterable {
        /// ECDSA P-256: the key of new installations.
        case p256
        /// Ed25519: the key of installations made before P-256.
        case ed25519

        /// How a written key of this kind begins.
        public var prefix: String { rawValue + ":" }

        /// The kind of a raw public key: 65 bytes starting 0x04 (an uncompressed P-256 point) or
        /// 32 bytes (Ed25519); `nil` for anything else.
        public init?(raw: [UInt8]) {
            switch raw.count {
            case 65 where raw.first == 0x04: self = .p256
            case 32: self = .ed25519
            default: return nil
            }
        }
    }
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

    /// A raw public key (see ``KeyKind/init(raw:)``) as written on the wire.
    public static func writeKey(_ raw: [UInt8]) -> String {
        (KeyKind(raw: raw)?.prefix ?? "unknown:") + base64URL(raw)
    }

    /// The raw public key written as ``writeKey(_:)`` writes it, of the kind its prefix names;
    /// `nil` for anything else.
    public static func readKey(_ text: String) -> [UInt8]? {
        for kind in KeyKind.allCases where text.hasPrefix(kind.prefix) {
            guard let raw = readBase64URL(String(text.dropFirst(kind.prefix.count))), KeyKind(raw: raw) == kind
            else { return nil }
            return raw
        }
        return nil
    }

    /// A key's fingerprint as people compare it, from the SHA-256 of its raw public key: `SHA256:`
    /// and the digest in base64 without padding, as `ssh-keygen -l` writes one.
    public static func fingerprint(sha256 digest: [UInt8]) -> String {
        "SHA256:" + Data(digest).base64EncodedString().replacingOccurrences(of: "=", with: "")
    }

    /// The SHA-256 digest a fingerprint (`SHA256:` and 43 characters of base64) shows; `nil` for
    /// anything else.
    public static func readFingerprint(_ text: String) -> [UInt8]? {
        guard text.hasPrefix("SHA256:") else { return nil }
        let encoded = text.dropFirst("SHA256:".count)
        guard encoded.count == 43, let data = Data(base64Encoded: encoded + "="), data.count == 32 else { return nil }
        return Array(data)
    }

    /// A challenge's bytes, when it is base64url of 16 to 64 bytes; `nil` otherwise.
    public static func readChallenge(_ text: String) -> [UInt8]? {
        guard let raw = readBase64URL(text),
            (minimumChallengeBytes...maximumChallengeBytes).contains(raw.count)
        else { return nil }
        return raw
    }

    /// Base64url without padding, written byte by byte (no Foundation: the identity route writes
    /// one for every challenge).
    public static func base64URL(_ bytes: [UInt8]) -> String {
        var output = [UInt8]()
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 2 < bytes.count {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output += [alphabet[Int(chunk >> 18)], alphabet[Int(chunk >> 12 & 63)]]
            output += [alphabet[Int(chunk >> 6 & 63)], alphabet[Int(chunk & 63)]]
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let chunk = UInt32(bytes[index]) << 16
            output += [alphabet[Int(chunk >> 18)], alphabet[Int(chunk >> 12 & 63)]]
        case 2:
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            output += [alphabet[Int(chunk >> 18)], alphabet[Int(chunk >> 12 & 63)], alphabet[Int(chunk >> 6 & 63)]]
        default: break
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes of base64url text without padding; `nil` when it is not exactly that: padding,
    /// the standard alphabet, white space, a length no encoder writes, or unused bits set (which
    /// would let two texts name one value).
    public static func readBase64URL(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard !characters.isEmpty, characters.count % 4 != 1 else { return nil }
        var values = [UInt8]()
        values.reserveCapacity(characters.count)
        for character in characters {
            let value = decoding[Int(character)]
            guard value != 0xFF else { return nil }
            values.append(value)
        }
        var output = [UInt8]()
        output.reserveCapacity(characters.count * 3 / 4)
        var index = 0
        while index + 3 < values.count {
            let chunk =
                UInt32(values[index]) << 18 | UInt32(values[index + 1]) << 12 | UInt32(values[index + 2]) << 6
                | UInt32(values[index + 3])
            output += [UInt8(chunk >> 16), UInt8(chunk >> 8 & 0xFF), UInt8(chunk & 0xFF)]
            index += 4
        }
        switch values.count - index {
        case 2:
            guard values[index + 1] & 0x0F == 0 else { return nil }
            output.append(values[index] << 2 | values[index + 1] >> 4)
        case 3:
            guard values[index + 2] & 0x03 == 0 else { return nil }
            let chunk = UInt32(values[index]) << 18 | UInt32(values[index + 1]) << 12 | UInt32(values[index + 2]) << 6
            output += [UInt8(chunk >> 16), UInt8(chunk >> 8 & 0xFF)]
        default: break
        }
        return output
    }

    /// The base64url alphabet.
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Each byte's value in ``alphabet``, 0xFF for a byte outside it.
    private static let decoding: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in alphabet.enumerated() { table[Int(character)] = UInt8(value) }
        return table
    }()
}
