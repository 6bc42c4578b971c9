import HomeportCrypto
import HomeportHTTP
import HomeportWire

/// A self-signed certificate whose public key is the installation key: what the server serves
/// HTTPS with on the LAN, where no certificate authority signs a private address. A client that
/// pinned the key accepts it on any address of the installation; the key, not the names, is the
/// proof.
///
/// It lives ``lifetime`` and is made anew (``isDue(now:publicKey:names:)``) once a third of that is
/// left, when the names the server is reached by change, or when the key changed.
struct InstallationCertificate: Sendable {
    /// How long a certificate is valid: 90 days.
    static let lifetime: Int64 = 90 * 86_400
    /// How long before its end a certificate is replaced: 30 days.
    static let renewalMargin: Int64 = 30 * 86_400
    /// How far before now a certificate starts, for clocks a little behind.
    static let backdating: Int64 = 3_600

    /// The certificate and the installation key, for the TLS library.
    let credentials: TLSCredentials
    /// The key it was made for, as written on the wire.
    let publicKey: String
    /// What it lists.
    let names: CertificateNames
    /// When it ends (Unix seconds).
    let notAfter: Int64

    /// A certificate for `identity`'s key listing `names`, valid from a little before `now`.
    /// Throws ``InstallationCertificateError/noKey`` when the identity holds no key.
    static func make(
        identity: InstallationIdentity, names: CertificateNames, now: Int64, random: any RandomSource = SystemRandom()
    ) throws -> InstallationCertificate {
        guard let key = identity.key, let publicKey = identity.publicKey else {
            throw InstallationCertificateError.noKey
        }
        var serial = try random.bytes(16)
        serial[0] &= 0x7F  // a positive serial number
        serial[0] |= 0x01  // of 16 bytes
        let end = now + lifetime
        let pem = try key.selfSignedCertificatePEM(
            commonName: "Homeport installation \(identity.instanceID)", dnsNames: names.dns,
            ipAddresses: names.ips, notBefore: now - backdating, notAfter: end, serial: serial)
        return InstallationCertificate(
            credentials: TLSCredentials(certificatePEM: pem, keyPEM: try key.privateKeyPEM), publicKey: publicKey,
            names: names, notAfter: end)
    }

    /// Whether to make a new one: a third of its life or less is left at `now`, the installation
    /// key is now `publicKey` (an `identity reset`), or the server is reached by other `names`.
    func isDue(now: Int64, publicKey: String?, names: CertificateNames) -> Bool {
        now >= notAfter - Self.renewalMargin || publicKey != self.publicKey || names != self.names
    }
}

/// Why no installation certificate can be made.
enum InstallationCertificateError: Error, CustomStringConvertible {
    /// The identity holds no key: the server has no secrets key to seal it with.
    case noKey

    var description: String {
        switch self {
        case .noKey:
            "HTTPS with the installation's certificate needs the installation key, which is sealed with the secrets key: give --secrets-key-file (on PostgreSQL, the same file to every replica)"
        }
    }
}
