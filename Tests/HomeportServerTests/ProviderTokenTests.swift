import Foundation
import HomeportAPNs
import HomeportCrypto
import HomeportStorage
import HomeportTestSupport
import Testing

@testable import HomeportServer

@Suite("APNs provider tokens shared by replicas", .tags(.postgres))
struct ProviderTokenTests {
    @Test(
        "replicas share one token, reuse it 40 minutes, and replace it once between them", arguments: Backend.allCases)
    func sharing(backend: Backend) throws {
        try withMigratedDatabase(backend) { database, _ in
            let clock = ManualWallClock()
            let key = try ES256Key(pem: try OpenSSLKeys.p256())
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
            let key = try ES256Key(pem: try OpenSSLKeys.p256())
            let source = try ProviderTokenSource(
                database: database, key: key, keyID: "KEY1234567", teamID: "TEAM123456", clock: clock)
            let token = try source.current()
            let stored = try #require(
                try database.execute("SELECT token FROM apns_provider_token WHERE id = 1").first?.string("token"))
            #expect(stored.hasPrefix(ProviderTokenSource.sealedPrefix))
            // Any of the JWT's three parts in clear would be a leak; a short run such as "eyJ" is not, since
            // the sealed text is base64 too and shows any three letters by chance about once in a thousand rows.
            let parts = token.jwt.split(separator: ".").map(String.init)
            #expect(parts.count == 3 && parts.allSatisfy { !stored.contains($0) }, "no JWT in clear: \(stored)")
            // Another replica with the same key reads it; one with another key cannot, and mints its own.
            let same = try ProviderTokenSource(
                database: database, key: key, keyID: "KEY1234567", teamID: "TEAM123456", clock: clock)
            #expect(try same.current() == token)
            let other = try ProviderTokenSource(
                database: database, key: try ES256Key(pem: try OpenSSLKeys.p256()), keyID: "KEY1234567",
                teamID: "TEAM123456",
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
