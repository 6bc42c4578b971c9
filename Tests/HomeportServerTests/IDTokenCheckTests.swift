import Foundation
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// ID tokens as a hostile or broken provider (or someone who fetched its public keys) writes them,
/// minted by an independent library (PyJWT) in the stand-in provider: only a token signed by
/// the provider's published key, for one of our clients, in its time, is accepted.
@Suite("ID token checks", .tags(.process, .interop))
struct IDTokenCheckTests {
    static let client = "homeport-web"
    static let app = "homeport-app"

    /// A directory over a fresh database with one provider: the stand-in, with `client` and
    /// `app` as its clients here.
    func withProvider(
        link: Bool = false, _ body: (ProviderDirectory, OIDCProvider, OIDCStandIn, ManualWallClock) throws -> Void
    ) throws {
        let standIn = try OIDCStandIn()
        try withMigratedDatabase(.sqlite) { database, _ in
            let provider = OIDCProvider(
                id: "household", name: "Household", issuer: standIn.issuer, clientID: Self.client,
                clientSecretFile: nil, appClientIDs: [Self.app], scopes: OIDCProvider.defaultScopes,
                linkVerifiedEmail: link)
            #expect(try OIDCProviderStore(database).add(provider, now: 0))
            let clock = ManualWallClock()
            try body(ProviderDirectory(database: database, clock: clock), provider, standIn, clock)
        }
    }

    /// Whether the directory refuses `token`, with a reason that contains `reason`.
    func refuses(
        _ directory: ProviderDirectory, _ provider: OIDCProvider, _ token: String, _ reason: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            let identity = try directory.identity(in: token, from: provider)
            Issue.record("accepted: \(identity)", sourceLocation: sourceLocation)
        } catch {
            let text = (error as? ProviderError)?.description ?? String(describing: error)
            #expect(reason.isEmpty || text.contains(reason), "\(text)", sourceLocation: sourceLocation)
        }
    }

    @Test("a token signed by a published RSA or EC key for one of our clients is read, with what it says")
    func accepted() throws {
        try withProvider { directory, provider, standIn, clock in
            let now = clock.unixSeconds
            let rsa = try standIn.mint(
                standIn.claims(
                    subject: "ada-1", audience: Self.app, now: now, email: "Ada@Example.com", emailVerified: true,
                    extra: ["name": "Ada"]))
            let identity = try directory.identity(in: rsa, from: provider)
            #expect(identity.issuer == standIn.issuer && identity.subject == "ada-1")
            #expect(identity.email == "Ada@Example.com" && identity.emailVerified && identity.name == "Ada")
            #expect(identity.tokenID.hasPrefix(standIn.issuer + " jti:"))
            let ec = try standIn.mint(
                standIn.claims(subject: "ada-1", audience: [Self.client], now: now), key: "ec")
            #expect(try directory.identity(in: ec, from: provider).subject == "ada-1")
            // Both audiences ours, and the authorized party one of them.
            let both = try standIn.mint(
                standIn.claims(
                    subject: "ada-1", audience: [Self.client, Self.app], now: now, extra: ["azp": Self.app]))
            #expect(try directory.identity(in: both, from: provider).subject == "ada-1")
            // email_verified is a JSON boolean: 1 or "yes" is not a verified address.
            for loose in [1, "yes"] as [Any] {
                let token = try standIn.mint(
                    standIn.claims(subject: "ada-1", audience: Self.app, now: now, email: "a@b.c", emailVerified: loose)
                )
                #expect(try directory.identity(in: token, from: provider).emailVerified == false)
            }
            let fetches = try standIn.fetches()
            #expect(fetches.discovery == 1 && fetches.keys == 1)
        }
    }

    @Test("forged signatures, 'none', HS256 keyed with the public key, and a weak key are refused")
    func forged() throws {
        try withProvider { directory, provider, standIn, clock in
            let claims = standIn.claims(subject: "ada-1", audience: Self.app, now: clock.unixSeconds)
            refuses(directory, provider, try standIn.mint(claims, key: "rogue"), "signature")
            let unsigned = try standIn.mint(claims, key: "none")
            refuses(directory, provider, unsigned, "")
            refuses(directory, provider, unsigned + "c2lnbmF0dXJl", "algorithm")
            refuses(directory, provider, try standIn.mint(claims, key: "hs256-public"), "alg")
            refuses(directory, provider, try standIn.mint(claims, key: "weak"), "key the provider does not publish")
            // A signature cut off, a part too many, garbage.
            let good = try standIn.mint(claims)
            var parts = good.split(separator: ".").map(String.init)
            // One character of the signature changed (the middle, so the encoding stays canonical).
            var signature = Array(parts[2])
            signature[100] = signature[100] == "A" ? "B" : "A"
            parts[2] = String(signature)
            refuses(directory, provider, parts.joined(separator: "."), "signature")
            refuses(directory, provider, good + ".e30", "")
            refuses(directory, provider, "<html>not a token</html>", "")
            refuses(directory, provider, String(repeating: "a", count: 20_000), "")
            // An access token in JWT form, by its header or (Keycloak) its claim.
            refuses(directory, provider, try standIn.mint(claims, header: ["typ": "at+jwt"]), "access token")
            refuses(directory, provider, try standIn.mint(claims.merging(["typ": "Bearer"]) { $1 }), "not an ID token")
            // The header asks for an extension it must understand.
            refuses(directory, provider, try standIn.mint(claims, header: ["crit": ["exp"], "exp": 1]), "crit")
        }
    }

    @Test("an ES256 token whose signature is rewritten to its other valid form is the same token (one use)")
    func malleableSignature() throws {
        try withProvider { directory, provider, standIn, clock in
            var claims = standIn.claims(subject: "ada-1", audience: Self.app, now: clock.unixSeconds)
            claims["jti"] = nil
            let token = try standIn.mint(claims, key: "ec")
            var parts = token.split(separator: ".").map(String.init)
            var signature = try #require(IdentityProof.readBase64URL(parts[2]))
            #expect(signature.count == 64)
            // s' = n − s, the curve order minus s: as valid to OpenSSL as s.
            let order: [UInt8] = [
                0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
            ]
            var borrow = 0
            for index in (0..<32).reversed() {
                let difference = Int(order[index]) - Int(signature[32 + index]) - borrow
                signature[32 + index] = UInt8((difference + 256) % 256)
                borrow = difference < 0 ? 1 : 0
            }
            parts[2] = IdentityProof.base64URL(signature)
            let rewritten = parts.joined(separator: ".")
            #expect(rewritten != token)
            let first = try directory.identity(in: token, from: provider)
            let second = try directory.identity(in: rewritten, from: provider)
            #expect(first.tokenID == second.tokenID, "a rewritten signature must not make a new token")
        }
    }

    @Test("another issuer, another audience, a missing or foreign azp, expiry and a future iat are refused")
    func claims() throws {
        try withProvider { directory, provider, standIn, clock in
            let now = clock.unixSeconds
            func mint(_ extra: [String: Any], audience: Any = Self.app) throws -> String {
                try standIn.mint(standIn.claims(subject: "ada-1", audience: audience, now: now, extra: extra))
            }
            refuses(directory, provider, try mint(["iss": standIn.issuer + "/"]), "iss")
            refuses(directory, provider, try mint(["iss": "https://evil.example"]), "iss")
            refuses(directory, provider, try mint([:], audience: "someone-else"), "another client")
            refuses(directory, provider, try mint([:], audience: [Self.app, "someone-else"]), "another client")
            refuses(directory, provider, try mint([:], audience: [Self.app, Self.client]), "azp")
            refuses(directory, provider, try mint(["azp": "someone-else"]), "azp")
            refuses(directory, provider, try mint(["exp": now - 61]), "expired")
            refuses(directory, provider, try mint(["iat": now + 120]), "future")
            refuses(directory, provider, try mint(["nbf": now + 120]), "not valid yet")
            refuses(directory, provider, try mint(["sub": ""]), "sub")
            refuses(directory, provider, try mint(["exp": "tomorrow"]), "expiry")
            // Within the skew: a minute late, a clock a minute ahead.
            #expect(
                try directory.identity(in: try mint(["exp": now - 30, "iat": now + 30]), from: provider).subject
                    == "ada-1")
        }
    }

    @Test("an unknown kid fetches the keys again at most once a minute: rotation is followed, a flood is not")
    func rotation() throws {
        try withProvider { directory, provider, standIn, clock in
            let first = try standIn.mint(standIn.claims(subject: "ada-1", audience: Self.app, now: clock.unixSeconds))
            #expect(try directory.identity(in: first, from: provider).subject == "ada-1")
            #expect(try standIn.fetches().keys == 1)
            // A flood of made-up key ids: one fetch of the keys, whatever their number.
            clock.advance(by: 61)
            for index in 0..<40 {
                let token = try standIn.mint(
                    standIn.claims(subject: "ada-1", audience: Self.app, now: clock.unixSeconds),
                    kid: "made-up-\(index)")
                refuses(directory, provider, token, "key the provider does not publish")
            }
            #expect(try standIn.fetches().keys == 2)
            // The provider rotates its key: within the minute the new one is not fetched yet…
            try standIn.rotate()
            let rotated = try standIn.mint(standIn.claims(subject: "ada-1", audience: Self.app, now: clock.unixSeconds))
            refuses(directory, provider, rotated, "key the provider does not publish")
            #expect(try standIn.fetches().keys == 2)
            // …and after it, it is, once.
            clock.advance(by: 61)
            let fresh = try standIn.mint(standIn.claims(subject: "ada-1", audience: Self.app, now: clock.unixSeconds))
            #expect(try directory.identity(in: fresh, from: provider).subject == "ada-1")
            #expect(try directory.identity(in: fresh, from: provider).subject == "ada-1")
            #expect(try standIn.fetches().keys == 3)
        }
    }

    @Test("a discovery document naming another issuer, keys that are not a key set, or a provider down are refused")
    func brokenProvider() throws {
        try withProvider { directory, provider, standIn, clock in
            let token = {
                try standIn.mint(standIn.claims(subject: "ada-1", audience: Self.app, now: clock.unixSeconds))
            }
            try standIn.control(["issuer": "https://evil.example"])
            refuses(directory, provider, try token(), "another issuer")
            clock.advance(by: 61)
            try standIn.control(["jwks_body": "<html>maintenance</html>"])
            refuses(directory, provider, try token(), "key set")
            clock.advance(by: 61)
            try standIn.control(["discovery_status": 503])
            refuses(directory, provider, try token(), "503")
            clock.advance(by: 61)
            try standIn.control(["jwks_uri": "http://192.0.2.1/jwks"])
            refuses(directory, provider, try token(), "jwks_uri")
            // Working again: the next fetch (a minute on) finds it.
            try standIn.control([:])
            clock.advance(by: 61)
            #expect(try directory.identity(in: try token(), from: provider).subject == "ada-1")
        }
    }
}
