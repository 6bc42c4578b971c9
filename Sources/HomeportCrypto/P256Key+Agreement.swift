import COpenSSL

extension P256Key {
    /// The ECDH shared secret (the 32-byte x coordinate) of this key and `peerPublicKey`, a
    /// 65-byte uncompressed P-256 point. A point that is not on the curve is refused.
    public func sharedSecret(with peerPublicKey: [UInt8]) throws -> [UInt8] {
        guard peerPublicKey.count == 65, peerPublicKey.first == 0x04, let peer = PublicKeys.parsed(peerPublicKey)
        else { throw CryptoError.badKey("not a P-256 public key") }
        guard let context = EVP_PKEY_CTX_new(key, nil) else { throw CryptoError.badKey("no key-agreement context") }
        defer { EVP_PKEY_CTX_free(context) }
        var secret = [UInt8](repeating: 0, count: 32)
        var length = secret.count
        guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_derive_set_peer(context, peer.key) == 1,
            EVP_PKEY_derive(context, &secret, &length) == 1, length == 32
        else {
            ERR_clear_error()
            throw CryptoError.badKey("the key agreement failed")
        }
        return secret
    }
}

extension P256Key {
    /// Whether `point` is a 65-byte uncompressed point on P-256.
    public static func isValidPublicKey(_ point: [UInt8]) -> Bool {
        point.count == 65 && point.first == 0x04 && PublicKeys.parsed(point) != nil
    }
}

extension P256Key {
    /// The 65-byte uncompressed point of an OpenSSL P-256 key; empty when it has none.
    static func uncompressedPoint(of key: OpaquePointer) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 65)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(key, "encoded-pub-key", &bytes, bytes.count, &length) == 1,
            length == 65
        else {
            ERR_clear_error()
            return []
        }
        return bytes
    }
}
