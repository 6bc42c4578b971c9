import Foundation
import Testing

@testable import HomeportCrypto

/// Base64url without padding, decoded (for the RFC's own values).
private func bytes(_ text: String) -> [UInt8] {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
    return Array(Data(base64Encoded: base64) ?? Data())
}

/// A P-256 key from its raw private scalar and public point (SEC1 DER, as OpenSSL reads it).
private func key(private scalar: [UInt8], public point: [UInt8]) throws -> P256Key {
    let curve: [UInt8] = [0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
    let inner: [UInt8] = [0x02, 0x01, 0x01, 0x04, 0x20] + scalar + curve + [0xA1, 0x44, 0x03, 0x42, 0x00] + point
    return try P256Key(privateKey: [0x30, UInt8(inner.count)] + inner)
}

@Suite("Web Push message encryption (RFC 8291)")
struct WebPushContentTests {
    // RFC 8291, Appendix A.
    static let plaintext = "When I grow up, I want to be a watermelon"
    static let senderPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
    static let senderPublic =
        "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
    static let receiverPublic =
        "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
    static let body =
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    @Test("the RFC's example: the same keys and salt give its body, byte for byte")
    func rfcExample() throws {
        let sender = try key(private: bytes(Self.senderPrivate), public: bytes(Self.senderPublic))
        #expect(sender.publicKey == bytes(Self.senderPublic))
        let body = try WebPushContent.encrypt(
            Array(Self.plaintext.utf8), p256dh: bytes(Self.receiverPublic), auth: bytes(Self.auth),
            salt: bytes(Self.salt), sender: sender)
        #expect(body == bytes(Self.body))
    }

    @Test("each message has a fresh salt and key; bad subscription keys and an oversized message are refused")
    func freshAndChecked() throws {
        let receiver = try P256Key.generate().publicKey
        let auth = [UInt8](repeating: 7, count: 16)
        let first = try WebPushContent.encrypt(Array("hi".utf8), p256dh: receiver, auth: auth)
        let second = try WebPushContent.encrypt(Array("hi".utf8), p256dh: receiver, auth: auth)
        #expect(first.count == WebPushContent.headerSize + 2 + 1 + 16)
        #expect(first.prefix(16) != second.prefix(16), "a fresh salt")
        #expect(first[21..<86] != second[21..<86], "a fresh sender key")
        #expect(Array(first[16..<21]) == [0, 0, 0x10, 0, 65], "record size 4096, a 65-byte key id")

        let fits = [UInt8](repeating: 0x41, count: WebPushContent.maximumPlaintextBytes)
        #expect(try WebPushContent.encrypt(fits, p256dh: receiver, auth: auth).count == 4096)
        #expect(throws: WebPushContent.Failure.tooLarge(bytes: fits.count + 1)) {
            try WebPushContent.encrypt(fits + [0], p256dh: receiver, auth: auth)
        }
        var offCurve = receiver
        offCurve[64] ^= 1
        #expect(throws: WebPushContent.Failure.badSubscriptionKey) {
            try WebPushContent.encrypt([1], p256dh: offCurve, auth: auth)
        }
        #expect(throws: WebPushContent.Failure.badSubscriptionKey) {
            try WebPushContent.encrypt([1], p256dh: Array(receiver.prefix(33)), auth: auth)
        }
        #expect(throws: WebPushContent.Failure.badAuthSecret) {
            try WebPushContent.encrypt([1], p256dh: receiver, auth: Array(auth.prefix(12)))
        }
        #expect(!P256Key.isValidPublicKey(offCurve) && P256Key.isValidPublicKey(receiver))
    }

    @Test("ECDH: both sides of an agreement get the same secret; a point off the curve is refused")
    func agreement() throws {
        let a = try P256Key.generate()
        let b = try P256Key.generate()
        #expect(try a.sharedSecret(with: b.publicKey) == b.sharedSecret(with: a.publicKey))
        var bad = b.publicKey
        bad[10] ^= 0xFF
        #expect(throws: CryptoError.self) { try a.sharedSecret(with: bad) }
    }

    @Test(
        "a message's own key pair: the receiver's ECDH with its public key gives the same secret; never twice the same")
    func ephemeralAgreement() throws {
        let receiver = try P256Key.generate()
        let first = try P256Key.ephemeralAgreement(with: receiver.publicKey)
        let second = try P256Key.ephemeralAgreement(with: receiver.publicKey)
        #expect(P256Key.isValidPublicKey(first.publicKey) && first.secret.count == 32)
        #expect(try receiver.sharedSecret(with: first.publicKey) == first.secret)
        #expect(try receiver.sharedSecret(with: second.publicKey) == second.secret)
        #expect(first.publicKey != second.publicKey && first.secret != second.secret)
        var offCurve = receiver.publicKey
        offCurve[40] ^= 0x01
        #expect(throws: CryptoError.self) { try P256Key.ephemeralAgreement(with: offCurve) }
        var compressed = receiver.publicKey
        compressed[0] = 0x02
        #expect(throws: CryptoError.self) { try P256Key.ephemeralAgreement(with: compressed) }
        #expect(throws: CryptoError.self) {
            try P256Key.ephemeralAgreement(with: [0x04] + [UInt8](repeating: 0, count: 64))
        }
    }
}
