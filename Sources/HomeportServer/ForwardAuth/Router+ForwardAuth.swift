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
    mutating func addForwardAuth() {
        let answers = ForwardAnswers()
        get(HomeportPath.authForward) { _, context in
            guard case .signedIn(let session, let account) = context.caller else { throw RequireSignedIn.refusal }
            return try answers.response(session: session, account: account)
        }
    }
}
