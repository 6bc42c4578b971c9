import HomeportWire

/// The installation key an X.509 certificate carries, read from its DER bytes: what a pinned
/// installation key is compared with where the platform's TLS hands over the certificate (Apple's
/// URLSession). Only the structure down to the subject public key is read; anything else in the
/// certificate is not looked at, and anything malformed up to there is no key.
enum CertificateKey {
    /// The SubjectPublicKeyInfo of a P-256 key (RFC 5480), before its 65-byte uncompressed point.
    static let p256Prefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48,
        0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]
    /// The SubjectPublicKeyInfo of an Ed25519 key (RFC 8410), before its 32 raw bytes.
    static let ed25519Prefix: [UInt8] = [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]

    /// The raw public key (as the wire writes it: a 65-byte P-256 point, or 32 Ed25519 bytes) of
    /// the certificate `der`; `nil` when it holds another kind of key or is not a certificate.
    static func installationKey(certificateDER der: [UInt8]) -> [UInt8]? {
        var reader = DERReader(der[...])
        guard let certificate = reader.element(tag: 0x30) else { return nil }
        var outer = DERReader(certificate.content)
        guard let tbs = outer.element(tag: 0x30) else { return nil }
        var fields = DERReader(tbs.content)
        if fields.peek == 0xA0 { _ = fields.element(tag: 0xA0) }  // the version
        // The serial number, the signature's algorithm, the issuer, the validity, the subject.
        for tag: UInt8 in [0x02, 0x30, 0x30, 0x30, 0x30] {
            guard fields.element(tag: tag) != nil else { return nil }
        }
        guard let info = fields.element(tag: 0x30) else { return nil }
        for (prefix, length) in [(p256Prefix, 65), (ed25519Prefix, 32)]
        where info.whole.count == prefix.count + length && info.whole.starts(with: prefix) {
            let raw = Array(info.whole.dropFirst(prefix.count))
            return IdentityProof.KeyKind(raw: raw) == nil ? nil : raw
        }
        return nil
    }
}

/// Reads DER elements one after another (definite lengths only, at most four length bytes).
struct DERReader {
    private var rest: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) {
        rest = bytes
    }

    /// The next element's tag, if any.
    var peek: UInt8? { rest.first }

    /// The next element when its tag is `tag`: its content and its whole encoding; `nil`, moving
    /// nowhere, when the tag differs or the length is malformed or runs past the end.
    mutating func element(tag: UInt8) -> (content: ArraySlice<UInt8>, whole: ArraySlice<UInt8>)? {
        guard rest.count >= 2, rest[rest.startIndex] == tag else { return nil }
        var index = rest.startIndex + 1
        let first = rest[index]
        index += 1
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard (1...4).contains(count), rest.endIndex - index >= count else { return nil }
            for byte in rest[index..<index + count] { length = length << 8 | Int(byte) }
            index += count
        }
        guard length >= 0, rest.endIndex - index >= length else { return nil }
        let content = rest[index..<index + length]
        let whole = rest[rest.startIndex..<index + length]
        rest = rest[(index + length)...]
        return (content, whole)
    }
}
