/// Random secrets handed to clients (session tokens, reset keys), and the form they are stored in.
///
/// A token is 256 random bits in base64url without padding (43 characters). The server stores
/// only its SHA-256, so a leaked database holds no working token.
public enum SecretToken {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// A new token from `random`.
    public static func generate(_ random: any RandomSource = SystemRandom()) throws -> String {
        base64URL(try random.bytes(32))
    }

    /// The stored form of a token: its SHA-256 in hex.
    public static func storedForm(of token: String) -> String {
        Digest.sha256Hex(token)
    }

    /// Whether `text` has the shape of a token (43 base64url characters); a cheap filter before any lookup.
    public static func isWellFormed(_ text: String) -> Bool {
        guard text.utf8.count == 43 else { return false }
        // Every request with a token passes here: over the bytes in place when they are (a native
        // string's are), without a closure call per byte.
        return text.utf8.withContiguousStorageIfAvailable { bytes in
            var valid = true
            for byte in bytes { valid = valid && isAlphabet(byte) }
            return valid
        } ?? text.utf8.allSatisfy(isAlphabet)
    }

    /// A base64url character: `A`–`Z`, `a`–`z`, `0`–`9`, `-`, `_`.
    @inline(__always)
    private static func isAlphabet(_ byte: UInt8) -> Bool {
        // Setting bit 5 folds `A`–`Z` onto `a`–`z` and nothing else onto them.
        (byte | 0x20) &- UInt8(ascii: "a") < 26 || byte &- UInt8(ascii: "0") < 10 || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "_")
    }

    /// base64url without padding.
    public static func base64URL(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 2 < bytes.count {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out += [
                alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)],
                alphabet[Int(n & 63)],
            ]
            index += 3
        }
        let rest = bytes.count - index
        if rest == 1 {
            let n = UInt32(bytes[index]) << 16
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)]]
        } else if rest == 2 {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)]]
        }
        return String(decoding: out, as: UTF8.self)
    }
}
