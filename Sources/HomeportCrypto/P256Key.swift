import COpenSSL
import Synchronization

/// A P-256 private key that signs with ECDSA over SHA-256, from OpenSSL: the installation key of
/// new installations, which every TLS stack accepts in a certificate.
///
/// The public half travels as its 65-byte uncompressed point (X9.63), signatures as the raw 64
/// bytes `r ‖ s` (as JWS `ES256` and CryptoKit's `rawRepresentation`); the private half is
/// sealed as OpenSSL's DER.
public final class P256Key: @unchecked Sendable {
    let key: OpaquePointer

    /// The DER SubjectPublicKeyInfo of a P-256 key, before its 65-byte point.
    static let publicKeyInfoPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48,
        0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// A new key from the system's random generator.
    public static func generate() throws -> P256Key {
        guard let context = EVP_PKEY_CTX_new_id(homeport_evp_pkey_ec(), nil) else {
            throw CryptoError.badKey("no P-256 context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var generated: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1,
            EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1) == 1,
            EVP_PKEY_keygen(context, &generated) == 1, let generated
        else {
            ERR_clear_error()
            throw CryptoError.randomUnavailable
        }
        return P256Key(generated)
    }

    /// The key whose private half is `der` (as ``privateKey`` wrote it).
    public convenience init(privateKey der: [UInt8]) throws {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer = buffer.baseAddress
            return d2i_AutoPrivateKey(nil, &pointer, buffer.count)
        }
        ERR_clear_error()
        guard let parsed else { throw CryptoError.badKey("not a private key") }
        guard EVP_PKEY_get_base_id(parsed) == homeport_evp_pkey_ec(), EVP_PKEY_get_bits(parsed) == 256 else {
            EVP_PKEY_free(parsed)
            throw CryptoError.badKey("not a P-256 key")
        }
        self.init(parsed)
    }

    private init(_ key: OpaquePointer) {
        self.key = key
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// The private half (DER): to be sealed before it is stored anywhere.
    public var privateKey: [UInt8] {
        var der: UnsafeMutablePointer<UInt8>?
        let length = i2d_PrivateKey(key, &der)
        guard length > 0, let der else { return [] }
        defer {
            der.initialize(repeating: 0, count: Int(length))
            CRYPTO_free(der, nil, 0)
        }
        return Array(UnsafeBufferPointer(start: der, count: Int(length)))
    }

    /// The public half: the 65-byte uncompressed point.
    public var publicKey: [UInt8] {
        P256Key.uncompressedPoint(of: key)
    }

    /// The signature of `message` (ECDSA over its SHA-256): 64 bytes, `r` then `s`.
    public func sign(_ message: [UInt8]) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.signingFailed }
        defer { EVP_MD_CTX_free(context) }
        var length = 72
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1,
            EVP_DigestSign(context, &der, &length, message, message.count) == 1
        else {
            ERR_clear_error()
            throw CryptoError.signingFailed
        }
        return try ES256Key.raw(fromDER: Array(der.prefix(length)))
    }

    /// Whether `signature` (`r ‖ s`) is `publicKey`'s (a 65-byte uncompressed point) signature
    /// of `message`. A key or a signature of the wrong shape is no signature.
    public static func isValidSignature(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == 64, publicKey.count == 65, publicKey.first == 0x04,
            let parsed = PublicKeys.parsed(publicKey)
        else { return false }
        defer { ERR_clear_error() }
        guard let der = der(fromRaw: signature), let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        return EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, parsed.key) == 1
            && EVP_DigestVerify(context, der, der.count, message, message.count) == 1
    }

    /// Whether `der` (an ASN.1 `ECDSA-Sig-Value`, as WebAuthn's ES256 signatures come) is
    /// `publicKey`'s (a 65-byte uncompressed point) signature of `message`.
    public static func isValidSignature(der: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard (8...80).contains(der.count), publicKey.count == 65, publicKey.first == 0x04,
            let parsed = PublicKeys.parsed(publicKey)
        else { return false }
        defer { ERR_clear_error() }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        return EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, parsed.key) == 1
            && EVP_DigestVerify(context, der, der.count, message, message.count) == 1
    }

    /// `raw` (`r ‖ s`, as ``sign(_:)`` makes) as a DER `ECDSA-Sig-Value`, as WebAuthn's
    /// authenticators send ES256 signatures; `nil` when it is not 64 bytes.
    public static func derSignature(fromRaw raw: [UInt8]) -> [UInt8]? {
        raw.count == 64 ? der(fromRaw: raw) : nil
    }

    /// Public keys parsed once: OpenSSL 3's decoder takes longer to read a key (about 200 µs
    /// here) than to check a signature with it, and a client checks the same pinned keys over
    /// and over. At most ``capacity`` are kept; past that the cache starts over.
    enum PublicKeys {
        static let capacity = 64

        /// An OpenSSL public key, freed when the last user lets go.
        final class Parsed: @unchecked Sendable {
            let key: OpaquePointer
            init(_ key: OpaquePointer) { self.key = key }
            deinit { EVP_PKEY_free(key) }
        }

        private static let cache = Mutex<[[UInt8]: Parsed]>([:])

        /// The key whose uncompressed point is `point`; `nil` when it is not one on P-256.
        static func parsed(_ point: [UInt8]) -> Parsed? {
            if let known = cache.withLock({ $0[point] }) { return known }
            let info = publicKeyInfoPrefix + point
            let key: OpaquePointer? = info.withUnsafeBufferPointer { buffer in
                var pointer = buffer.baseAddress
                return d2i_PUBKEY(nil, &pointer, buffer.count)
            }
            ERR_clear_error()
            guard let key else { return nil }
            let parsed = Parsed(key)
            cache.withLock { cache in
                if cache.count >= capacity { cache.removeAll() }
                cache[point] = parsed
            }
            return parsed
        }
    }

    /// `r ‖ s` → DER `SEQUENCE { r INTEGER, s INTEGER }`.
    static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        guard let r = BN_bin2bn(raw, 32, nil) else { return nil }
        guard let s = raw.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress! + 32, 32, nil) }) else {
            BN_free(r)
            return nil
        }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(signature, &output)
        guard length > 0, let output else { return nil }
        defer { CRYPTO_free(output, nil, 0) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }
}

extension P256Key: InstallationSigningKey {
    /// The private key as PEM (PKCS#8), for a TLS library to serve with.
    public var privateKeyPEM: String {
        get throws { try SelfSignedCertificate.privateKeyPEM(key) }
    }

    /// A self-signed server certificate for this key (see ``InstallationSigningKey``).
    public func selfSignedCertificatePEM(
        commonName: String, dnsNames: [String], ipAddresses: [String], notBefore: Int64, notAfter: Int64,
        serial: [UInt8]
    ) throws -> String {
        try SelfSignedCertificate.pem(
            key: key, digest: EVP_sha256(), commonName: commonName, dnsNames: dnsNames, ipAddresses: ipAddresses,
            notBefore: notBefore, notAfter: notAfter, serial: serial)
    }
}
