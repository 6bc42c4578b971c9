import COpenSSL

/// An Ed25519 private key, from OpenSSL: the installation key an installation proves itself with.
///
/// Both halves travel as their raw 32 bytes (RFC 8032), and signatures are the raw 64 bytes.
public final class Ed25519Key: @unchecked Sendable {
    let key: OpaquePointer

    /// A new key from the system's random generator.
    public static func generate() throws -> Ed25519Key {
        guard let context = EVP_PKEY_CTX_new_id(NID_ED25519, nil) else {
            throw CryptoError.badKey("no Ed25519 context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var generated: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_keygen(context, &generated) == 1, let generated else {
            ERR_clear_error()
            throw CryptoError.randomUnavailable
        }
        return Ed25519Key(generated)
    }

    /// The key whose raw private half is `bytes` (32 of them).
    public convenience init(privateKey bytes: [UInt8]) throws {
        guard bytes.count == 32,
            let parsed = EVP_PKEY_new_raw_private_key(NID_ED25519, nil, bytes, bytes.count)
        else {
            ERR_clear_error()
            throw CryptoError.badKey("an Ed25519 private key is 32 bytes")
        }
        self.init(parsed)
    }

    private init(_ key: OpaquePointer) {
        self.key = key
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// The raw private half: to be sealed before it is stored anywhere.
    public var privateKey: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 32)
        var length = bytes.count
        _ = EVP_PKEY_get_raw_private_key(key, &bytes, &length)
        return bytes
    }

    /// The raw public half.
    public var publicKey: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 32)
        var length = bytes.count
        _ = EVP_PKEY_get_raw_public_key(key, &bytes, &length)
        return bytes
    }

    /// The signature of `message`: 64 bytes.
    public func sign(_ message: [UInt8]) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.signingFailed }
        defer { EVP_MD_CTX_free(context) }
        var signature = [UInt8](repeating: 0, count: 64)
        var length = signature.count
        guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1,
            EVP_DigestSign(context, &signature, &length, message, message.count) == 1, length == 64
        else {
            ERR_clear_error()
            throw CryptoError.signingFailed
        }
        return signature
    }

    /// Whether `signature` is `publicKey`'s signature of `message`. A key or a signature of the
    /// wrong length is no signature.
    public static func isValidSignature(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == 64, publicKey.count == 32,
            let key = EVP_PKEY_new_raw_public_key(NID_ED25519, nil, publicKey, publicKey.count)
        else {
            ERR_clear_error()
            return false
        }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        let valid =
            EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1
            && EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
        ERR_clear_error()
        return valid
    }
}
