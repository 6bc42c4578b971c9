import COpenSSL

/// What ``ES256Key`` and ``RSAPrivateKey`` share: reading a PEM private key, and deriving a
/// secret from it.
enum PrivateKeyPEM {
    /// The OpenSSL key in `pem` (PKCS #8, or the algorithm's own PEM form); the caller frees it.
    static func read(_ pem: String) throws -> OpaquePointer {
        guard pem.contains("-----BEGIN") else {
            throw CryptoError.badKey("it is not a PEM file (no -----BEGIN line)")
        }
        let bytes = Array(pem.utf8)
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        ERR_clear_error()
        guard let parsed else { throw CryptoError.badKey("OpenSSL cannot read a private key from it") }
        return parsed
    }

    /// A 256-bit secret derived from `key` for `label` (HMAC-SHA256, keyed by the key's DER
    /// encoding): the same wherever the key is, and beyond reach of anyone without it.
    static func derivedSecret(_ key: OpaquePointer, _ label: String) throws -> [UInt8] {
        var der: UnsafeMutablePointer<UInt8>?
        let length = i2d_PrivateKey(key, &der)
        guard length > 0, let der else { throw CryptoError.badKey("OpenSSL cannot encode the private key") }
        defer {
            der.initialize(repeating: 0, count: Int(length))
            CRYPTO_free(der, nil, 0)
        }
        return Digest.hmacSHA256(key: Array(UnsafeBufferPointer(start: der, count: Int(length))), Array(label.utf8))
    }
}
