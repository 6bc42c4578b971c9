import COpenSSL

/// The PEM an installation key serves TLS with: its private key, and a certificate it signs
/// itself (shared by ``P256Key`` and ``Ed25519Key``).
enum SelfSignedCertificate {
    /// `key` as PEM (PKCS#8 `-----BEGIN PRIVATE KEY-----`).
    static func privateKeyPEM(_ key: OpaquePointer) throws -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.badKey("no memory") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else {
            ERR_clear_error()
            throw CryptoError.badKey("cannot write the key as PEM")
        }
        return text(of: bio)
    }

    /// A certificate for `key`, signed by itself with `digest` (`nil` for Ed25519, which hashes
    /// inside its signature scheme); see ``InstallationSigningKey/selfSignedCertificatePEM(commonName:dnsNames:ipAddresses:notBefore:notAfter:serial:)``.
    static func pem(
        key: OpaquePointer, digest: OpaquePointer?, commonName: String, dnsNames: [String], ipAddresses: [String],
        notBefore: Int64, notAfter: Int64, serial: [UInt8]
    ) throws -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-*")
        for name in dnsNames where name.isEmpty || name.count > 253 || !name.allSatisfy(allowed.contains) {
            throw CryptoError.badKey("'\(name)' is not a DNS name for a certificate")
        }
        guard (1...20).contains(serial.count), notBefore < notAfter, commonName.utf8.count <= 64 else {
            throw CryptoError.badKey("a certificate needs a 1–20 byte serial, a validity and a short name")
        }
        guard let certificate = X509_new() else { throw CryptoError.badKey("no memory") }
        defer { X509_free(certificate) }
        var alternatives = dnsNames.map { "DNS:\($0)" }
        for address in ipAddresses {
            guard let parsed = a2i_IPADDRESS(address) else {
                ERR_clear_error()
                throw CryptoError.badKey("'\(address)' is not an IP address for a certificate")
            }
            ASN1_OCTET_STRING_free(parsed)
            alternatives.append("IP:\(address)")
        }
        guard let serialNumber = BN_bin2bn(serial, Int32(serial.count), nil) else {
            throw CryptoError.badKey("no memory")
        }
        defer { BN_free(serialNumber) }
        var built =
            X509_set_version(certificate, 2) == 1
            && BN_to_ASN1_INTEGER(serialNumber, X509_get_serialNumber(certificate)) != nil
            && ASN1_TIME_set(X509_getm_notBefore(certificate), time_t(notBefore)) != nil
            && ASN1_TIME_set(X509_getm_notAfter(certificate), time_t(notAfter)) != nil
            && X509_set_pubkey(certificate, key) == 1
        let name = X509_get_subject_name(certificate)
        built =
            built && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, commonName, -1, -1, 0) == 1
            && X509_set_issuer_name(certificate, name) == 1
        var extensions: [(Int32, String)] = [
            (NID_basic_constraints, "critical,CA:FALSE"),
            (NID_key_usage, "critical,digitalSignature"),
            (NID_ext_key_usage, "serverAuth"),
        ]
        if !alternatives.isEmpty { extensions.append((NID_subject_alt_name, alternatives.joined(separator: ","))) }
        for (nid, value) in extensions where built {
            guard let made = X509V3_EXT_nconf_nid(nil, nil, nid, value) else {
                built = false
                break
            }
            built = X509_add_ext(certificate, made, -1) == 1
            X509_EXTENSION_free(made)
        }
        guard built, X509_sign(certificate, key, digest) > 0, let bio = BIO_new(BIO_s_mem()) else {
            ERR_clear_error()
            throw CryptoError.signingFailed
        }
        defer { BIO_free(bio) }
        guard PEM_write_bio_X509(bio, certificate) == 1 else {
            ERR_clear_error()
            throw CryptoError.signingFailed
        }
        return text(of: bio)
    }

    /// What a memory BIO holds, as text.
    private static func text(of bio: OpaquePointer) -> String {
        let length = Int(BIO_ctrl_pending(bio))
        var bytes = [UInt8](repeating: 0, count: length)
        let read = BIO_read(bio, &bytes, Int32(length))
        return String(decoding: bytes.prefix(max(0, Int(read))), as: UTF8.self)
    }
}
