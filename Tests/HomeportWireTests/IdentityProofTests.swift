import Foundation
import HomeportWire
import Testing

@Suite("IdentityProof: base64url, keys, challenges and the signed bytes")
struct IdentityProofTests {
    /// Foundation's base64, made url-safe and unpadded: an independent encoder to compare with.
    static func reference(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    @Test("base64url writes what Foundation writes, for every length up to 70, and reads it back")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...70 {
            for _ in 0..<20 {
                let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                let text = IdentityProof.base64URL(bytes)
                #expect(text == Self.reference(bytes))
                if length > 0 { #expect(IdentityProof.readBase64URL(text) == bytes) }
            }
        }
        #expect(IdentityProof.base64URL(Array(repeating: 0xFB, count: 3)) == "-_v7")
    }

    @Test(
        "reading refuses padding, the standard alphabet, white space, impossible lengths and unused bits set",
        arguments: ["", "QQ==", "QQ=", "+/8", "ab cd", "A", "AAAAA", "AR", "AAB", "QUJD\n", "é"])
    func refusals(text: String) {
        #expect(IdentityProof.readBase64URL(text) == nil)
    }

    @Test("a challenge is 16 to 64 bytes; a key is p256: and a 65-byte point, or ed25519: and 32 bytes")
    func lengths() {
        #expect(IdentityProof.readChallenge(IdentityProof.base64URL(Array(repeating: 1, count: 15))) == nil)
        #expect(IdentityProof.readChallenge(IdentityProof.base64URL(Array(repeating: 1, count: 16))) != nil)
        #expect(IdentityProof.readChallenge(IdentityProof.base64URL(Array(repeating: 1, count: 64))) != nil)
        #expect(IdentityProof.readChallenge(IdentityProof.base64URL(Array(repeating: 1, count: 65))) == nil)
        let key = Array(repeating: UInt8(9), count: 32)
        #expect(IdentityProof.readKey(IdentityProof.writeKey(key)) == key)
        #expect(IdentityProof.readKey(IdentityProof.base64URL(key)) == nil, "without its prefix")
        #expect(IdentityProof.readKey(IdentityProof.writeKey(Array(key.prefix(31)))) == nil)
        #expect(IdentityProof.writeKey(key).hasPrefix("ed25519:"))
        let point = [0x04] + Array(repeating: UInt8(7), count: 64)
        #expect(IdentityProof.writeKey(point).hasPrefix("p256:"))
        #expect(IdentityProof.readKey(IdentityProof.writeKey(point)) == point)
        // A prefix that names another kind than the bytes are, or a compressed point, is no key.
        #expect(IdentityProof.readKey("p256:" + IdentityProof.base64URL(key)) == nil)
        #expect(IdentityProof.readKey("ed25519:" + IdentityProof.base64URL(point)) == nil)
        #expect(
            IdentityProof.readKey("p256:" + IdentityProof.base64URL([0x02] + Array(repeating: 7, count: 64))) == nil)
        #expect(
            IdentityProof.readKey("p256:" + IdentityProof.base64URL([0x02] + Array(repeating: 7, count: 32))) == nil)
    }

    @Test("the host is lowercased, without its port or an IPv6 literal's brackets")
    func hosts() {
        #expect(IdentityProof.host(of: "Books.Example.COM:8443") == "books.example.com")
        #expect(IdentityProof.host(of: "192.168.1.20") == "192.168.1.20")
        #expect(IdentityProof.host(of: "[::1]:8080") == "::1")
        #expect(IdentityProof.host(of: "::1") == "::1")
        #expect(IdentityProof.host(of: "[fe80::1]") == "fe80::1")
        #expect(IdentityProof.host(of: "") == nil)
        #expect(IdentityProof.host(of: "[::1") == nil)
    }
}
