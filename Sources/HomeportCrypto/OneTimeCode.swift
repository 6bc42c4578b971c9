import COpenSSL

/// Time-based one-time codes (RFC 6238 over RFC 4226): HMAC-SHA-1 of the 30-second step
/// since the Unix epoch, six digits, the shape every authenticator app reads from an
/// `otpauth://totp/` URL.
public enum OneTimeCode {
    /// Seconds per step.
    public static let period: Int64 = 30
    /// Digits per code.
    public static let digits = 6

    /// The step a moment falls in.
    public static func step(at unixSeconds: Int64) -> Int64 {
        unixSeconds >= 0 ? unixSeconds / period : (unixSeconds - period + 1) / period
    }

    /// The code of `step` for `secret` (the secret's raw bytes), zero-padded to six digits.
    public static func code(secret: [UInt8], step: Int64) -> String {
        var counter = [UInt8](repeating: 0, count: 8)
        for index in 0..<8 { counter[7 - index] = UInt8(truncatingIfNeeded: UInt64(bitPattern: step) >> (8 * index)) }
        let mac = hmacSHA1(key: secret, counter)
        let offset = Int(mac[19] & 0x0F)
        let value =
            (UInt32(mac[offset] & 0x7F) << 24 | UInt32(mac[offset + 1]) << 16 | UInt32(mac[offset + 2]) << 8
                | UInt32(mac[offset + 3])) % 1_000_000
        let text = String(value)
        return String(repeating: "0", count: digits - text.count) + text
    }

    /// The steps around `step` whose code `code` is, latest first, within `tolerance` steps either
    /// way (clock skew between the phone and the server). Compared in constant time; a code that
    /// is not six ASCII digits matches nothing.
    public static func matchingSteps(
        _ code: String, secret: [UInt8], around step: Int64, tolerance: Int64 = 1
    ) -> [Int64] {
        let sent = Array(code.utf8)
        guard sent.count == digits, sent.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return []
        }
        var matches: [Int64] = []
        for candidate in stride(from: step + tolerance, through: step - tolerance, by: -1)
        where Digest.constantTimeEquals(Array(Self.code(secret: secret, step: candidate).utf8), sent) {
            matches.append(candidate)
        }
        return matches
    }

    /// The HMAC-SHA-1 of `message` under `key` (RFC 4226 asks for SHA-1; as an HMAC it is sound).
    static func hmacSHA1(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                _ = HMAC(
                    EVP_sha1(), k.baseAddress, Int32(k.count), m.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    m.count, &output, &length)
            }
        }
        return output
    }
}

/// RFC 4648 base32 (upper case, no padding), the form an `otpauth://` URL carries a secret in.
public enum Base32 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// `bytes` in base32, without padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int(buffer >> UInt32(bits - 5) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[Int(buffer << UInt32(5 - bits) & 31)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of base32 text, in either case, padding and spaces ignored; `nil` for anything
    /// else.
    public static func decode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in text.utf8 where byte != UInt8(ascii: "=") && byte != UInt8(ascii: " ") {
            let upper = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) ? byte - 32 : byte
            guard let value = alphabet.firstIndex(of: upper) else { return nil }
            buffer = buffer << 5 | UInt32(value)
            bits += 5
            if bits >= 8 {
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits - 8)))
                bits -= 8
            }
        }
        return out
    }
}
