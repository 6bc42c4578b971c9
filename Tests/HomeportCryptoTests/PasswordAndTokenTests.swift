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

    @Test("bcrypt hashes made by Python's bcrypt verify through libcrypt, in all three spellings; none is ours to keep")
    func bcrypt() throws {
        // python3 -c "import bcrypt; print(bcrypt.hashpw(b'correct horse battery', bcrypt.gensalt(4)).decode())"
        let plain = "$2b$04$J5ILeWTV7TdC1.1fWvcpJOTdFfCOLiNNK6O2IpsnIA2RK9qtp7ihC"
        // ... of hexlify(sha256(b'correct horse battery')), as Django's BCryptSHA256PasswordHasher does.
        let prehashed = "bcrypt_sha256$$2b$05$22n9ZZ41393H7QBogHsx6eATlXDZoFzpkSGcFOZolevdDRGBuokKm"
        // ... of 'pässwörd ünicode' in UTF-8, with the 2a prefix.
        let unicode = "$2a$04$VTW1kTGlw6CB7YYt5w.dsOKWO3oqK8.v36OhhgLhjF03QpAzeXVNO"
        let hasher = PasswordHasher(iterations: 1000)
        #expect(hasher.verify("correct horse battery", against: plain) == PasswordCheck(matches: true, iterations: 0))
        #expect(hasher.verify("correct horse battery", against: "bcrypt$" + plain).matches)
        #expect(hasher.verify("correct horse battery", against: prehashed).matches)
        #expect(hasher.verify("pässwörd ünicode", against: unicode).matches)
        #expect(!hasher.verify("correct horse batterY", against: plain).matches)
        #expect(!hasher.verify("correct horse battery", against: "bcrypt_sha256$" + plain).matches, "prehash differs")
        #expect(!hasher.verify("correct horse battery\u{0}x", against: plain).matches)
        #expect(hasher.needsUpgrade(plain) && hasher.needsUpgrade(prehashed), "rehashed at the first sign-in")
        // PBKDF2: a cheaper hash is remade at the configured cost; a costlier one never made cheaper.
        let configured = try hasher.hash("correct horse battery")
        let cheaper = try PasswordHasher(iterations: 1000).hash("x").replacingOccurrences(of: "$1000$", with: "$999$")
        let costlier = try PasswordHasher(iterations: 1_000_000 / 500).hash("x")
        #expect(!hasher.needsUpgrade(configured) && hasher.needsUpgrade(cheaper))
        #expect(PasswordHasher(iterations: 1000).needsUpgrade(cheaper))
        #expect(!hasher.needsUpgrade(costlier), "2000 iterations stay 2000 where 1000 are configured")
        #expect(!hasher.needsUpgrade("pbkdf2_sha256$1000000$salt$aGFzaA=="), "Django 5.2's million stays a million")
        for malformed in [
            "$2b$04$short", "$2x$04$J5ILeWTV7TdC1.1fWvcpJOTdFfCOLiNNK6O2IpsnIA2RK9qtp7ihC",
            "$2b$4$J5ILeWTV7TdC1.1fWvcpJOTdFfCOLiNNK6O2IpsnIA2RK9qtp7ihC", plain + "x", "bcrypt$$" + plain,
            "bcrypt_sha256$bcrypt$" + plain,
        ] {
            #expect(BcryptHash(malformed) == nil, "\(malformed)")
            #expect(!hasher.verify("correct horse battery", against: malformed).matches)
            #expect(!PasswordHasher.isImportable(malformed))
        }
        for importable in [plain, prehashed, "bcrypt$" + plain, "!unusablePasswordFromDjango", try! hasher.hash("x")] {
            #expect(PasswordHasher.isImportable(importable), "\(importable)")
        }
        for refused in [
            "md5$salt$hash", "pbkdf2_sha256$1000$salt$notbase64!", "pbkdf2_sha256$1000$salt$AAAA", "", "argon2$x",
        ] {
            #expect(!PasswordHasher.isImportable(refused), "\(refused)")
        }
    }

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
        // Each of the 256 bytes in each position class: accepted exactly when it is base64url.
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        for byte in UInt8.min...UInt8.max {
            for position in [0, 21, 42] {
                var bytes = Array(token.utf8)
                bytes[position] = byte
                let text = String(decoding: bytes, as: UTF8.self)
                let expected = alphabet.contains(byte)
                #expect(SecretToken.isWellFormed(text) == expected, "byte \(byte) at \(position)")
            }
        }
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
