import COpenSSL

extension P256Key {
    /// A fresh P-256 key pair used once, for a key agreement with `peerPublicKey` (a 65-byte
    /// uncompressed point on the curve): its public key (65 bytes, uncompressed) and the shared
    /// secret (the 32-byte x coordinate). The private half never leaves this call.
    ///
    /// The same as ``generate()`` and ``sharedSecret(with:)``, on OpenSSL's point arithmetic
    /// rather than its key objects: a third of the time (Web Push makes one per message).
    public static func ephemeralAgreement(with peerPublicKey: [UInt8]) throws -> (
        publicKey: [UInt8], secret: [UInt8]
    ) {
        guard peerPublicKey.count == 65, peerPublicKey.first == 0x04, let group = Curve.group,
            let order = EC_GROUP_get0_order(group)
        else { throw CryptoError.badKey("not a P-256 public key") }
        guard let context = BN_CTX_secure_new() else { throw CryptoError.randomUnavailable }
        defer { BN_CTX_free(context) }
        guard let peer = EC_POINT_new(group), let scalar = BN_secure_new(), let mine = EC_POINT_new(group),
            let shared = EC_POINT_new(group), let x = BN_new()
        else { throw CryptoError.randomUnavailable }
        defer {
            EC_POINT_free(peer)
            BN_clear_free(scalar)
            EC_POINT_free(mine)
            EC_POINT_clear_free(shared)
            BN_clear_free(x)
        }
        // A point that is not on the curve is refused here (as it is by the key objects).
        guard EC_POINT_oct2point(group, peer, peerPublicKey, 65, context) == 1 else {
            ERR_clear_error()
            throw CryptoError.badKey("not a P-256 public key")
        }
        repeat {
            guard BN_priv_rand_range(scalar, order) == 1 else {
                ERR_clear_error()
                throw CryptoError.randomUnavailable
            }
        } while BN_is_zero(scalar) == 1
        var publicKey = [UInt8](repeating: 0, count: 65)
        var secret = [UInt8](repeating: 0, count: 32)
        guard EC_POINT_mul(group, mine, scalar, nil, nil, context) == 1,
            EC_POINT_point2oct(group, mine, POINT_CONVERSION_UNCOMPRESSED, &publicKey, 65, context) == 65,
            EC_POINT_mul(group, shared, nil, peer, scalar, context) == 1,
            EC_POINT_get_affine_coordinates(group, shared, x, nil, context) == 1,
            BN_bn2binpad(x, &secret, 32) == 32
        else {
            ERR_clear_error()
            throw CryptoError.badKey("the key agreement failed")
        }
        return (publicKey, secret)
    }

    /// The curve, made once and only read after (OpenSSL shares a group between threads then).
    private enum Curve {
        nonisolated(unsafe) static let group: OpaquePointer? = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1)
    }
}
