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
        guard pem.contains("-----BEGIN") else {
            throw CryptoError.badKey("it is not a PEM key (no -----BEGIN line)")
        }
        let bytes = Array(pem.utf8)
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        ERR_clear_error()
        guard let parsed else { throw CryptoError.badKey("OpenSSL cannot read a private key from it") }
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
        var der: UnsafeMutablePointer<UInt8>?
        let length = i2d_PrivateKey(key, &der)
        guard length > 0, let der else { throw CryptoError.badKey("OpenSSL cannot encode the private key") }
        defer {
            der.initialize(repeating: 0, count: Int(length))
            CRYPTO_free(der, nil, 0)
        }
        return Digest.hmacSHA256(key: Array(UnsafeBufferPointer(start: der, count: Int(length))), Array(label.utf8))
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
