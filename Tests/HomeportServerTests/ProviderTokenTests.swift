import Foundation
import HomeportAPNs
import HomeportCrypto
import HomeportStorage
import HomeportTestSupport
import Testing

@testable import HomeportServer

/// Makes a key with the `openssl` command line (an independent maker of PEM keys).
private func opensslKey(_ arguments: [String]) throws -> String {
    let made = try ServerProcess.runProgram("/usr/bin/openssl", arguments)
    guard made.status == 0 else { throw RawHTTPError("openssl failed: \(made.error)") }
    return made.output
}

@Suite("APNs provider tokens")
struct ProviderTokenTests {
    /// A fresh P-256 key in PKCS#8 PEM, as Apple's `.p8` files are.
    static func p256() throws -> String {
        try opensslKey(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
    }

    @Test("an APNs .p8 key signs ES256 as raw r‖s; other keys are refused, saying why")
    func keys() throws {
        let key = try ES256Key(pem: try Self.p256())
        let signature = try key.sign(Array("message".utf8))
        #expect(signature.count == 64)
        #expect(try key.sign(Array("message".utf8)) != signature, "ECDSA signatures are randomised")
        let cases: [(String, String)] = [
            ("not a key at all", "not a PEM file"),
            (
                try opensslKey(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]),
                "not an elliptic-curve key"
            ),
            (
                try opensslKey(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"]),
                "curve is not P-256"
            ),
            ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "cannot read a private key"),
        ]
        for (pem, why) in cases {
            #expect {
                try ES256Key(pem: pem)
            } throws: { String(describing: $0).contains(why) }
        }
    }

    @Test("a provider token carries kid, iss and iat, and is signed over header.claims")
    func token() throws {
        let token = try ProviderToken.mint(
            key: try ES256Key(pem: try Self.p256()), keyID: "KEY1234567", teamID: "TEAM123456", issuedAt: 1_800_000_000)
        let parts = token.jwt.split(separator: ".")
        #expect(parts.count == 3)
        func decoded(_ part: Substring) -> String {
            var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while text.count % 4 != 0 { text += "=" }
            return String(decoding: Data(base64Encoded: text) ?? Data(), as: UTF8.self)
        }
        #expect(decoded(parts[0]) == #"{"alg":"ES256","kid":"KEY1234567"}"#)
        #expect(decoded(parts[1]) == #"{"iss":"TEAM123456","iat":1800000000}"#)
        #expect(parts[2].count == 86, "64 bytes of signature in base64url")
        #expect(ProviderToken.isAppleID("KEY1234567") && !ProviderToken.isAppleID("key1234567"))
        #expect(!ProviderToken.isAppleID("KEY123456") && !ProviderToken.isAppleID("KEY1234567\""))
    }

    @Test(
        "replicas share one token, reuse it 40 minutes, and replace it once between them", arguments: Backend.allCases)
    func sharing(backend: Backend) throws {
        try withMigratedDatabase(backend) { database, _ in
            let clock = ManualWallClock()
            let key = try ES256Key(pem: try Self.p256())
            let replicas = try (0..<3).map { _ in
                try ProviderTokenSource(
                    database: database, key: key, keyID: "KEY1234567", teamID: "TEAM123456", clock: clock)
            }
            let first = try replicas.map { try $0.current() }
            #expect(Set(first.map(\.jwt)).count == 1, "the first replica mints, the others read it")
            clock.advance(by: 39 * 60)
            #expect(
                try replicas.map { try $0.current().jwt } == first.map(\.jwt), "reused while younger than 40 minutes")
            clock.advance(by: 2 * 60)
            let second = try replicas.map { try $0.current() }
            #expect(Set(second.map(\.jwt)).count == 1 && second[0].jwt != first[0].jwt)
            #expect(second[0].issuedAt == clock.unixSeconds)
            // Apple refused it as expired: too young to replace, so nothing is minted.
            #expect(try replicas[0].refresh(after: second[0]) == nil)
            clock.advance(by: 25 * 60)
            let third = try #require(try replicas[1].refresh(after: second[0]))
            #expect(third.jwt != second[0].jwt)
            #expect(
                try replicas[2].refresh(after: second[0]) == third, "another replica's refresh is taken, not redone")
        }
    }

    @Test(
        "the row keeps the token sealed with the auth key: the database alone holds no usable token; an older build's clear row is replaced",
        arguments: Backend.allCases)
    func sealedAtRest(backend: Backend) throws {
        try withMigratedDatabase(backend) { database, _ in
            let clock = ManualWallClock()
            let key = try ES256Key(pem: try Self.p256())
            let source = try ProviderTokenSource(
                database: database, key: key, keyID: "KEY1234567", teamID: "TEAM123456", clock: clock)
            let token = try source.current()
            let stored = try #require(
                try database.execute("SELECT token FROM apns_provider_token WHERE id = 1").first?.string("token"))
            #expect(stored.hasPrefix(ProviderTokenSource.sealedPrefix))
            #expect(!stored.contains(token.jwt) && !stored.contains("eyJ"), "no JWT in clear: \(stored)")
            // Another replica with the same key reads it; one with another key cannot, and mints its own.
            let same = try ProviderTokenSource(
                database: database, key: key, keyID: "KEY1234567", teamID: "TEAM123456", clock: clock)
            #expect(try same.current() == token)
            let other = try ProviderTokenSource(
                database: database, key: try ES256Key(pem: try Self.p256()), keyID: "KEY1234567", teamID: "TEAM123456",
                clock: clock)
            #expect(try other.current().jwt != token.jwt)
            // A row an older build wrote in clear is used, then replaced sealed at its refresh.
            try database.execute("UPDATE apns_provider_token SET token = $1", [.text(token.jwt)])
            let legacy = try ProviderTokenSource(
                database: database, key: key, keyID: "KEY1234567", teamID: "TEAM123456", clock: clock)
            #expect(try legacy.current().jwt == token.jwt)
            clock.advance(by: 41 * 60)
            _ = try legacy.current()
            let replaced = try #require(
                try database.execute("SELECT token FROM apns_provider_token WHERE id = 1").first?.string("token"))
            #expect(replaced.hasPrefix(ProviderTokenSource.sealedPrefix))
        }
    }
}
