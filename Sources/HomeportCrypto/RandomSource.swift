import COpenSSL
import Foundation

/// A source of cryptographically strong random bytes, injected so tests can be deterministic.
public protocol RandomSource: Sendable {
    /// Fills and returns `count` random bytes.
    func bytes(_ count: Int) throws -> [UInt8]
}

/// OpenSSL's CSPRNG (`RAND_bytes`).
public struct SystemRandom: RandomSource {
    /// Creates the source.
    public init() {}

    /// Random bytes from `RAND_bytes`; throws if OpenSSL cannot produce them.
    public func bytes(_ count: Int) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        guard count == 0 || RAND_bytes(&buffer, Int32(count)) == 1 else {
            throw CryptoError.randomUnavailable
        }
        return buffer
    }
}

/// Failures of the crypto layer.
public enum CryptoError: Error, Equatable, CustomStringConvertible {
    /// The random generator could not produce bytes.
    case randomUnavailable
    /// The key-derivation function failed.
    case kdfFailed
    /// A key cannot be used; the text says why.
    case badKey(String)
    /// Signing failed.
    case signingFailed

    /// A sentence for logs.
    public var description: String {
        switch self {
        case .randomUnavailable: "the system random generator failed"
        case .kdfFailed: "the password key-derivation function failed"
        case .badKey(let why): "the key cannot be used: \(why)"
        case .signingFailed: "signing failed"
        }
    }
}

extension RandomSource {
    /// A random (version 4, RFC 9562) UUID.
    public func uuid() throws -> UUID {
        var raw = try bytes(16)
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7],
                raw[8], raw[9], raw[10], raw[11], raw[12], raw[13], raw[14], raw[15]
            ))
    }
}
