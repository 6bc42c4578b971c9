import Foundation
import HomeportCrypto
import HomeportHTTP

extension WebDoor {
    /// The providers as buttons: id and name.
    func providerButtons() -> [(id: String, name: String)] {
        ((try? service.providerSignIn.providers()) ?? []).map { ($0.id, $0.name) }
    }

    /// `GET /account/provider/ID/start` (`?process=connect` from the providers page): to the
    /// provider's sign-in page, the flow bound to this browser by a cookie.
    func startProvider(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        var connecting: Account?
        if request.query["process"] == "connect" {
            guard case .signedIn(_, let account) = context.caller else { return .seeOther("/account/login") }
            // Linking changes the account: only from this server's own page (its CSRF token in
            // the link), never from a link another site shows.
            guard
                Digest.constantTimeEquals(
                    Array((request.query["csrf_token"] ?? "").utf8), Array(context.csrfToken.utf8))
            else { return formExpired() }
            connecting = account
        }
        switch try service.providerRedirect.begin(
            providerID: request.pathParameters["id"] ?? "", connecting: connecting,
            callback: service.publicBase(for: request) + ProviderRedirect.callbackPath,
            address: request.remoteAddress)
        {
        case .rateLimited(let retryAfter): return tooMany(retryAfter)
        case .redirect(let url, let binding):
            var response = HTTPResponse.seeOther(url)
            response.headers.add(
                "Set-Cookie",
                cookies.setting(cookies.providerFlow, binding, maxAge: ProviderRedirect.flowLifetime))
            return response
        case .unavailable(let why):
            return page(
                "Sign-in unavailable", WebPage.message(why, link: ("/account/login", "Back to sign in")), status: 503)
        }
    }

    /// `GET /account/provider/callback`: the provider sends the browser back here.
    func providerCallback(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let end = try service.providerRedirect.complete(
            state: request.query["state"] ?? "", code: request.query["code"], error: request.query["error"],
            binding: request.cookies[cookies.providerFlow],
            callback: service.publicBase(for: request) + ProviderRedirect.callbackPath,
            address: request.remoteAddress, current: context.caller, issuer: request.query["iss"])
        var response: HTTPResponse
        switch end {
        case .failed(let why):
            response = page(
                "Not signed in", WebPage.message(why, link: ("/account/login", "Back to sign in")), status: 400)
        case .outcome(let outcome, let provider):
            response = providerAnswer(outcome, provider: provider, context: context)
        }
        response.headers.add("Set-Cookie", cookies.setting(cookies.providerFlow, "", maxAge: 0))
        return response
    }

    /// `GET /account/provider/signup`: the address for someone new the provider vouched for.
    func providerSignupForm(_ context: RequestContext) throws -> HTTPResponse {
        guard let (provider, identity) = try service.providerSignIn.pendingSignup(context.caller) else {
            return page(
                "Nothing to finish", WebPage.message("No sign-in waits here.", link: ("/account/login", "Sign in")),
                status: 409)
        }
        return page(
            "Create your account",
            WebPage.providerSignupForm(csrf: context.csrfToken, provider: provider.name, email: identity.email ?? ""))
    }

    /// `POST /account/provider/signup` (`email`).
    func providerSignup(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        let email = fields["email"] ?? ""
        // Read before the sign-up, which ends the pending session when it succeeds.
        let provider = try service.providerSignIn.pendingSignup(context.caller)?.provider
        let outcome = try service.providerSignIn.signup(
            email: email, address: request.remoteAddress, kind: .web, current: context.caller)
        return providerAnswer(outcome, provider: provider, context: context, email: email)
    }

    /// `GET /account/providers`: the provider accounts linked to this account, to remove, and
    /// the providers to connect.
    func providersPage(_ context: RequestContext, errors: [String] = [], status: Int = 200) throws -> HTTPResponse {
        guard case .signedIn(_, let account) = context.caller else { return .seeOther("/account/login") }
        let providers = (try? service.providerSignIn.providers()) ?? []
        let links = try service.providerSignIn.links(account)
        return page(
            "Sign-in providers",
            WebPage.providersPage(
                csrf: context.csrfToken,
                links: links.map { link in
                    (
                        link.providerID, link.subject,
                        providers.first { $0.id == link.providerID }?.name ?? link.providerID,
                        link.email ?? link.subject
                    )
                },
                connectable: providers.map { ($0.id, $0.name) }, errors: errors), status: status)
    }

    /// `POST /account/providers/remove` (`provider`, `account`).
    func removeProvider(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        guard case .signedIn(_, let account) = context.caller else { return .seeOther("/account/login") }
        switch try service.providerSignIn.unlink(
            providerID: fields["provider"] ?? "", subject: fields["account"] ?? "", account: account)
        {
        case .success: return .seeOther("/account/providers")
        case .failure(.notFound):
            return try providersPage(context, errors: ["That sign-in is not linked."], status: 400)
        case .failure(.noPassword):
            return try providersPage(
                context, errors: ["This is the only way into your account: set a password first."], status: 400)
        case .failure(.noVerifiedEmail):
            return try providersPage(
                context, errors: ["Your address is not verified yet: verify it first."], status: 400)
        }
    }

    private func providerAnswer(
        _ outcome: ProviderSignIn.Outcome, provider: OIDCProvider?, context: RequestContext, email: String = ""
    ) -> HTTPResponse {
        let name = provider?.name ?? "The provider"
        switch outcome {
        case .signIn(let signIn):
            return signInAnswer(signIn, title: "Sign in") {
                WebPage.loginForm(csrf: context.csrfToken, errors: $0, providers: providerButtons())
            }
        case .invalidToken:
            return page("Not signed in", WebPage.message("\(name)'s answer could not be accepted."), status: 400)
        case .signupPending(let token, _):
            var response = HTTPResponse.seeOther("/account/provider/signup")
            response.headers.add("Set-Cookie", cookies.settingPreLoginSession(token))
            return response
        case .connected:
            return .seeOther("/account/providers")
        case .connectedOther:
            return page(
                "Not connected",
                WebPage.message(
                    "That \(name) account is already connected to another account on this server.",
                    link: ("/account/providers", "Back")), status: 400)
        case .noPendingSignup:
            return page(
                "Nothing to finish", WebPage.message("No sign-in waits here.", link: ("/account/login", "Sign in")),
                status: 409)
        case .emailTaken:
            return page(
                "Create your account",
                WebPage.providerSignupForm(
                    csrf: context.csrfToken, provider: name, email: email,
                    errors: [
                        "An account already uses this address. Sign in to it with its password, then connect \(name) from your account page."
                    ]), status: 400)
        case .invalid(let problems):
            return page(
                "Create your account",
                WebPage.providerSignupForm(
                    csrf: context.csrfToken, provider: name, email: email, errors: problems.map(\.message)), status: 400
            )
        }
    }
}
