import HomeportCrypto
import Testing

@Suite("Ed25519 keys")
struct Ed25519KeyTests {
    static func bytes(_ hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            result.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return result
    }

    @Test("RFC 8032's first test vector: the same public key and signature")
    func knownAnswer() throws {
        let key = try Ed25519Key(
            privateKey: Self.bytes("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
        #expect(key.publicKey == Self.bytes("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"))
        let signature = try key.sign([])
        #expect(
            signature
                == Self.bytes(
                    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
                ))
        #expect(Ed25519Key.isValidSignature(signature, of: [], publicKey: key.publicKey))
    }

    @Test("a signature holds only for its message and its key; a damaged or short one is none")
    func verification() throws {
        let key = try Ed25519Key.generate()
        let other = try Ed25519Key.generate()
        #expect(key.publicKey != other.publicKey)
        #expect(try Ed25519Key(privateKey: key.privateKey).publicKey == key.publicKey)
        let message = Array("homeport".utf8)
        let signature = try key.sign(message)
        #expect(Ed25519Key.isValidSignature(signature, of: message, publicKey: key.publicKey))
        #expect(!Ed25519Key.isValidSignature(signature, of: Array("homeporT".utf8), publicKey: key.publicKey))
        #expect(!Ed25519Key.isValidSignature(signature, of: message, publicKey: other.publicKey))
        var damaged = signature
        damaged[10] ^= 1
        #expect(!Ed25519Key.isValidSignature(damaged, of: message, publicKey: key.publicKey))
        #expect(!Ed25519Key.isValidSignature(Array(signature.prefix(63)), of: message, publicKey: key.publicKey))
        #expect(!Ed25519Key.isValidSignature(signature, of: message, publicKey: Array(key.publicKey.prefix(31))))
        #expect(throws: CryptoError.self) { try Ed25519Key(privateKey: [1, 2, 3]) }
    }
}
