import Foundation
import HomeportCrypto
import HomeportHTTP
import HomeportWire

extension Router where Context == RequestContext {
    /// Declares the web door's group and adds its pages: HTML sign-in, sign-up, password reset and
    /// the verification code's step under `/account`, with a cookie session, a CSRF token (``CSRFMiddleware``) and a honeypot
    /// field. Limits are charged through the same ``AccountService`` functions as the app door,
    /// so both spend one budget. Paths under the reset-key prefix never reach the log.
    mutating func addWebDoor(
        _ service: AccountService, reader: SessionReader, product: String, csrfKey: [UInt8],
        identity: IdentityStore? = nil, push: PushCenter? = nil, signups: SignupQueue? = nil
    ) {
        let cookies = WebCookies(
            secure: service.settings.secureCookies, sessionLifetime: service.settings.sessionLifetime)
        let door = WebDoor(
            service: service, product: product, cookies: cookies, identity: identity, push: push, signups: signups)
        let trusted = service.settings.publicURL.flatMap(CSRFMiddleware.authority).map { [$0] } ?? []
        let middleware: [any HTTPMiddleware<RequestContext>] = [
            SessionMiddleware(reader: reader, credential: .cookie(cookies.session)),
            CSRFMiddleware(key: csrfKey, cookies: cookies, trustedAuthorities: trusted, refusal: door.formExpired),
        ]
        group(WebDoor.base, middleware: middleware) { account in
            account.get("") { request, context in door.pendingHandoff(request, context) ?? door.home(context) }
            account.get("/login") { _, context in door.loginPage(context) }
            account.post("/login", placement: .pool) { try door.login($0, $1) }
            account.get("/signup") { request, context in
                // An invitation's link (`?invitation=CODE`) carries its code into the form.
                let invitation = request.query["invitation"].flatMap { InvitationService.isCode($0) ? $0 : nil }
                return door.form(
                    title: "Create an account",
                    WebPage.signupForm(
                        csrf: context.csrfToken, providers: door.providerButtons(), invitation: invitation))
            }
            account.post("/signup", placement: .pool) { try door.signup($0, $1) }
            account.post("/logout") { try door.logout($0, $1) }
            account.get("/delete") { _, context in door.deleteForm(context) }
            account.post("/delete", placement: .pool) { try door.deleteAccount($0, $1) }
            account.get("/password/reset") { _, context in
                door.form(title: "Reset your password", WebPage.resetRequestForm(csrf: context.csrfToken))
            }
            account.post("/password/reset") { try door.requestReset($0, $1) }
            account.get("/password/reset/key/:key") { try door.resetForm($0, $1) }
            account.post("/password/reset/key/:key", placement: .pool) { try door.reset($0, $1) }
            account.get("/verify-email") { _, context in try door.verifyForm(context) }
            account.post("/verify-email") { try door.verifyEmail($0, $1) }
            account.post("/verify-email/resend") { try door.resendVerification($0, $1) }
            account.get("/2fa/authenticate") { _, context in try door.secondFactorForm(context) }
            account.post("/2fa/authenticate") { try door.authenticateSecondFactor($0, $1) }
            account.post("/2fa/webauthn/options") { try door.passkeyFactorOptions($0, $1) }
            account.post("/2fa/webauthn") { try door.authenticateWithPasskey($0, $1) }
            account.get("/2fa/totp") { _, context in try door.totpPage(context) }
            account.post("/2fa/totp", placement: .pool) { try door.activateTOTP($0, $1) }
            account.post("/2fa/totp/disable", placement: .pool) { try door.deactivateTOTP($0, $1) }
            account.get("/handoff/:id") { try door.handoffPage($0, $1) }
            account.get("/provider/callback", placement: .pool) { try door.providerCallback($0, $1) }
            account.get("/provider/signup") { _, context in try door.providerSignupForm(context) }
            account.post("/provider/signup", placement: .pool) { try door.providerSignup($0, $1) }
            account.get("/provider/:id/start", placement: .pool) { try door.startProvider($0, $1) }
            account.get("/providers") { _, context in try door.providersPage(context) }
            account.post("/providers/remove") { try door.removeProvider($0, $1) }
            account.post("/handoff/:id") { try door.decideHandoff($0, $1) }
            account.get("/notifications") { _, context in door.notificationsPage(context) }
            account.post("/notifications", placement: .pool) { try door.subscribe($0, $1) }
            account.post("/notifications/remove") { try door.unsubscribe($0, $1) }
            account.get("/signups") { _, context in try door.signupsPage(context) }
            account.post("/signups") { try door.decideSignup($0, $1) }
            account.get("/notifications.js") { _, _ in WebDoor.script(WebPushScripts.page) }
            account.get("/push-worker.js") { _, _ in WebDoor.script(WebPushScripts.worker) }
            account.post("/passkey/options") { try door.passkeyLoginOptions($0, $1) }
            account.post("/passkey/login", placement: .pool) { try door.passkeyLogin($0, $1) }
            account.get("/passkeys") { request, context in
                try door.passkeysPage(context, notice: request.query["added"] == nil ? nil : "The passkey was added.")
            }
            account.post("/passkeys/options", placement: .pool) { try door.passkeyCreationOptions($0, $1) }
            account.post("/passkeys/add") { try door.addPasskey($0, $1) }
            account.post("/passkeys/rename") { try door.renamePasskey($0, $1) }
            account.post("/passkeys/remove", placement: .pool) { try door.removePasskey($0, $1) }
            account.get("/passkeys.js") { _, _ in WebDoor.script(PasskeyScripts.page) }
        }
        logsSecrets(under: WebDoor.resetKeyPrefix)
        logsSecrets(under: WebDoor.handoffPrefix)
    }
}

/// Translates web forms into ``AccountService`` calls and answers into pages.
struct WebDoor: Sendable {
    static let base = "/account"
    /// The prefix of the links mailed for a password reset; what follows it is a secret.
    static let resetKeyPrefix = base + "/password/reset/key"

    let service: AccountService
    let product: String
    let cookies: WebCookies
    /// The installation, whose pairing link the account page shows when it has a key.
    var identity: IdentityStore?
    /// The notifications, whose Web Push the account page offers when the server sends it.
    var push: PushCenter?
    /// The sign-ups waiting for approval, which an admin decides on (`/account/signups`).
    var signups: SignupQueue?

    // MARK: Pages

    func home(_ context: RequestContext) -> HTTPResponse {
        guard case .signedIn(_, let account) = context.caller else { return .seeOther("/account/login") }
        var body = WebPage.signedIn(email: account.email, csrf: context.csrfToken, pairing: pairingLink())
        if !providerButtons().isEmpty { body += "<nav><a href=\"/account/providers\">Sign-in providers</a></nav>" }
        if takesWebPush {
            body += "<nav><a href=\"\(Self.notificationsPath)\">Notifications in this browser</a></nav>"
        }
        if offersPasskeys { body += "<nav><a href=\"\(Self.passkeysPath)\">Passkeys</a></nav>" }
        if signups != nil, account.isAdmin {
            body += "<nav><a href=\"\(Self.signupsPath)\">Sign-ups waiting for you</a></nav>"
        }
        return page("Your account", body)
    }

    func form(title: String, _ body: String) -> HTTPResponse {
        page(title, body)
    }

    func login(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        let email = fields["email"] ?? ""
        let outcome = try service.login(
            email: email, password: fields["password"] ?? "", address: request.remoteAddress, kind: .web,
            current: context.caller)
        if case .invalid(let problems) = outcome {
            return loginPage(context, email: email, errors: problems.map(\.message), status: 400)
        }
        return signInAnswer(outcome, title: "Sign in") {
            WebPage.loginForm(csrf: context.csrfToken, email: email, errors: $0)
        }
    }

    func signup(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        let email = fields["email"] ?? ""
        let invitation = fields["invitation"].flatMap { $0.isEmpty ? nil : $0 }
        let outcome = try service.signup(
            email: email, password: fields["password"] ?? "", address: request.remoteAddress, kind: .web,
            current: context.caller, invitation: invitation)
        return signInAnswer(outcome, title: "Create an account") {
            WebPage.signupForm(csrf: context.csrfToken, email: email, errors: $0, invitation: invitation)
        }
    }

    func logout(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        if let refusal = honeypot(request.formFields) { return refusal }
        if let session = context.caller.session { try service.logout(session) }
        var response = HTTPResponse.seeOther("/account/login")
        response.headers.add("Set-Cookie", cookies.clearingSession)
        response.headers.add("Set-Cookie", cookies.settingCSRF(try SecretToken.generate()))
        return response
    }

    func deleteForm(_ context: RequestContext) -> HTTPResponse {
        guard case .signedIn(_, let account) = context.caller else { return .seeOther("/account/login") }
        return page("Delete your account", WebPage.deleteForm(csrf: context.csrfToken, email: account.email))
    }

    /// Deletes the signed-in account once its password is confirmed; its cookie goes too.
    func deleteAccount(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        guard case .signedIn(let session, let account) = context.caller else { return .seeOther("/account/login") }
        let retry = { (errors: [String], status: Int) in
            page(
                "Delete your account",
                WebPage.deleteForm(csrf: context.csrfToken, email: account.email, errors: errors),
                status: status)
        }
        switch try service.deleteAccount(session: session, account: account, password: fields["password"] ?? "") {
        case .deleted:
            var response = page(
                "Account deleted",
                WebPage.message(
                    "Your account and everything that was its own on this server are deleted.",
                    link: ("/account/signup", "Create an account")))
            response.headers.add("Set-Cookie", cookies.clearingSession)
            response.headers.add("Set-Cookie", cookies.settingCSRF(try SecretToken.generate()))
            return response
        case .invalid(let problems): return retry(problems.map(\.message), 400)
        case .rateLimited(let retryAfter):
            var response = retry(["Too many attempts. Try again in \(retryAfter) seconds."], 429)
            response.headers.set("Retry-After", String(retryAfter))
            return response
        case .sessionEnded: return .seeOther("/account/login")
        }
    }

    // MARK: Answers

    func signInAnswer(
        _ outcome: AccountService.SignInOutcome, title: String, form: ([String]) -> String
    ) -> HTTPResponse {
        switch outcome {
        case .signedIn(let token, _, _):
            return signedIn(token)
        case .verificationPending(let token):
            // A pre-login session in the cookie: the code's step is bound to it.
            return startingSession(cookies.settingPreLoginSession(token), then: "/account/verify-email")
        case .secondFactorPending(let token, _):
            return secondStep(token)
        case .pending(let standing, _):
            return pendingPage(standing)
        case .invalid(let problems):
            return page(title, form(problems.map(\.message)), status: 400)
        case .rateLimited(let retryAfter), .tooManyFailedLogins(let retryAfter):
            return tooMany(retryAfter)
        case .signupClosed:
            return page("Sign-up is closed", WebPage.message("This server does not take new accounts."), status: 403)
        }
    }

    /// A sign-in that waits for its second factor: its pre-login session in the cookie, and on to
    /// the second step.
    func secondStep(_ token: String) -> HTTPResponse {
        startingSession(cookies.settingPreLoginSession(token), then: "/account/2fa/authenticate")
    }

    /// Signed in: see ``startingSession(_:then:)``.
    func signedIn(_ token: String) -> HTTPResponse {
        startingSession(cookies.settingSession(token), then: "/account")
    }

    /// Sets a new session cookie and a new CSRF seed, so that nothing minted before works after,
    /// and sends the browser on to `location`.
    private func startingSession(_ sessionCookie: String, then location: String) -> HTTPResponse {
        var response = HTTPResponse.seeOther(location)
        response.headers.add("Set-Cookie", sessionCookie)
        response.headers.add("Set-Cookie", cookies.settingCSRF((try? SecretToken.generate()) ?? ""))
        return response
    }

    func pendingPage(_ standing: Standing) -> HTTPResponse {
        let text =
            switch standing {
            case .waiting:
                "Your account is waiting for an administrator's approval. You can sign in once it is approved."
            case .held: "Your account is on hold. Please contact the administrator."
            case .mailFailed:
                "Your account is waiting for approval. We could not send you a confirmation mail; the administrator has been told."
            }
        return page("Not signed in yet", WebPage.message(text, link: ("/account/login", "Back to sign in")))
    }

    func tooMany(_ retryAfter: Int64) -> HTTPResponse {
        let minutes = max(1, (retryAfter + 59) / 60)
        var response = page(
            "Too many attempts",
            WebPage.message(
                "Too many attempts from here. Please wait \(minutes) minute\(minutes == 1 ? "" : "s") and try again.",
                link: ("/account/login", "Back to sign in")), status: 429)
        response.headers.set("Retry-After", String(retryAfter))
        return response
    }

    func page(_ title: String, _ body: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse.html(WebPage.render(title: title, product: product, body: body), status: status)
    }

    // MARK: Guards

    /// The page a form post refused by ``CSRFMiddleware`` gets.
    func formExpired() -> HTTPResponse {
        page(
            "Form expired", WebPage.message("This form has expired. Please go back, reload the page and try again."),
            status: 403)
    }

    /// Refuses a form whose honeypot field is filled (400).
    func honeypot(_ fields: [String: String]) -> HTTPResponse? {
        guard let trap = fields["website"], !trap.isEmpty else { return nil }
        return page("Not accepted", WebPage.message("This form could not be processed."), status: 400)
    }
}

extension WebDoor {
    /// The installation's pairing link at the public URL; `nil` without a key (or without an
    /// identity to read now), or when the public URL is a wildcard address.
    func pairingLink() -> PairingLink? {
        guard let installation = try? identity?.current(), let fingerprint = installation.keyFingerprint,
            // A wildcard listen address is nowhere an app can reach: give --public-url.
            let url = service.settings.reachablePublicURL
        else { return nil }
        return try? PairingLink(instanceID: installation.instanceID, keyFingerprint: fingerprint, url: url)
    }
}
