import COpenSSL

/// An RSA private key that signs with PKCS #1 v1.5 over SHA-256 (JWS `RS256`), from OpenSSL: the
/// key of a Google service account, whose assertion buys the access token Firebase Cloud
/// Messaging takes.
public final class RSAPrivateKey: @unchecked Sendable {
    private let key: OpaquePointer

    /// Reads a PEM private key (PKCS #8 `-----BEGIN PRIVATE KEY-----`, or PKCS #1
    /// `RSA PRIVATE KEY`); throws a sentence that says what is wrong when it is not an RSA key of
    /// at least 2048 bits.
    public init(pem: String) throws {
        let parsed = try PrivateKeyPEM.read(pem)
        guard EVP_PKEY_get_base_id(parsed) == NID_rsaEncryption else {
            EVP_PKEY_free(parsed)
            throw CryptoError.badKey("it is not an RSA key")
        }
        guard EVP_PKEY_get_bits(parsed) >= Int32(RSAPublicKey.minimumBits) else {
            EVP_PKEY_free(parsed)
            throw CryptoError.badKey("an RSA key under \(RSAPublicKey.minimumBits) bits")
        }
        key = parsed
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// A 256-bit secret derived from the private key for `label` (HMAC-SHA256, keyed by the key's
    /// DER encoding): the same wherever the key is, and beyond reach of anyone without it.
    public func derivedSecret(_ label: String) throws -> [UInt8] {
        try PrivateKeyPEM.derivedSecret(key, label)
    }

    /// The RS256 signature of `message`.
    public func sign(_ message: [UInt8]) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.signingFailed }
        defer { EVP_MD_CTX_free(context) }
        var length = 0
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1,
            EVP_DigestSign(context, nil, &length, message, message.count) == 1
        else {
            ERR_clear_error()
            throw CryptoError.signingFailed
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            ERR_clear_error()
            throw CryptoError.signingFailed
        }
        return Array(signature.prefix(length))
    }
}
