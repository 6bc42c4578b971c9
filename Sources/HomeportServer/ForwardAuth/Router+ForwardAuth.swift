import Foundation
import HomeportHTTP
import HomeportWire

extension Router where Context == RequestContext {
    /// `GET /api/v1/auth/forward`: forward auth for a reverse proxy (nginx `auth_request`, Caddy
    /// `forward_auth`, Traefik `forwardAuth`) in front of a product written in any language.
    ///
    /// The proxy asks with the original request's header fields; the one session reader
    /// decides, by every rule of the API prefix (the header only, a token sent twice refused,
    /// pre-login tokens and held accounts refused, an ended session refused on every replica
    /// within the session cache's second). A signed-in session gets 200 with the account in
    /// `X-Homeport-Account-Id`, `X-Homeport-Account-Email` and `X-Homeport-Session` (a handle,
    /// never the token), which the proxy copies onto the request it passes on; anyone else the
    /// API's one 401. `no-store`, as every answer under the prefix. Declared inside the API
    /// prefix's group, after it. Each session's answer is prepared once (``ForwardAnswers``).
    ///
    /// A request that names the original one in `X-Forwarded-Uri` (Caddy's `forward_auth` and
    /// Traefik's `forwardAuth` send it) is a proxy's question: its 200 carries the header fields
    /// alone, no body. Those proxies never read the body, and their HTTP client then closes the
    /// connection instead of keeping it: a new connection to Homeport for every request.
    mutating func addForwardAuth() {
        let answers = ForwardAnswers()
        get(HomeportPath.authForward) { request, context in
            guard case .signedIn(let session, let account) = context.caller else { throw RequireSignedIn.refusal }
            return try answers.response(
                session: session, account: account, headOnly: request.headers.contains(Self.forwardedURI))
        }
    }

    /// The field in which a proxy names the request it asks about.
    static var forwardedURI: String { "X-Forwarded-Uri" }
}
