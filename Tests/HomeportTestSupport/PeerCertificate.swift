import Foundation

/// The certificate a TLS listener serves, read with Python's `ssl` and `cryptography` (not the
/// OpenSSL calls that made it): its key, validity, names, and whether it signs itself.
public struct PeerCertificate: Decodable, Sendable {
    /// The TLS version negotiated (`TLSv1.3`).
    public var version: String
    /// The public key as an installation key is written raw (a P-256 key's uncompressed point, an
    /// Ed25519 key's 32 bytes), in hex; `nil` for another kind of key.
    public var publicKey: String?
    /// `p256`, `ed25519`, or another kind's name.
    public var keyType: String
    /// Whether the certificate's signature verifies with its own key.
    public var selfSigned: Bool
    /// Validity, in Unix seconds.
    public var notBefore: Int64
    /// Validity, in Unix seconds.
    public var notAfter: Int64
    /// The serial number, in hex.
    public var serial: String
    /// The DNS names of its subjectAltName.
    public var dns: [String]
    /// The IP addresses of its subjectAltName.
    public var ips: [String]
    /// The DER bytes, in hex.
    public var der: String

    /// Connects to `host`:`port` (trusting anything: it only looks) and reads the certificate,
    /// offering at most `maximumVersion` (`TLSv1_2`, `TLSv1_3`).
    public static func read(host: String, port: Int, maximumVersion: String = "TLSv1_3") throws -> PeerCertificate {
        let python = try TestPeer.apns().python
        let script = """
            import json, socket, ssl, sys
            from cryptography import x509
            from cryptography.hazmat.primitives import hashes
            from cryptography.hazmat.primitives.asymmetric import ec, ed25519
            from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
            host, port, top = sys.argv[1], int(sys.argv[2]), sys.argv[3]
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            context.maximum_version = getattr(ssl.TLSVersion, top)
            with socket.create_connection((host, port), timeout=10) as raw:
                with context.wrap_socket(raw) as tls:
                    der, version = tls.getpeercert(binary_form=True), tls.version()
            certificate = x509.load_der_x509_certificate(der)
            key = certificate.public_key()
            out = {"version": version, "der": der.hex(), "serial": format(certificate.serial_number, "x"),
                   "notBefore": int(certificate.not_valid_before_utc.timestamp()),
                   "notAfter": int(certificate.not_valid_after_utc.timestamp()), "selfSigned": False,
                   "keyType": type(key).__name__}
            try:
                if isinstance(key, ed25519.Ed25519PublicKey):
                    out["keyType"] = "ed25519"
                    out["publicKey"] = key.public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
                    key.verify(certificate.signature, certificate.tbs_certificate_bytes)
                    out["selfSigned"] = True
                elif isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1":
                    out["keyType"] = "p256"
                    out["publicKey"] = key.public_bytes(Encoding.X962, PublicFormat.UncompressedPoint).hex()
                    key.verify(certificate.signature, certificate.tbs_certificate_bytes,
                               ec.ECDSA(certificate.signature_hash_algorithm))
                    out["selfSigned"] = True
            except Exception:
                pass
            try:
                names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
                out["dns"] = names.get_values_for_type(x509.DNSName)
                out["ips"] = [str(address) for address in names.get_values_for_type(x509.IPAddress)]
            except x509.ExtensionNotFound:
                out["dns"], out["ips"] = [], []
            print(json.dumps(out))
            """
        let run = try ServerProcess.runProgram(python, ["-c", script, host, String(port), maximumVersion])
        guard run.status == 0 else { throw RawHTTPError("could not read the certificate: \(run.error)") }
        return try JSONDecoder().decode(PeerCertificate.self, from: Data(run.output.utf8))
    }
}
