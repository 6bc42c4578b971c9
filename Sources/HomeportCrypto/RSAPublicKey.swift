import COpenSSL

/// An RSA public key, from its modulus and exponent (as a JSON Web Key carries them), that
/// checks PKCS #1 v1.5 signatures over SHA-256 (JWS `RS256`), with OpenSSL.
///
/// Keys under 2048 bits are refused: an identity provider's signing key that short is one an
/// attacker may factor.
public final class RSAPublicKey: @unchecked Sendable {
    private let key: OpaquePointer

    /// The smallest modulus accepted, in bits.
    public static let minimumBits = 2048

    /// The key with big-endian `modulus` and `exponent`; throws a sentence when it is not a usable
    /// RSA key (too short, an even or tiny exponent, a modulus over 8192 bits).
    public init(modulus: [UInt8], exponent: [UInt8]) throws {
        let n = Array(modulus.drop { $0 == 0 })
        let e = Array(exponent.drop { $0 == 0 })
        guard n.count * 8 >= Self.minimumBits - 7, n.count <= 1024 else {
            throw CryptoError.badKey("an RSA modulus of \(n.count * 8) bits (2048 to 8192 accepted)")
        }
        guard (1...8).contains(e.count), e.last.map({ $0 & 1 == 1 }) == true, e != [1] else {
            throw CryptoError.badKey("an RSA exponent that is not odd and above 1")
        }
        let info = Self.publicKeyInfo(modulus: n, exponent: e)
        let parsed: OpaquePointer? = info.withUnsafeBufferPointer { buffer in
            var pointer = buffer.baseAddress
            return d2i_PUBKEY(nil, &pointer, buffer.count)
        }
        ERR_clear_error()
        guard let parsed else { throw CryptoError.badKey("OpenSSL cannot read the RSA key") }
        guard EVP_PKEY_get_bits(parsed) >= Int32(Self.minimumBits) else {
            EVP_PKEY_free(parsed)
            throw CryptoError.badKey("an RSA key under \(Self.minimumBits) bits")
        }
        key = parsed
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// Whether `signature` is this key's RS256 signature (PKCS #1 v1.5, SHA-256) of `message`.
    public func isValidSignature(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        defer { ERR_clear_error() }
        guard !signature.isEmpty, let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        return EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1
            && EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
    }

    /// DER `SubjectPublicKeyInfo { rsaEncryption, RSAPublicKey { n, e } }`.
    static func publicKeyInfo(modulus: [UInt8], exponent: [UInt8]) -> [UInt8] {
        let rsaEncryption: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00]
        let key = DER.sequence(DER.integer(modulus) + DER.integer(exponent))
        return DER.sequence(DER.sequence(rsaEncryption) + DER.element(0x03, [0x00] + key))
    }
}

/// The few DER encodings ``RSAPublicKey`` writes.
enum DER {
    /// A tag, its length and its contents.
    static func element(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        [tag] + length(contents.count) + contents
    }

    static func sequence(_ contents: [UInt8]) -> [UInt8] { element(0x30, contents) }

    /// A non-negative INTEGER from big-endian bytes without leading zeros.
    static func integer(_ magnitude: [UInt8]) -> [UInt8] {
        let bytes = magnitude.isEmpty ? [0] : magnitude
        return element(0x02, (bytes[0] & 0x80 != 0 ? [0x00] : []) + bytes)
    }

    static func length(_ count: Int) -> [UInt8] {
        guard count >= 0x80 else { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var rest = count
        while rest > 0 {
            bytes.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }
}
