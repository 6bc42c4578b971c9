import Foundation
import HomeportCrypto
import HomeportHTTP

extension WebDoor {
    /// The prefix of a handoff's page; what follows it names the handoff (kept out of the log).
    static let handoffPrefix = base + "/handoff"

    /// `GET /account/handoff/ID`: signed out, the handoff is remembered in a cookie and the
    /// person signs in by any means first (the account page sends them back); signed in, the
    /// page that names the device and asks to confirm it. A link followed from another site
    /// (`Sec-Fetch-Site: cross-site`) is not remembered: a stranger's handoff would otherwise
    /// greet the person at their next sign-in. (An app opens the page itself, as no site's.)
    func handoffPage(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let id = request.pathParameters["id"] ?? ""
        guard let (device, redirect) = try service.handoffs.waitingHandoff(id: id) else { return handoffGone() }
        guard case .signedIn(_, let account) = context.caller else {
            var response = HTTPResponse.seeOther("/account/login")
            if request.headers.values("Sec-Fetch-Site").allSatisfy({ $0.lowercased() != "cross-site" }) {
                response.headers.add(
                    "Set-Cookie", cookies.setting(cookies.handoff, id, maxAge: HandoffService.handoffLifetime))
            }
            return response
        }
        var response = page(
            "Sign in \(device)?",
            WebPage.handoffForm(
                csrf: context.csrfToken, id: id, device: device, email: account.email, product: product,
                returnsTo: Self.destination(redirect)))
        response.headers.add("Set-Cookie", cookies.setting(cookies.handoff, "", maxAge: 0))
        return response
    }

    /// `POST /account/handoff/ID` (`decision`: `allow` or `deny`): the browser goes back to the
    /// app with the code, or with `error=access_denied`. The way back is a link the page follows
    /// (the pages' `form-action 'self'` would stop a redirect to the app's scheme).
    func decideHandoff(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        guard case .signedIn(let session, let account) = context.caller else { return .seeOther("/account/login") }
        let allow = fields["decision"] == "allow"
        guard
            let back = try service.handoffs.decideHandoff(
                id: request.pathParameters["id"] ?? "", allow: allow, session: session, account: account)
        else { return handoffGone() }
        return page(
            allow ? "Signed in" : "Not signed in",
            WebPage.handoffDone(
                back, text: allow ? "Returning to the app…" : "Nothing was signed in. Returning to the app…"))
    }

    /// Signed in with a handoff waiting in the cookie: its page.
    func pendingHandoff(_ request: HTTPRequest, _ context: RequestContext) -> HTTPResponse? {
        guard context.caller.isSignedIn, let id = request.cookies[cookies.handoff], !id.isEmpty,
            id.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "/") })
        else { return nil }
        return .seeOther(Self.handoffPrefix + "/" + id)
    }

    /// Where a handoff returns, for a person: an app's scheme, or "a program on this computer".
    static func destination(_ redirect: String) -> String {
        if redirect.lowercased().hasPrefix("http://") { return "a program on this computer (\(redirect.prefix(40)))" }
        return "the app " + String(redirect.prefix { $0 != ":" })
    }

    /// The page of a handoff that is no more; the cookie that may have led here is cleared, so
    /// the account page does not send the browser back.
    func handoffGone() -> HTTPResponse {
        var response = page(
            "Link expired",
            WebPage.message(
                "This sign-in link has expired or was already used. Start again from the app.",
                link: ("/account", "Your account")), status: 410)
        response.headers.add("Set-Cookie", cookies.setting(cookies.handoff, "", maxAge: 0))
        return response
    }
}
