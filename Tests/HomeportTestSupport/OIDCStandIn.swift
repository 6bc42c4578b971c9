import Foundation

/// A stand-in OpenID Connect provider: `interop/oidc/standin.py`, which publishes a discovery
/// document and keys and mints ID tokens with PyJWT, well-formed or hostile, on request.
/// `scripts/test` installs it (in the APNs stand-in's virtualenv) and exports
/// `HOMEPORT_TEST_OIDC_DIR`; the Python is `HOMEPORT_TEST_APNS_PYTHON`.
public final class OIDCStandIn: @unchecked Sendable {
    private let running: PythonStandIn
    /// Its port on 127.0.0.1.
    public let port: Int

    /// Starts it and waits until it listens.
    public init() throws {
        running = try PythonStandIn(peer: "oidc", what: "OpenID Connect stand-in")
        port = running.port
    }

    deinit {
        running.stop()
    }

    /// Its issuer (and base URL).
    public var issuer: String { "http://127.0.0.1:\(port)" }

    /// An ID token with `claims`, signed with `key` (`rsa`, `ec`, `rogue`: an unpublished key
    /// under the RSA key's id, `weak`: a 1024-bit key, `hs256-public`: an HMAC keyed with the
    /// public key, `none`: unsigned); `kid` overrides the key id (`.some(nil)` leaves it out).
    public func mint(_ claims: [String: Any], key: String = "rsa", kid: String?? = .none, header: [String: Any] = [:])
        throws -> String
    {
        var request: [String: Any] = ["claims": claims, "key": key, "header": header]
        if case .some(let kid) = kid { request["kid"] = kid ?? NSNull() }
        return try post("/mint", request).text
    }

    /// Claims of a well-formed ID token for `audience` at `now`, overridden by `extra`.
    public func claims(
        subject: String, audience: Any, now: Int64, email: String? = nil, emailVerified: Any? = nil,
        extra: [String: Any] = [:]
    ) -> [String: Any] {
        var claims: [String: Any] = ["iss": issuer, "sub": subject, "aud": audience, "iat": now, "exp": now + 300]
        claims["jti"] = UUID().uuidString
        if let email { claims["email"] = email }
        if let emailVerified { claims["email_verified"] = emailVerified }
        return claims.merging(extra) { $1 }
    }

    /// Publishes a new RSA key in place of the old one; returns its id.
    @discardableResult
    public func rotate() throws -> String {
        (try post("/rotate", [:]).jsonObject?["kid"] as? String) ?? ""
    }

    /// Makes it misbehave: `issuer` (another issuer in its discovery document), `jwks_status`,
    /// `discovery_status`, `jwks_body`, `jwks_uri`; an empty object restores it.
    public func control(_ settings: [String: Any]) throws {
        _ = try post("/control", settings)
    }

    /// How often its discovery document and its keys were fetched.
    public func fetches() throws -> (discovery: Int, keys: Int) {
        let object = try RawHTTP.request(port: port, path: "/stats").jsonObject ?? [:]
        return ((object["discovery"] as? Int) ?? -1, (object["jwks"] as? Int) ?? -1)
    }

    /// How the client authenticated at the last token request: `basic`, `post` or `none`.
    public func tokenAuthentication() throws -> String {
        (try RawHTTP.request(port: port, path: "/stats").jsonObject?["token_auth"] as? String) ?? ""
    }

    private func post(_ path: String, _ object: [String: Any]) throws -> RawResponse {
        try running.post(path, object)
    }
}
