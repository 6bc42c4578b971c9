import COpenSSL

/// SHA-256, HMAC-SHA-256 and constant-time comparison from OpenSSL.
public enum Digest {
    /// OpenSSL 3 looks an algorithm up in its providers on every implicit use; fetch it once.
    private struct Algorithm: @unchecked Sendable {
        let md: OpaquePointer?
    }
    private static let sha256Algorithm = Algorithm(md: EVP_MD_fetch(nil, "SHA2-256", nil))

    /// The SHA-256 of `bytes`.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        bytes.withUnsafeBytes { raw in
            _ = EVP_Digest(raw.baseAddress, raw.count, &output, &length, sha256Algorithm.md ?? EVP_sha256(), nil)
        }
        return output
    }

    /// The SHA-256 of a string's UTF-8 bytes, as lowercase hex.
    public static func sha256Hex(_ text: String) -> String {
        hex(sha256(Array(text.utf8)))
    }

    /// The HMAC-SHA-256 of `message` under `key`.
    public static func hmacSHA256(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                _ = HMAC(
                    sha256Algorithm.md ?? EVP_sha256(), k.baseAddress, Int32(k.count),
                    m.baseAddress?.assumingMemoryBound(to: UInt8.self), m.count, &output, &length)
            }
        }
        return output
    }

    /// Whether two byte strings are equal, in time that depends only on their length.
    public static func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        guard !lhs.isEmpty else { return true }
        return lhs.withUnsafeBytes { a in
            rhs.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
    }

    /// Lowercase hex.
    public static func hex(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            for (index, byte) in bytes.enumerated() {
                out[2 * index] = hexDigit(byte >> 4)
                out[2 * index + 1] = hexDigit(byte & 0x0F)
            }
            return bytes.count * 2
        }
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
