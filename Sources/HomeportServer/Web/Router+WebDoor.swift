import Foundation
import HomeportCrypto
import HomeportHTTP
import HomeportWire

extension Router {
    /// Adds the web door: HTML sign-in, sign-up and password-reset pages under `/account`, with a
    /// cookie session, a CSRF token and a honeypot field. Limits are charged through the same
    /// ``AccountService`` functions as the app door, so both spend one budget.
    public mutating func addWebDoor(_ service: AccountService, product: String) {
        let door = WebDoor(service: service, product: product)
        get("/account") { try door.home($0) }
        get("/account/login") { door.form($0, title: "Sign in", WebPage.loginForm) }
        post("/account/login") { try door.login($0) }
        get("/account/signup") { door.form($0, title: "Create an account", WebPage.signupForm) }
        post("/account/signup") { try door.signup($0) }
        post("/account/logout") { try door.logout($0) }
        get("/account/password/reset") { door.form($0, title: "Reset your password", WebPage.resetRequestForm) }
        post("/account/password/reset") { try door.requestReset($0) }
        get("/account/password/reset/key/:key", secretParameters: true) { try door.resetForm($0) }
        post("/account/password/reset/key/:key", secretParameters: true) { try door.reset($0) }
    }
}

/// Translates web forms into ``AccountService`` calls and answers into pages.
struct WebDoor: Sendable {
    static let sessionCookie = "homeport_session"
    static let csrfCookie = "homeport_csrf"

    let service: AccountService
    let product: String

    // MARK: Pages

    func home(_ request: HTTPRequest) throws -> HTTPResponse {
        guard let token = request.cookies[Self.sessionCookie],
            let (_, account) = try service.authenticate(token: token, kind: .web)
        else { return .seeOther("/account/login") }
        let (csrf, cookie) = csrfToken(request)
        return page("Your account", WebPage.signedIn(email: account.email, csrf: csrf), setting: cookie)
    }

    func form(_ request: HTTPRequest, title: String, _ render: (String, String, [String]) -> String) -> HTTPResponse {
        let (csrf, cookie) = csrfToken(request)
        return page(title, render(csrf, "", []), setting: cookie)
    }

    func form(_ request: HTTPRequest, title: String, _ render: (String, [String]) -> String) -> HTTPResponse {
        let (csrf, cookie) = csrfToken(request)
        return page(title, render(csrf, []), setting: cookie)
    }

    func login(_ request: HTTPRequest) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = guardCheck(request, fields) { return refusal }
        let (csrf, _) = csrfToken(request)
        let email = fields["email"] ?? ""
        let outcome = try service.login(
            email: email, password: fields["password"] ?? "", address: request.remoteAddress, kind: .web, preLogin: nil)
        return signInAnswer(outcome, title: "Sign in", csrf: csrf) {
            WebPage.loginForm(csrf: csrf, email: email, errors: $0)
        }
    }

    func signup(_ request: HTTPRequest) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = guardCheck(request, fields) { return refusal }
        let (csrf, _) = csrfToken(request)
        let email = fields["email"] ?? ""
        let outcome = try service.signup(
            email: email, password: fields["password"] ?? "", address: request.remoteAddress, kind: .web)
        return signInAnswer(outcome, title: "Create an account", csrf: csrf) {
            WebPage.signupForm(csrf: csrf, email: email, errors: $0)
        }
    }

    func logout(_ request: HTTPRequest) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = guardCheck(request, fields) { return refusal }
        if let token = request.cookies[Self.sessionCookie],
            let session = try service.sessions.find(token: token, kind: .web, now: service.clock.unixSeconds)
        {
            try service.logout(session)
        }
        var response = HTTPResponse.seeOther("/account/login")
        response.headers.add("Set-Cookie", cookie(Self.sessionCookie, "", maxAge: 0))
        return response
    }

    func requestReset(_ request: HTTPRequest) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = guardCheck(request, fields) { return refusal }
        let (csrf, _) = csrfToken(request)
        switch try service.requestPasswordReset(
            email: fields["email"] ?? "", address: request.remoteAddress, preLogin: nil)
        {
        case .accepted:
            return page(
                "Check your mail",
                WebPage.message(
                    "If an account uses that address, we have sent it a link to set a new password.",
                    link: ("/account/login", "Back to sign in")))
        case .invalid(let problems):
            return page(
                "Reset your password", WebPage.resetRequestForm(csrf: csrf, errors: problems.map(\.message)),
                status: 400)
        case .rateLimited(let retryAfter):
            return tooMany(retryAfter)
        }
    }

    func resetForm(_ request: HTTPRequest) throws -> HTTPResponse {
        let key = request.pathParameters["key"] ?? ""
        guard try service.account(forResetKey: key) != nil else { return invalidKeyPage() }
        let (csrf, cookie) = csrfToken(request)
        return page("Set a new password", WebPage.resetForm(csrf: csrf, key: key), setting: cookie)
    }

    func reset(_ request: HTTPRequest) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = guardCheck(request, fields) { return refusal }
        let key = request.pathParameters["key"] ?? ""
        switch try service.resetPassword(key: key, password: fields["password"] ?? "") {
        case .reset:
            return page(
                "Password changed",
                WebPage.message(
                    "Your password is set, and every device that was signed in has been signed out.",
                    link: ("/account/login", "Sign in")))
        case .invalidKey:
            return invalidKeyPage()
        case .invalid(let problems):
            let (csrf, _) = csrfToken(request)
            return page(
                "Set a new password", WebPage.resetForm(csrf: csrf, key: key, errors: problems.map(\.message)),
                status: 400)
        }
    }

    // MARK: Answers

    private func signInAnswer(
        _ outcome: AccountService.SignInOutcome, title: String, csrf: String, form: ([String]) -> String
    ) -> HTTPResponse {
        switch outcome {
        case .signedIn(let token, _, _):
            var response = HTTPResponse.seeOther("/account")
            response.headers.add(
                "Set-Cookie", cookie(Self.sessionCookie, token, maxAge: service.settings.sessionLifetime))
            return response
        case .pending(_, let standing):
            let text =
                switch standing {
                case .waiting:
                    "Your account is waiting for an administrator's approval. You can sign in once it is approved."
                case .held: "Your account is on hold. Please contact the administrator."
                case .mailFailed:
                    "Your account is waiting for approval. We could not send you a confirmation mail; the administrator has been told."
                }
            return page("Not signed in yet", WebPage.message(text, link: ("/account/login", "Back to sign in")))
        case .invalid(let problems):
            return page(title, form(problems.map(\.message)), status: 400)
        case .rateLimited(let retryAfter):
            return tooMany(retryAfter)
        case .signupClosed:
            return page("Sign-up is closed", WebPage.message("This server does not take new accounts."), status: 403)
        }
    }

    private func tooMany(_ retryAfter: Int64) -> HTTPResponse {
        let minutes = max(1, (retryAfter + 59) / 60)
        var response = page(
            "Too many attempts",
            WebPage.message(
                "Too many attempts from here. Please wait \(minutes) minute\(minutes == 1 ? "" : "s") and try again.",
                link: ("/account/login", "Back to sign in")), status: 429)
        response.headers.set("Retry-After", String(retryAfter))
        return response
    }

    private func invalidKeyPage() -> HTTPResponse {
        page(
            "Link not valid",
            WebPage.message(
                "This link is used up or has expired. Ask for a new one.",
                link: ("/account/password/reset", "Reset your password")), status: 400)
    }

    private func page(_ title: String, _ body: String, status: Int = 200, setting cookie: String? = nil) -> HTTPResponse
    {
        var response = HTTPResponse.html(WebPage.render(title: title, product: product, body: body), status: status)
        if let cookie { response.headers.add("Set-Cookie", cookie) }
        return response
    }

    // MARK: Guards

    /// The CSRF token of the request's cookie, or a new one and the cookie that sets it.
    private func csrfToken(_ request: HTTPRequest) -> (token: String, cookie: String?) {
        if let existing = request.cookies[Self.csrfCookie], SecretToken.isWellFormed(existing) {
            return (existing, nil)
        }
        let token = (try? SecretToken.generate()) ?? ""
        return (token, cookie(Self.csrfCookie, token, maxAge: nil))
    }

    /// Refuses a form whose CSRF field does not match its cookie (403) or whose honeypot is filled (400).
    private func guardCheck(_ request: HTTPRequest, _ fields: [String: String]) -> HTTPResponse? {
        let cookieToken = request.cookies[Self.csrfCookie] ?? ""
        let fieldToken = fields["csrf_token"] ?? ""
        guard SecretToken.isWellFormed(cookieToken),
            Digest.constantTimeEquals(Array(cookieToken.utf8), Array(fieldToken.utf8))
        else {
            return page(
                "Form expired",
                WebPage.message("This form has expired. Please go back, reload the page and try again."), status: 403)
        }
        if let trap = fields["website"], !trap.isEmpty {
            return page("Not accepted", WebPage.message("This form could not be processed."), status: 400)
        }
        return nil
    }

    private func cookie(_ name: String, _ value: String, maxAge: Int64?) -> String {
        var text = "\(name)=\(value); Path=/; HttpOnly; SameSite=Lax"
        if let maxAge { text += "; Max-Age=\(maxAge)" }
        if service.settings.secureCookies { text += "; Secure" }
        return text
    }
}
