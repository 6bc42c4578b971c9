import Foundation
import HomeportCrypto
import Testing

@Suite("P-256 installation keys")
struct P256KeyTests {
    @Test("signs as raw r‖s that verifies for its key and message only; the private half reopens the same key")
    func signAndVerify() throws {
        let key = try P256Key.generate()
        #expect(key.publicKey.count == 65 && key.publicKey.first == 0x04)
        let message = Array("homeport-identity-proof-v1\nid\nchallenge\nhost".utf8)
        let signature = try key.sign(message)
        #expect(signature.count == 64)
        for _ in 0..<2 {  // the second time from the parsed-key cache
            #expect(P256Key.isValidSignature(signature, of: message, publicKey: key.publicKey))
            #expect(InstallationKeys.isValidSignature(signature, of: message, publicKey: key.publicKey))
        }
        #expect(!P256Key.isValidSignature(signature, of: message + [0], publicKey: key.publicKey))
        #expect(!P256Key.isValidSignature(signature, of: message, publicKey: try P256Key.generate().publicKey))
        var flipped = signature
        flipped[10] ^= 1
        #expect(!P256Key.isValidSignature(flipped, of: message, publicKey: key.publicKey))
        #expect(!P256Key.isValidSignature(Array(signature.prefix(63)), of: message, publicKey: key.publicKey))
        let reopened = try InstallationKeys.open(privateKey: key.privateKey, publicKey: key.publicKey)
        #expect(reopened.publicKey == key.publicKey)
        #expect(P256Key.isValidSignature(try reopened.sign(message), of: message, publicKey: key.publicKey))
        #expect(throws: CryptoError.self) {
            _ = try InstallationKeys.open(privateKey: key.privateKey, publicKey: try P256Key.generate().publicKey)
        }
    }

    @Test("a point that is not on the curve, or of another shape, is no key")
    func malformedKeys() throws {
        let message = Array("m".utf8)
        let signature = try P256Key.generate().sign(message)
        let offCurve = [0x04] + Array(repeating: UInt8(1), count: 64)
        #expect(!P256Key.isValidSignature(signature, of: message, publicKey: offCurve))
        #expect(!P256Key.isValidSignature(signature, of: message, publicKey: [0x02] + Array(repeating: 1, count: 64)))
        #expect(!InstallationKeys.isValidSignature(signature, of: message, publicKey: Array(repeating: 1, count: 33)))
        #expect(throws: CryptoError.self) { _ = try P256Key(privateKey: [1, 2, 3]) }
        #expect(throws: CryptoError.self) { _ = try P256Key(privateKey: try Ed25519Key.generate().privateKey) }
    }
}
