import Foundation
import HomeportCrypto
import HomeportTestSupport
import HomeportWebAuthn
import HomeportWire
import Testing

/// WebAuthn's two ceremonies as the relying party checks them, against an authenticator in
/// software that can be told to lie.
@Suite("WebAuthn: registration and sign-in checked, every lie refused", .tags(.process))
struct WebAuthnTests {
    static let party = RelyingParty(id: "books.example.net", origins: ["https://books.example.net"])
    static let origin = "https://books.example.net"

    private func challenge() -> ([UInt8], [String: Any]) {
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255) }
        return (
            bytes,
            [
                "challenge": IdentityProof.base64URL(bytes), "rp": ["id": "books.example.net", "name": "Books"],
                "rpId": "books.example.net", "user": ["id": IdentityProof.base64URL([4, 2])],
            ]
        )
    }

    private func register(
        _ authenticator: SoftAuthenticator, origin: String = Self.origin, verified: Bool = true, rpID: String? = nil,
        packed: Bool = false, requireVerification: Bool = true, challengeBytes: [UInt8]? = nil
    ) throws -> RelyingParty.Registration {
        let (bytes, options) = challenge()
        let json = try authenticator.register(options, origin: origin, verified: verified, rpID: rpID, packed: packed)
        let credential = try RegistrationCredential(json: json)
        return try Self.party.verifyRegistration(
            clientDataJSON: credential.clientDataJSON, attestationObject: credential.attestationObject,
            challenge: challengeBytes ?? bytes, requireUserVerification: requireVerification)
    }

    private func assertion(
        _ authenticator: SoftAuthenticator, key: COSEKey, stored: UInt32, origin: String = Self.origin,
        verified: Bool = true, present: Bool = true, rpID: String? = nil, tamper: Bool = false
    ) throws -> RelyingParty.Assertion {
        let (bytes, options) = challenge()
        let json = try authenticator.assert(options, origin: origin, verified: verified, rpID: rpID, present: present)
        let credential = try AuthenticationCredential(json: json)
        var signature = credential.signature
        if tamper { signature[signature.count - 1] ^= 1 }
        return try Self.party.verifyAssertion(
            clientDataJSON: credential.clientDataJSON, authenticatorData: credential.authenticatorData,
            signature: signature, challenge: bytes, publicKey: key, storedSignCount: stored,
            requireUserVerification: true)
    }

    @Test(
        "an ES256 or Ed25519 credential registers (none or packed self-attestation) and signs in; its key survives storage",
        arguments: [SoftAuthenticator.Algorithm.es256, .edDSA], [false, true])
    func roundTrip(algorithm: SoftAuthenticator.Algorithm, packed: Bool) throws {
        let authenticator = try SoftAuthenticator(algorithm)
        let registration = try register(authenticator, packed: packed)
        #expect(registration.credentialID == authenticator.credentialID && registration.signCount == 1)
        #expect(registration.format == (packed ? "packed" : "none") && registration.userVerified)
        let stored = try COSEKey(encoded: registration.publicKey.encoded)
        #expect(stored == registration.publicKey)
        let signedIn = try assertion(authenticator, key: stored, stored: registration.signCount)
        #expect(signedIn.signCount == 2 && signedIn.userVerified)
    }

    @Test("a wrong challenge, origin, relying party, ceremony or missing presence or verification is refused")
    func lies() throws {
        let authenticator = try SoftAuthenticator()
        #expect(throws: WebAuthnError.challengeMismatch) {
            try register(authenticator, challengeBytes: [UInt8](repeating: 7, count: 32))
        }
        #expect(throws: WebAuthnError.originMismatch("https://evil.example.net")) {
            try register(authenticator, origin: "https://evil.example.net")
        }
        #expect(throws: WebAuthnError.originMismatch("https://books.example.net:8443")) {
            try register(authenticator, origin: "https://books.example.net:8443")
        }
        #expect(throws: WebAuthnError.relyingPartyMismatch) { try register(authenticator, rpID: "example.net") }
        #expect(throws: WebAuthnError.userNotVerified) { try register(authenticator, verified: false) }
        #expect(try register(authenticator, verified: false, requireVerification: false).userVerified == false)
        let key = try register(authenticator).publicKey
        #expect(throws: WebAuthnError.userNotPresent) {
            try assertion(authenticator, key: key, stored: 0, present: false)
        }
        #expect(throws: WebAuthnError.userNotVerified) {
            try assertion(authenticator, key: key, stored: 0, verified: false)
        }
        #expect(throws: WebAuthnError.relyingPartyMismatch) {
            try assertion(authenticator, key: key, stored: 0, rpID: "evil.example.net")
        }
        #expect(throws: WebAuthnError.originMismatch("http://books.example.net")) {
            try assertion(authenticator, key: key, stored: 0, origin: "http://books.example.net")
        }
        #expect(throws: WebAuthnError.badSignature) { try assertion(authenticator, key: key, stored: 0, tamper: true) }
        // Another credential's key does not verify this one's signature.
        let other = try register(try SoftAuthenticator()).publicKey
        #expect(throws: WebAuthnError.badSignature) { try assertion(authenticator, key: other, stored: 0) }
        // A registration's client data offered at sign-in (and the other way round).
        let (bytes, options) = challenge()
        let registered = try RegistrationCredential(json: try authenticator.register(options, origin: Self.origin))
        let signedIn = try AuthenticationCredential(json: try authenticator.assert(options, origin: Self.origin))
        #expect(throws: WebAuthnError.wrongType("webauthn.create")) {
            try Self.party.verifyAssertion(
                clientDataJSON: registered.clientDataJSON, authenticatorData: signedIn.authenticatorData,
                signature: signedIn.signature, challenge: bytes, publicKey: key, storedSignCount: 0,
                requireUserVerification: true)
        }
        #expect(throws: WebAuthnError.wrongType("webauthn.get")) {
            try Self.party.verifyRegistration(
                clientDataJSON: signedIn.clientDataJSON, attestationObject: registered.attestationObject,
                challenge: bytes, requireUserVerification: true)
        }
    }

    @Test("client data: a ceremony in another site's frame, or crossOrigin, type or challenge of the wrong kind")
    func clientData() throws {
        let challenge = IdentityProof.base64URL([UInt8](repeating: 7, count: 32))
        func data(_ extra: String) -> [UInt8] {
            Array(#"{"type":"webauthn.get","challenge":"\#(challenge)","origin":"\#(Self.origin)"\#(extra)}"#.utf8)
        }
        #expect(try ClientData(data("")).crossOrigin == false)
        #expect(try ClientData(data(#","crossOrigin":false"#)).crossOrigin == false)
        #expect(try ClientData(data(#","crossOrigin":true"#)).crossOrigin == true)
        #expect(try ClientData(data(#","crossOrigin":null"#)).crossOrigin == false)
        for extra in [#","crossOrigin":0"#, #","crossOrigin":"false""#, #","crossOrigin":[]"#] {
            #expect(throws: WebAuthnError.self, "\(extra)") { try ClientData(data(extra)) }
        }
        #expect(throws: WebAuthnError.self) {
            try ClientData(Array(#"{"type":1,"challenge":"\#(challenge)","origin":"\#(Self.origin)"}"#.utf8))
        }
        #expect(throws: WebAuthnError.self) { try ClientData(Array(#"{"type":"webauthn.get"}"#.utf8)) }
        #expect(throws: WebAuthnError.self) { try ClientData(Array("[]".utf8)) }
        // A cross-origin ceremony is refused as another origin.
        let authenticator = try SoftAuthenticator()
        let key = try register(authenticator).publicKey
        let (bytes, options) = challengeOptions()
        var credential = try authenticator.assert(options, origin: Self.origin)
        let crossed = Array(
            #"{"type":"webauthn.get","challenge":"\#(IdentityProof.base64URL(bytes))","origin":"\#(Self.origin)","crossOrigin":true}"#
                .utf8)
        let authenticatorData = (credential["response"] as? [String: Any])?["authenticatorData"] as? String
        let data = try #require(authenticatorData.flatMap { IdentityProof.readBase64URL($0) })
        var response = credential["response"] as? [String: Any] ?? [:]
        response["clientDataJSON"] = IdentityProof.base64URL(crossed)
        response["signature"] = IdentityProof.base64URL(try authenticator.sign(data + Digest.sha256(crossed)))
        credential["response"] = response
        let parsed = try AuthenticationCredential(json: credential)
        #expect(throws: WebAuthnError.originMismatch(Self.origin)) {
            try Self.party.verifyAssertion(
                clientDataJSON: parsed.clientDataJSON, authenticatorData: parsed.authenticatorData,
                signature: parsed.signature, challenge: bytes, publicKey: key, storedSignCount: 0,
                requireUserVerification: true)
        }
    }

    private func challengeOptions() -> ([UInt8], [String: Any]) { challenge() }

    @Test("a counter that does not go up is a clone, refused; an authenticator without one (0 and 0) signs in")
    func counter() throws {
        let authenticator = try SoftAuthenticator(signCount: 5)
        let key = try register(authenticator).publicKey
        #expect(try assertion(authenticator, key: key, stored: 5).signCount == 6)
        authenticator.signCount = 3
        #expect(throws: WebAuthnError.counterWentBack(stored: 6, presented: 4)) {
            try assertion(authenticator, key: key, stored: 6)
        }
        authenticator.signCount = 5
        #expect(throws: WebAuthnError.counterWentBack(stored: 6, presented: 6)) {
            try assertion(authenticator, key: key, stored: 6)
        }
        let counterless = try SoftAuthenticator(signCount: 0)
        let plain = try register(counterless).publicKey
        #expect(try assertion(counterless, key: plain, stored: 0).signCount == 0)
        #expect(throws: WebAuthnError.counterWentBack(stored: 9, presented: 0)) {
            try assertion(counterless, key: plain, stored: 9)
        }
    }

    @Test("attestation: another format, a certificate, a packed signature that does not verify or an unknown algorithm")
    func attestation() throws {
        let authenticator = try SoftAuthenticator()
        let (bytes, options) = challenge()
        let json = try authenticator.register(options, origin: Self.origin, packed: true)
        let credential = try RegistrationCredential(json: json)
        let object = try CBORReader.decode(credential.attestationObject)
        func check(_ replaced: [CBOR: CBOR]) throws {
            var entries = try #require(object.map)
            for (key, value) in replaced { entries[key] = value }
            _ = try Self.party.verifyRegistration(
                clientDataJSON: credential.clientDataJSON, attestationObject: CBOR.map(entries).encoded,
                challenge: bytes, requireUserVerification: true)
        }
        #expect(throws: WebAuthnError.unsupportedAttestation("fido-u2f")) {
            try check([.text("fmt"): .text("fido-u2f")])
        }
        var statement = try #require(object["attStmt"]?.map)
        statement[.text("x5c")] = .array([.bytes([0x30, 0x00])])
        #expect(throws: WebAuthnError.unsupportedAttestation("packed with a certificate")) {
            try check([.text("attStmt"): .map(statement)])
        }
        statement[.text("x5c")] = nil
        var signature = try #require(statement[.text("sig")]?.bytes)
        signature[signature.count - 1] ^= 1
        statement[.text("sig")] = .bytes(signature)
        #expect(throws: WebAuthnError.badSignature) { try check([.text("attStmt"): .map(statement)]) }
        #expect(throws: WebAuthnError.malformed("a none attestation with a statement")) {
            try check([.text("fmt"): .text("none")])
        }
        // A key in an algorithm not offered (ES384).
        let es384 = CBOR.map([.int(1): .int(2), .int(3): .int(-35), .int(-1): .int(2)])
        #expect(throws: WebAuthnError.unsupportedAlgorithm(-35)) { try COSEKey(es384) }
        // A P-256 point off the curve.
        let off = CBOR.map([
            .int(1): .int(2), .int(3): .int(-7), .int(-1): .int(1), .int(-2): .bytes([UInt8](repeating: 1, count: 32)),
            .int(-3): .bytes([UInt8](repeating: 2, count: 32)),
        ])
        #expect(throws: WebAuthnError.malformed("an ES256 key off the curve")) { try COSEKey(off) }
    }

    @Test("an RS256 key (made and signing with the openssl command, an independent implementation) verifies")
    func rs256() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = directory.file("rsa.pem")
        let message = directory.file("message")
        let made = try ServerProcess.runProgram(
            "/usr/bin/openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key])
        #expect(made.status == 0, "\(made.error)")
        let modulusLine = try ServerProcess.runProgram("/usr/bin/openssl", ["rsa", "-in", key, "-noout", "-modulus"])
        let hex = try #require(modulusLine.output.split(separator: "=").last).trimmingCharacters(
            in: .whitespacesAndNewlines)
        let modulus = stride(from: 0, to: hex.count, by: 2).compactMap {
            UInt8(hex[hex.index(hex.startIndex, offsetBy: $0)..<hex.index(hex.startIndex, offsetBy: $0 + 2)], radix: 16)
        }
        let signed: [UInt8] = Array("authenticator data and the client data's hash".utf8)
        try Data(signed).write(to: URL(fileURLWithPath: message))
        let signature = try ServerProcess.runProgram(
            "/usr/bin/openssl", ["dgst", "-sha256", "-sign", key, "-out", directory.file("sig"), message])
        #expect(signature.status == 0, "\(signature.error)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory.file("sig"))))
        let cose = try COSEKey(
            CBOR.map([.int(1): .int(3), .int(3): .int(-257), .int(-1): .bytes(modulus), .int(-2): .bytes([1, 0, 1])]))
        #expect(cose.algorithm == .rs256)
        #expect(cose.isValidSignature(bytes, of: signed))
        #expect(!cose.isValidSignature(bytes, of: signed + [0]))
        #expect(try COSEKey(encoded: cose.encoded) == cose)
        // A 1024-bit key is refused.
        #expect(throws: WebAuthnError.self) {
            try COSEKey(
                CBOR.map([
                    .int(1): .int(3), .int(3): .int(-257), .int(-1): .bytes(Array(modulus.prefix(128))),
                    .int(-2): .bytes([1, 0, 1]),
                ]))
        }
    }

    @Test(
        "CBOR: indefinite lengths, tags, floats, a key twice, deep nesting, lengths past the end and bad UTF-8 are refused"
    )
    func cbor() throws {
        let refused: [[UInt8]] = [
            [0x5F, 0x41, 0x00, 0xFF],  // an indefinite byte string
            [0xC0, 0x00],  // a tag
            [0xF9, 0x3C, 0x00],  // a half float
            [0xA2, 0x01, 0x02, 0x01, 0x03],  // a key twice
            [UInt8](repeating: 0x81, count: 40) + [0x00],  // nested 40 deep
            [0x5B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],  // a string of 2^64-1 bytes
            [0x9B, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],  // an array as long
            [0x62, 0xC3, 0x28],  // text that is not UTF-8
            [0x1C],  // a reserved additional value
            [0x01, 0x02],  // a byte after the item
            [],
        ]
        for bytes in refused {
            #expect(throws: CBORError.self, "\(bytes.prefix(12))") { try CBORReader.decode(bytes) }
        }
        let item = CBOR.map([
            .text("a"): .array([.int(-1), .int(1_000_000), .bytes([1, 2]), .bool(true), .null]), .int(-300): .text("é"),
        ])
        #expect(try CBORReader.decode(item.encoded) == item)
        #expect(CBOR.int(-1).integer == -1 && CBOR.unsigned(UInt64.max).integer == nil)
    }

    @Test("authenticator data: too short, a credential id too long, bytes after it, or backed up but not eligible")
    func authenticatorData() throws {
        let authenticator = try SoftAuthenticator()
        let good = authenticator.authenticatorData(rpID: "books.example.net", verified: true, attested: true)
        #expect(try AuthenticatorData(good).credential?.id == authenticator.credentialID)
        #expect(throws: WebAuthnError.self) { try AuthenticatorData(Array(good.prefix(36))) }
        #expect(throws: WebAuthnError.self) { try AuthenticatorData(good + [0]) }
        #expect(throws: WebAuthnError.self) { try AuthenticatorData(Array(good.prefix(60))) }
        var long = good
        long[53] = 0x04  // a credential id of 1056 bytes
        #expect(throws: WebAuthnError.self) { try AuthenticatorData(long) }
        var unflagged = Array(good.prefix(37))
        unflagged[32] = 0x01 | 0x10
        #expect(throws: WebAuthnError.malformed("backed up (BS) but not backup eligible (BE)")) {
            try AuthenticatorData(unflagged)
        }
    }

    @Test("the relying party of a public address: its host over HTTPS, or localhost; never an IP address")
    func relyingParty() {
        #expect(RelyingParty(publicURL: "https://Books.Example.net/")?.id == "books.example.net")
        #expect(RelyingParty(publicURL: "https://books.example.net:443")?.origins == ["https://books.example.net"])
        #expect(
            RelyingParty(publicURL: "https://books.example.net:8443")?.origins == ["https://books.example.net:8443"])
        #expect(RelyingParty(publicURL: "http://localhost:8080")?.origins == ["http://localhost:8080"])
        #expect(RelyingParty(publicURL: "http://books.localhost:8080")?.id == "books.localhost")
        for url in [
            "http://books.example.net", "http://localhost.example.net", "https://192.168.1.5", "https://[::1]:8443",
            "ftp://x.example", "books",
        ] {
            #expect(RelyingParty(publicURL: url) == nil, "\(url)")
        }
    }
}
