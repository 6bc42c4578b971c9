import COpenSSL
import Foundation

/// A P-256 private key that signs with ECDSA over SHA-256 (JWS `ES256`), from OpenSSL.
///
/// Apple's APNs auth keys (`.p8` files) are PKCS#8 PEM holding such a key. Signatures come out
/// as JWS wants them: the raw 64 bytes `r ‖ s`, not OpenSSL's DER.
public final class ES256Key: @unchecked Sendable {
    private let key: OpaquePointer

    /// Reads a PEM private key (PKCS#8 `-----BEGIN PRIVATE KEY-----`, or SEC1 `EC PRIVATE KEY`);
    /// throws a sentence that says what is wrong when it is not a P-256 key.
    public init(pem: String) throws {
        let parsed = try PrivateKeyPEM.read(pem)
        guard EVP_PKEY_get_base_id(parsed) == homeport_evp_pkey_ec() else {
            EVP_PKEY_free(parsed)
            throw CryptoError.badKey("it is not an elliptic-curve key (APNs keys are P-256)")
        }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(parsed, &name, name.count, &length) == 1,
            ["prime256v1", "P-256", "secp256r1"].contains(
                String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        else {
            EVP_PKEY_free(parsed)
            throw CryptoError.badKey("its curve is not P-256")
        }
        key = parsed
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// The public half: the 65-byte uncompressed point (what VAPID's `k` carries).
    public var publicKey: [UInt8] {
        P256Key.uncompressedPoint(of: key)
    }

    /// A 256-bit secret derived from the private key for `label` (HMAC-SHA256, keyed by the key's
    /// DER encoding): the same wherever the key is, and beyond reach of anyone without it.
    public func derivedSecret(_ label: String) throws -> [UInt8] {
        try PrivateKeyPEM.derivedSecret(key, label)
    }

    /// The ES256 signature of `message`: 64 bytes, `r` then `s`, each big-endian and zero-padded.
    public func sign(_ message: [UInt8]) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.signingFailed }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else { throw CryptoError.signingFailed }
        var length = 0
        guard message.withUnsafeBufferPointer({ EVP_DigestSign(context, nil, &length, $0.baseAddress, $0.count) }) == 1
        else { throw CryptoError.signingFailed }
        var der = [UInt8](repeating: 0, count: length)
        guard
            message.withUnsafeBufferPointer({ EVP_DigestSign(context, &der, &length, $0.baseAddress, $0.count) }) == 1
        else { throw CryptoError.signingFailed }
        return try Self.raw(fromDER: Array(der.prefix(length)))
    }

    /// DER `SEQUENCE { r INTEGER, s INTEGER }` → `r ‖ s`, 32 bytes each.
    static func raw(fromDER der: [UInt8]) throws -> [UInt8] {
        let signature: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &pointer, buffer.count)
        }
        guard let signature else { throw CryptoError.signingFailed }
        defer { ECDSA_SIG_free(signature) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(signature, &r, &s)
        var output = [UInt8](repeating: 0, count: 64)
        guard let r, let s,
            output.withUnsafeMutableBufferPointer({ BN_bn2binpad(r, $0.baseAddress, 32) == 32 }),
            output.withUnsafeMutableBufferPointer({ BN_bn2binpad(s, $0.baseAddress! + 32, 32) == 32 })
        else { throw CryptoError.signingFailed }
        return output
    }
}
