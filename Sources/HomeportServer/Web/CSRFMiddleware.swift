import Foundation
import HomeportCrypto
import HomeportHTTP

/// The web door's CSRF defence: a token bound to the browser's seed and to its session, checked
/// on every form post together with the request's origin.
///
/// The browser holds a random seed in a cookie; the token its forms carry is an HMAC, under a
/// key only the server knows (shared by every replica through the database), of that seed and
/// the session the browser is signed into. So a pair an attacker makes up (a cookie and a field
/// of their choosing) fails, a token minted before sign-in does not work after it (the seed is
/// replaced at sign-in and sign-out, and the session is part of the token), and a post whose
/// `Origin` (or, without one, `Referer`) names another site is refused before the token is
/// looked at.
struct CSRFMiddleware: HTTPMiddleware {
    let key: [UInt8]
    let cookies: WebCookies
    /// Authorities (`host[:port]`) a form may also come from, besides the request's own `Host`:
    /// the public address's, for a proxy that rewrites `Host`.
    let trustedAuthorities: [String]
    /// The page a refused post gets.
    let refusal: @Sendable () -> HTTPResponse

    func handle(
        _ request: HTTPRequest, context: RequestContext,
        next: (HTTPRequest, RequestContext) throws -> HTTPResponse
    ) throws -> HTTPResponse {
        var context = context
        let existing = request.cookies[cookies.csrf].flatMap { SecretToken.isWellFormed($0) ? $0 : nil }
        let seed = try existing ?? SecretToken.generate()
        context.csrfToken = Self.token(key: key, seed: seed, session: context.caller.session?.keyHash)
        if request.method != .get && request.method != .head {
            let field = Array((request.formFields["csrf_token"] ?? "").utf8)
            guard isSameOrigin(request), existing != nil,
                Digest.constantTimeEquals(field, Array(context.csrfToken.utf8))
            else { return refusal() }
        }
        var response = try next(request, context)
        let setsSeed = response.headers.values("Set-Cookie").contains { $0.hasPrefix(cookies.csrf + "=") }
        if existing == nil && !setsSeed { response.headers.add("Set-Cookie", cookies.settingCSRF(seed)) }
        return response
    }

    /// The token for a seed and a session (or none): base64url of
    /// HMAC-SHA-256(key, "homeport-csrf" ‖ seed ‖ session hash).
    static func token(key: [UInt8], seed: String, session: String?) -> String {
        SecretToken.base64URL(Digest.hmacSHA256(key: key, Array("homeport-csrf\n\(seed)\n\(session ?? "-")".utf8)))
    }

    /// Whether the post comes from a page of this server: its `Origin`, or without one its
    /// `Referer`, names the request's own `Host` or a trusted authority. A request with neither
    /// (not a browser's) passes this check and still needs its token.
    func isSameOrigin(_ request: HTTPRequest) -> Bool {
        let allowed = ([request.headers["Host"]].compactMap { $0 } + trustedAuthorities).map { $0.lowercased() }
        let origins = request.headers.values("Origin")
        if !origins.isEmpty {
            guard origins.count == 1, let authority = Self.authority(origins[0]) else { return false }
            return allowed.contains(authority)
        }
        if let referer = request.headers["Referer"] {
            guard let authority = Self.authority(referer) else { return false }
            return allowed.contains(authority)
        }
        return true
    }

    /// `host[:port]` of an absolute `http(s)://` URL, lowercased; `nil` for anything else
    /// (including the `null` origin of sandboxed and privacy-sensitive contexts).
    static func authority(_ url: String) -> String? {
        let lowered = url.lowercased()
        for scheme in ["https://", "http://"] where lowered.hasPrefix(scheme) {
            let rest = lowered.dropFirst(scheme.count)
            let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            guard !authority.isEmpty, !authority.contains("@") else { return nil }
            return String(authority)
        }
        return nil
    }
}
