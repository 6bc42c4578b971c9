import Foundation
import HomeportCrypto
import HomeportWire

/// What an accepted ID token says of the person (OpenID Connect Core §2, §5.1).
struct ProviderIdentity: Sendable, Hashable {
    /// The issuer, exactly as the provider's discovery document names it.
    var issuer: String
    /// The person's id at the issuer (`sub`): with `issuer`, who they are.
    var subject: String
    /// Their address, as the provider has it, if the token carries one.
    var email: String?
    /// Whether the provider says it verified that address.
    var emailVerified: Bool
    /// A name to show, if the token carries one.
    var name: String?
    /// When the token stops being accepted, in Unix seconds.
    var expiresAt: Int64 = 0
    /// What names this token among the issuer's: its `jti`, or its digest when it has none. A
    /// token is accepted once.
    var tokenID: String = ""
}

/// Checks an ID token (a JWS in compact form) as OpenID Connect Core §3.1.3.7 asks, refusing
/// anything it does not fully understand.
struct IDTokenCheck: Sendable {
    /// The issuer the token must name.
    var issuer: String
    /// The client ids the token may be for: the server's own and its apps'.
    var audiences: Set<String>
    /// How far clocks may disagree, in seconds.
    var skew: Int64 = 60
    /// The longest token accepted, in bytes.
    static let maximumLength = 16 * 1024

    /// The identity in `token`, signed by one of `keys`; `nonce` is the one this server issued,
    /// when it issued one (the browser flow).
    ///
    /// - Throws: ``ProviderError`` saying what is wrong, or ``UnknownKey`` when the token's
    ///   signature names a key the set lacks (the caller may fetch the set again, once).
    func identity(in token: String, keys: JSONWebKeySet, now: Int64, nonce: String? = nil) throws -> ProviderIdentity {
        guard token.utf8.count <= Self.maximumLength else { throw ProviderError("the ID token is too long") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = IdentityProof.readBase64URL(String(parts[0])),
            let claimBytes = IdentityProof.readBase64URL(String(parts[1])),
            let signature = IdentityProof.readBase64URL(String(parts[2]))
        else { throw ProviderError("the ID token is not a signed JWT (three base64url parts)") }
        guard let header = Self.object(headerBytes) else { throw ProviderError("the ID token's header is not JSON") }
        guard let name = header["alg"] as? String, let algorithm = SignatureAlgorithm(rawValue: name) else {
            throw ProviderError("the ID token's algorithm is not RS256 or ES256")
        }
        guard header["crit"] == nil else { throw ProviderError("the ID token names critical extensions") }
        // An access token in JWT form (RFC 9068) is not an ID token, whoever it is for.
        if let type = header["typ"] as? String, type.lowercased().hasSuffix("at+jwt") {
            throw ProviderError("the token is an access token, not an ID token")
        }
        let kid: String?
        switch header["kid"] {
        case nil: kid = nil
        case let text as String: kid = text
        default: throw ProviderError("the ID token's key id is not a string")
        }
        let candidates = keys.candidates(algorithm: algorithm, kid: kid)
        guard !candidates.isEmpty else { throw UnknownKey(kid: kid) }
        let signed = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        guard candidates.contains(where: { $0.isValidSignature(signature, of: signed) }) else {
            throw ProviderError("the ID token's signature is not the provider's")
        }
        guard let claims = Self.object(claimBytes) else { throw ProviderError("the ID token's claims are not JSON") }
        var identity = try identity(claims, now: now, nonce: nonce)
        // The signed part, not the whole token: an ECDSA signature has two valid forms (s and
        // n − s), and a token whose signature was rewritten must not count as another.
        let digest = Digest.sha256Hex(String(parts[0]) + "." + String(parts[1]))
        identity.tokenID = issuer + " " + ((claims["jti"] as? String).map { "jti:" + $0 } ?? "sha256:" + digest)
        return identity
    }

    /// The signature named a key the provider's set does not hold (yet).
    struct UnknownKey: Error {
        var kid: String?
    }

    private func identity(_ claims: [String: Any], now: Int64, nonce: String?) throws -> ProviderIdentity {
        guard claims["iss"] as? String == issuer else { throw ProviderError("the ID token's issuer is not \(issuer)") }
        let audience: [String]
        switch claims["aud"] {
        case let one as String: audience = [one]
        case let many as [Any]:
            audience = many.compactMap { $0 as? String }
            guard audience.count == many.count, !audience.isEmpty else {
                throw ProviderError("the ID token's audience is not a list of strings")
            }
        default: throw ProviderError("the ID token has no audience")
        }
        // Every audience is one of ours (Core §3.1.3.7 point 3), and with several, the party it
        // was issued to (`azp`) is named and is ours.
        guard audience.allSatisfy(audiences.contains) else {
            throw ProviderError("the ID token is for another client")
        }
        if let party = claims["azp"] {
            guard let party = party as? String, audiences.contains(party) else {
                throw ProviderError("the ID token was issued to another client (azp)")
            }
        } else if audience.count > 1 {
            throw ProviderError("the ID token names several audiences and no azp")
        }
        guard let expires = Self.seconds(claims["exp"]) else { throw ProviderError("the ID token has no expiry") }
        guard now < expires + skew else { throw ProviderError("the ID token has expired") }
        guard let issued = Self.seconds(claims["iat"]) else { throw ProviderError("the ID token has no issue time") }
        guard issued <= now + skew else { throw ProviderError("the ID token was issued in the future") }
        if let notBefore = claims["nbf"] {
            guard let start = Self.seconds(notBefore), start <= now + skew else {
                throw ProviderError("the ID token is not valid yet")
            }
        }
        if let nonce {
            guard claims["nonce"] as? String == nonce else { throw ProviderError("the ID token's nonce is not ours") }
        }
        // Keycloak marks its tokens' kind in a claim: only an ID token signs in.
        if let kind = claims["typ"] as? String, kind != "ID" {
            throw ProviderError("the token is a \(kind.prefix(20)) token, not an ID token")
        }
        guard let subject = claims["sub"] as? String, (1...255).contains(subject.utf8.count) else {
            throw ProviderError("the ID token names nobody (sub)")
        }
        let email = (claims["email"] as? String).flatMap { $0.isEmpty ? nil : $0 }
        // Some providers write the boolean as a string.
        let verified =
            Self.boolean(claims["email_verified"])
            ?? ((claims["email_verified"] as? String).map { $0 == "true" } ?? false)
        let name = (claims["name"] as? String) ?? (claims["preferred_username"] as? String)
        return ProviderIdentity(
            issuer: issuer, subject: subject, email: email, emailVerified: email != nil && verified,
            name: name.flatMap { $0.isEmpty ? nil : String($0.prefix(200)) }, expiresAt: expires + skew)
    }

    /// A JSON object with no key named twice, or `nil`.
    private static func object(_ bytes: [UInt8]) -> [String: Any]? {
        guard StrictJSON.isValidWithoutRepeatedKeys(bytes) else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
    }

    /// A JSON `true` or `false`; `nil` for anything else, a number included (Foundation reads
    /// both as `NSNumber`, and `1 as? Bool` succeeds).
    private static func boolean(_ value: Any?) -> Bool? {
        guard let number = value as? NSNumber, String(cString: number.objCType) == "c" else { return nil }
        return number.boolValue
    }

    /// A NumericDate: a JSON number of seconds (a fraction allowed, a boolean not).
    private static func seconds(_ value: Any?) -> Int64? {
        guard let number = value as? NSNumber, boolean(number) == nil else { return nil }
        let double = number.doubleValue
        guard double.isFinite, abs(double) < 1e15 else { return nil }
        return Int64(double)
    }
}
