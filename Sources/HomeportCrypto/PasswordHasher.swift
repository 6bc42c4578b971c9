import COpenSSL
import Foundation

/// PBKDF2-HMAC-SHA256 password hashes from OpenSSL, in Django's encoding:
/// `pbkdf2_sha256$<iterations>$<salt>$<base64 hash>`.
///
/// Verification is constant-time and accepts any iteration count stored in the hash, so the
/// cost can be raised without invalidating existing passwords.
public struct PasswordHasher: Sendable {
    /// The default cost: OWASP's 2023 recommendation for PBKDF2-HMAC-SHA256.
    public static let defaultIterations = 600_000

    /// The iteration count used for new hashes.
    public let iterations: Int
    private let random: any RandomSource

    /// Creates a hasher; tests may lower `iterations` (never below 1,000).
    public init(iterations: Int = PasswordHasher.defaultIterations, random: any RandomSource = SystemRandom()) {
        self.iterations = max(1000, iterations)
        self.random = random
    }

    /// A new salted hash of `password`.
    public func hash(_ password: String) throws -> String {
        let salt = Digest.hex(try random.bytes(16))
        let derived = try Self.derive(password, salt: salt, iterations: iterations)
        return "pbkdf2_sha256$\(iterations)$\(salt)$\(Data(derived).base64EncodedString())"
    }

    /// Whether `password` matches `encoded`; false for any malformed hash.
    public func verify(_ password: String, against encoded: String) -> Bool {
        let parts = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "pbkdf2_sha256", let rounds = Int(parts[1]), rounds >= 1,
            rounds <= 100_000_000, let expected = Data(base64Encoded: String(parts[3])),
            let derived = try? Self.derive(password, salt: String(parts[2]), iterations: rounds)
        else { return false }
        return Digest.constantTimeEquals(derived, Array(expected))
    }

    /// Spends the same time as a verification, for answers that must not reveal whether an account exists.
    public func verifyAgainstNothing(_ password: String) {
        _ = try? Self.derive(password, salt: "0000000000000000", iterations: iterations)
    }

    private static func derive(_ password: String, salt: String, iterations: Int) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        let passwordBytes = Array(password.utf8)
        let saltBytes = Array(salt.utf8)
        let status = passwordBytes.withUnsafeBufferPointer { pw in
            saltBytes.withUnsafeBufferPointer { s in
                PKCS5_PBKDF2_HMAC(
                    pw.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                    Int32(pw.count), s.baseAddress, Int32(s.count), Int32(iterations), EVP_sha256(), 32, &output)
            }
        }
        guard status == 1 else { throw CryptoError.kdfFailed }
        return output
    }
}
