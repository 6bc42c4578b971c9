import HomeportCrypto

/// A credential's public key as a COSE key (RFC 9053), in one of the algorithms Homeport
/// accepts: ES256 (P-256), EdDSA (Ed25519) and RS256 (RSA of 2048 bits or more).
public struct COSEKey: Sendable, Hashable {
    /// The signature algorithms accepted, by their COSE numbers.
    public enum Algorithm: Int64, Sendable, CaseIterable {
        /// ECDSA on P-256 with SHA-256.
        case es256 = -7
        /// Ed25519.
        case edDSA = -8
        /// RSASSA-PKCS1-v1_5 with SHA-256.
        case rs256 = -257
    }

    private enum Material: Sendable, Hashable {
        /// The uncompressed point, `04 ‖ x ‖ y`.
        case p256(point: [UInt8])
        case ed25519(publicKey: [UInt8])
        case rsa(modulus: [UInt8], exponent: [UInt8])
    }

    /// The key's algorithm.
    public let algorithm: Algorithm
    private let material: Material

    /// The key as COSE bytes (as it is stored).
    public var encoded: [UInt8] {
        var map: [CBOR: CBOR] = [.int(3): .int(algorithm.rawValue)]
        switch material {
        case .p256(let point):
            map[.int(1)] = .int(2)
            map[.int(-1)] = .int(1)
            map[.int(-2)] = .bytes(Array(point[1..<33]))
            map[.int(-3)] = .bytes(Array(point[33..<65]))
        case .ed25519(let key):
            map[.int(1)] = .int(1)
            map[.int(-1)] = .int(6)
            map[.int(-2)] = .bytes(key)
        case .rsa(let modulus, let exponent):
            map[.int(1)] = .int(3)
            map[.int(-1)] = .bytes(modulus)
            map[.int(-2)] = .bytes(exponent)
        }
        return CBOR.map(map).encoded
    }

    /// The key in `item`, a COSE key map; throws a sentence when it is not one of an accepted
    /// algorithm, or not a key of it (a point off the curve, an RSA key under 2048 bits).
    public init(_ item: CBOR) throws {
        guard item.map != nil else { throw WebAuthnError.malformed("the public key is not a COSE key map") }
        guard let number = item[label: 3]?.integer else {
            throw WebAuthnError.malformed("the public key names no algorithm")
        }
        guard let algorithm = Algorithm(rawValue: number) else { throw WebAuthnError.unsupportedAlgorithm(number) }
        let keyType = item[label: 1]?.integer
        switch algorithm {
        case .es256:
            guard keyType == 2, item[label: -1]?.integer == 1, let x = item[label: -2]?.bytes,
                let y = item[label: -3]?.bytes, x.count == 32, y.count == 32
            else { throw WebAuthnError.malformed("an ES256 key that is not an EC2 P-256 key") }
            let point = [0x04] + x + y
            guard P256Key.isValidPublicKey(point) else { throw WebAuthnError.malformed("an ES256 key off the curve") }
            material = .p256(point: point)
        case .edDSA:
            guard keyType == 1, item[label: -1]?.integer == 6, let x = item[label: -2]?.bytes, x.count == 32 else {
                throw WebAuthnError.malformed("an EdDSA key that is not an OKP Ed25519 key")
            }
            material = .ed25519(publicKey: x)
        case .rs256:
            guard keyType == 3, let modulus = item[label: -1]?.bytes, let exponent = item[label: -2]?.bytes else {
                throw WebAuthnError.malformed("an RS256 key that is not an RSA key")
            }
            do {
                _ = try RSAPublicKey(modulus: modulus, exponent: exponent)
            } catch {
                throw WebAuthnError.malformed("an RS256 key OpenSSL refuses: \(error)")
            }
            material = .rsa(modulus: modulus, exponent: exponent)
        }
        self.algorithm = algorithm
    }

    /// The key stored as `bytes` (``encoded``).
    public init(encoded bytes: [UInt8]) throws {
        let item: CBOR
        do {
            item = try CBORReader.decode(bytes)
        } catch {
            throw WebAuthnError.malformed("the public key is not CBOR: \(error)")
        }
        try self.init(item)
    }

    /// Whether `signature` is this key's signature of `message` (an ES256 signature in DER, as
    /// WebAuthn sends it).
    public func isValidSignature(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        switch material {
        case .p256(let point): P256Key.isValidSignature(der: signature, of: message, publicKey: point)
        case .ed25519(let key): Ed25519Key.isValidSignature(signature, of: message, publicKey: key)
        case .rsa(let modulus, let exponent):
            (try? RSAPublicKey(modulus: modulus, exponent: exponent))?.isValidSignature(signature, of: message)
                ?? false
        }
    }
}
