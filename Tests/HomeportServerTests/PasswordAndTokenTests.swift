import Foundation
import HomeportCrypto
import Testing

@Suite("Passwords and tokens")
struct PasswordAndTokenTests {
    @Test("a hash verifies its password only, and is salted")
    func hashVerifies() throws {
        let hasher = PasswordHasher(iterations: 1000)
        let first = try hasher.hash("correct horse battery")
        let second = try hasher.hash("correct horse battery")
        #expect(first != second, "each hash has its own salt")
        #expect(first.hasPrefix("pbkdf2_sha256$1000$"))
        #expect(!first.contains("correct horse"))
        #expect(
            hasher.verify("correct horse battery", against: first) == PasswordCheck(matches: true, iterations: 1000))
        #expect(!hasher.verify("correct horse batterY", against: first).matches)
        #expect(!hasher.verify("", against: first).matches)
        for malformed in ["", "pbkdf2_sha256$x$salt$hash", "md5$1$a$b", "pbkdf2_sha256$1000$salt", first + "$extra"] {
            #expect(
                hasher.verify("correct horse battery", against: malformed)
                    == PasswordCheck(matches: false, iterations: 0),
                "\(malformed)")
        }
    }

    @Test("the encoding is Django's PBKDF2-SHA256 (a known answer from Python's hashlib)")
    func knownAnswer() {
        // python3 -c "import hashlib,base64; print(base64.b64encode(hashlib.pbkdf2_hmac(
        //     'sha256', b'correct horse battery', b'0123456789abcdef', 1000)).decode())"
        let encoded = "pbkdf2_sha256$1000$0123456789abcdef$\(Self.pythonDigest)"
        #expect(PasswordHasher(iterations: 1000).verify("correct horse battery", against: encoded).matches)
    }

    static let pythonDigest = "BVALGMmC/K/8ELErc5VgJxyPFApArIZRCQsqjEgZWJ4="

    @Test("tokens are 256 random bits in base64url, and only their SHA-256 is stored")
    func tokens() throws {
        let token = try SecretToken.generate()
        #expect(token.count == 43)
        #expect(SecretToken.isWellFormed(token))
        #expect(try SecretToken.generate() != token)
        let stored = SecretToken.storedForm(of: token)
        #expect(stored.count == 64)
        #expect(stored != token && !stored.contains(token))
        #expect(!SecretToken.isWellFormed(stored))
        #expect(!SecretToken.isWellFormed(token + "A"))
        #expect(!SecretToken.isWellFormed(String(token.dropLast()) + "="))
    }

    @Test("constant-time comparison compares")
    func constantTime() {
        #expect(Digest.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!Digest.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!Digest.constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(Digest.sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("HMAC-SHA-256 matches RFC 4231's test case 2")
    func hmac() {
        let mac = Digest.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
        #expect(Digest.hex(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}
