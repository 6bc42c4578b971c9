/// Web Push message encryption (RFC 8291) in the `aes128gcm` content encoding (RFC 8188): what a
/// push service carries to a browser or a UnifiedPush distributor, which only the subscription's
/// holder can read.
///
/// A fresh P-256 key pair and a fresh 16-byte salt for every message; the content key and nonce
/// come from HKDF-SHA-256 over the ECDH secret with the subscription's key and its `auth`
/// secret. One record: the plaintext, then the last-record delimiter `0x02`.
public enum WebPushContent {
    /// The record size written in the header: one record holds the whole message.
    public static let recordSize = 4096
    /// The header: salt (16), record size (4), key id length (1), key id (the 65-byte public key).
    public static let headerSize = 86
    /// The longest plaintext one record takes (the record size less the tag and the delimiter).
    /// Push services take bodies of at most 4096 bytes, so in practice
    /// ``maximumPlaintextBytes`` is what fits.
    public static let maximumRecordPlaintext = recordSize - 17
    /// The longest plaintext whose encrypted body (header included) is at most 4096 bytes.
    public static let maximumPlaintextBytes = 4096 - headerSize - 17

    /// Why a message was not encrypted.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// `p256dh` is not a 65-byte uncompressed P-256 point.
        case badSubscriptionKey
        /// `auth` is not 16 bytes.
        case badAuthSecret
        /// The plaintext is longer than ``WebPushContent/maximumPlaintextBytes``.
        case tooLarge(bytes: Int)

        /// A sentence for operators.
        public var description: String {
            switch self {
            case .badSubscriptionKey: "the subscription's p256dh is not a P-256 public key"
            case .badAuthSecret: "the subscription's auth secret is not 16 bytes"
            case .tooLarge(let bytes):
                "a Web Push message holds at most \(WebPushContent.maximumPlaintextBytes) bytes, not \(bytes)"
            }
        }
    }

    /// The encrypted body for the subscription whose public key is `p256dh` (65 bytes) and whose
    /// authentication secret is `auth` (16 bytes).
    public static func encrypt(
        _ plaintext: [UInt8], p256dh: [UInt8], auth: [UInt8], random: any RandomSource = SystemRandom()
    ) throws -> [UInt8] {
        guard plaintext.count <= maximumPlaintextBytes else { throw Failure.tooLarge(bytes: plaintext.count) }
        guard auth.count == 16 else { throw Failure.badAuthSecret }
        let agreement: (publicKey: [UInt8], secret: [UInt8])
        do {
            agreement = try P256Key.ephemeralAgreement(with: p256dh)
        } catch {
            throw Failure.badSubscriptionKey
        }
        return try encrypt(
            plaintext, p256dh: p256dh, auth: auth, salt: try random.bytes(16), senderPublic: agreement.publicKey,
            secret: agreement.secret)
    }

    /// The same with the salt and the sender's key pair given (RFC 8291's own example fixes both).
    static func encrypt(_ plaintext: [UInt8], p256dh: [UInt8], auth: [UInt8], salt: [UInt8], sender: P256Key)
        throws -> [UInt8]
    {
        let secret: [UInt8]
        do {
            secret = try sender.sharedSecret(with: p256dh)
        } catch {
            throw Failure.badSubscriptionKey
        }
        return try encrypt(
            plaintext, p256dh: p256dh, auth: auth, salt: salt, senderPublic: sender.publicKey, secret: secret)
    }

    /// The message, from the sender's public key and the ECDH secret.
    private static func encrypt(
        _ plaintext: [UInt8], p256dh: [UInt8], auth: [UInt8], salt: [UInt8], senderPublic: [UInt8], secret: [UInt8]
    ) throws -> [UInt8] {
        guard p256dh.count == 65, p256dh.first == 0x04 else { throw Failure.badSubscriptionKey }
        guard auth.count == 16 else { throw Failure.badAuthSecret }
        guard plaintext.count <= maximumRecordPlaintext else { throw Failure.tooLarge(bytes: plaintext.count) }
        // RFC 8291 §3.3: IKM = HKDF(salt = auth, ikm = ECDH secret, info = "WebPush: info" ‖ 0 ‖ ua ‖ as).
        let keyInfo = Array("WebPush: info".utf8) + [0] + p256dh + senderPublic
        let ikm = expand(extract(salt: auth, secret), info: keyInfo, length: 32)
        // RFC 8188 §2.2–2.3: the content key and the nonce from a fresh salt.
        let prk = extract(salt: salt, ikm)
        let key = expand(prk, info: Array("Content-Encoding: aes128gcm".utf8) + [0], length: 16)
        let nonce = expand(prk, info: Array("Content-Encoding: nonce".utf8) + [0], length: 12)
        let sealed = try AESGCM.sealAES128(plaintext + [2], key: key, nonce: nonce)
        let size = UInt32(recordSize)
        let header =
            salt + [UInt8(size >> 24), UInt8((size >> 16) & 0xFF), UInt8((size >> 8) & 0xFF), UInt8(size & 0xFF)]
            + [UInt8(senderPublic.count)] + senderPublic
        return header + sealed
    }

    /// HKDF-Extract (RFC 5869) with SHA-256.
    static func extract(salt: [UInt8], _ ikm: [UInt8]) -> [UInt8] {
        Digest.hmacSHA256(key: salt, ikm)
    }

    /// HKDF-Expand with SHA-256, for at most one block (32 bytes).
    static func expand(_ prk: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        Array(Digest.hmacSHA256(key: prk, info + [1]).prefix(length))
    }
}
