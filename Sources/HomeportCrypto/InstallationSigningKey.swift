/// A key an installation proves itself with (it signs identity challenges) and serves its own
/// TLS certificate from: ``P256Key`` for new installations, ``Ed25519Key`` for those made before.
public protocol InstallationSigningKey: AnyObject, Sendable {
    /// The raw public half as the wire writes it: a 65-byte uncompressed P-256 point, or 32
    /// Ed25519 bytes.
    var publicKey: [UInt8] { get }
    /// The private half, to be sealed before it is stored anywhere; ``InstallationKeys/open(privateKey:publicKey:)``
    /// reads it back.
    var privateKey: [UInt8] { get }
    /// The signature of `message`: 64 raw bytes (`r ‖ s` for P-256).
    func sign(_ message: [UInt8]) throws -> [UInt8]
    /// The private key as PEM (PKCS#8), for a TLS library to serve with; it never leaves the process.
    var privateKeyPEM: String { get throws }
    /// A self-signed X.509 server certificate (PEM) for this key, for `dnsNames` and `ipAddresses`
    /// (textual IPv4 or IPv6), valid from `notBefore` to `notAfter` (Unix seconds), with `serial`
    /// (1–20 bytes) as its serial number. A client that pinned the key accepts it whatever CA,
    /// name or address; anyone else sees an untrusted certificate. A name with anything but
    /// letters, digits, `.`, `-` and `*` is refused, as is an address that does not parse.
    func selfSignedCertificatePEM(
        commonName: String, dnsNames: [String], ipAddresses: [String], notBefore: Int64, notAfter: Int64,
        serial: [UInt8]
    ) throws -> String
}

/// Making, reopening and checking installation keys of either kind.
public enum InstallationKeys {
    /// A new installation key: P-256.
    public static func generate() throws -> any InstallationSigningKey {
        try P256Key.generate()
    }

    /// The key whose sealed private half was `privateKey`, of the kind `publicKey` (its raw public
    /// half) is; throws when they do not belong together.
    public static func open(privateKey: [UInt8], publicKey: [UInt8]) throws -> any InstallationSigningKey {
        let key: any InstallationSigningKey =
            switch publicKey.count {
            case 65: try P256Key(privateKey: privateKey)
            case 32: try Ed25519Key(privateKey: privateKey)
            default: throw CryptoError.badKey("an installation key's public half is 65 or 32 bytes")
            }
        guard key.publicKey == publicKey else { throw CryptoError.badKey("the halves do not belong together") }
        return key
    }

    /// Whether `signature` is the signature of `message` by the raw public key `publicKey` (a
    /// 65-byte P-256 point or 32 Ed25519 bytes); anything malformed is no signature.
    public static func isValidSignature(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        switch publicKey.count {
        case 65: P256Key.isValidSignature(signature, of: message, publicKey: publicKey)
        case 32: Ed25519Key.isValidSignature(signature, of: message, publicKey: publicKey)
        default: false
        }
    }
}

extension Ed25519Key: InstallationSigningKey {
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
            key: key, digest: nil, commonName: commonName, dnsNames: dnsNames, ipAddresses: ipAddresses,
            notBefore: notBefore, notAfter: notAfter, serial: serial)
    }
}
