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
    /// prefix's group, after it.
    mutating func addForwardAuth() {
        get(HomeportPath.authForward) { request, context in
            guard case .signedIn(let session, let account) = context.caller else { throw RequireSignedIn.refusal }
            let caller = SignedIn(session: session, account: account, clientAddress: request.remoteAddress)
            let handle = caller.sessionHandle
            var response = HTTPResponse.json(bytes: try Self.forwardAuthBody(caller, handle: handle))
            response.headers.add(HomeportHeader.accountID, String(caller.accountID))
            response.headers.add(HomeportHeader.accountEmail, caller.email)
            response.headers.add(HomeportHeader.sessionHandle, handle)
            return response
        }
    }

    /// ``ForwardAuthAnswer``'s bytes, as the JSON encoder writes them: written directly, since
    /// an address is a dot-atom with nothing JSON escapes (the encoder still writes one that has).
    static func forwardAuthBody(_ caller: SignedIn, handle: String) throws -> Data {
        guard !caller.email.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 })
        else {
            return try HTTPResponse.encode(
                ForwardAuthAnswer(accountId: caller.accountID, email: caller.email, session: handle))
        }
        return Data(#"{"accountId":\#(caller.accountID),"email":"\#(caller.email)","session":"\#(handle)"}"#.utf8)
    }
}
