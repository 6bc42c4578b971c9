import Foundation
import HomeportHTTP
import HomeportWire

/// The web door's two-factor pages: the second step of a sign-in, TOTP's set-up (a QR code drawn
/// on the server, the key as text) with the recovery codes shown once, and turning it off. Set-up
/// and turning off ask for the password in the same form: it is the confirmation the app door
/// asks for with `auth/reauthenticate`.
extension WebDoor {
    private static let secondStepTitle = "Two-factor sign-in"

    func secondFactorForm(_ context: RequestContext, errors: [String] = [], status: Int = 200) throws
        -> HTTPResponse
    {
        guard let types = try service.pendingSecondFactor(context.caller) else { return .seeOther("/account/login") }
        var body = ""
        if types.contains("totp") || types.contains(Authenticator.recoveryCodes) || !types.contains("webauthn") {
            body = WebPage.secondFactorForm(csrf: context.csrfToken, errors: errors)
        } else {
            body = WebPage.errors(errors)
        }
        guard types.contains("webauthn") else { return page(Self.secondStepTitle, body, status: status) }
        body += WebPage.passkeyFactorSection(csrf: context.csrfToken)
        var response = page(Self.secondStepTitle, body, status: status)
        response.headers.set("Content-Security-Policy", Self.passkeyPolicy)
        return response
    }

    func authenticateSecondFactor(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        switch try service.completeSecondFactor(code: fields["code"] ?? "", caller: context.caller) {
        case .signedIn(let token?, _, _): return signedIn(token)
        case .signedIn(nil, _, _), .noneWaiting: return .seeOther("/account/login")
        case .incorrect:
            return try secondFactorForm(
                context, errors: ["That code is not right, or it was used already."], status: 400)
        case .tooManyAttempts(let retryAfter): return tooMany(retryAfter)
        }
    }

    /// `POST /account/2fa/webauthn/options`: options for the passkey the sign-in waits for, as
    /// JSON, kept on its pre-login session.
    func passkeyFactorOptions(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        if let refusal = honeypot(request.formFields) { return refusal }
        guard case .preLogin(let session, _) = context.caller,
            let pending = try SessionFactorStore(service.database).pending(keyHash: session.keyHash),
            let options = try service.passkeys.requestOptions(
                owner: PasskeyService.owner(session), purpose: "authenticate", userID: pending.userID)
        else {
            throw HTTPError(status: 409, code: APIErrorCode.badRequest, message: "No sign-in waits for a passkey.")
        }
        return try Self.ceremonyOptions(options)
    }

    /// `POST /account/2fa/webauthn` (`credential`): the sign-in's second step with a passkey.
    func authenticateWithPasskey(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        guard let text = fields["credential"], let credential = try? JSONSerialization.jsonObject(with: Data(text.utf8))
        else { return try secondFactorForm(context, errors: ["That passkey could not sign you in."], status: 400) }
        switch try service.completeSecondFactor(passkey: credential, caller: context.caller) {
        case .signedIn(let token?, _, _): return signedIn(token)
        case .signedIn(nil, _, _), .noneWaiting: return .seeOther("/account/login")
        case .incorrect:
            return try secondFactorForm(context, errors: ["That passkey could not sign you in."], status: 400)
        case .tooManyAttempts(let retryAfter): return tooMany(retryAfter)
        }
    }

    func totpPage(_ context: RequestContext, keepingOffer: Bool = false, errors: [String] = [], status: Int = 200)
        throws -> HTTPResponse
    {
        guard case .signedIn(let session, let account) = context.caller else { return .seeOther("/account/login") }
        switch try service.twoFactor.totpState(session: session, account: account, keepingOffer: keepingOffer) {
        case .active:
            return page(
                Self.secondStepTitle, WebPage.totpActive(csrf: context.csrfToken, errors: errors), status: status)
        case .offered(let secret, let url):
            let qr = QRCodeSVG.svg(url, id: "totp-qr") ?? ""
            return page(
                "Set up two-factor sign-in",
                WebPage.totpSetupForm(csrf: context.csrfToken, secret: secret, url: url, qr: qr, errors: errors),
                status: status)
        case .unavailable:
            return page(
                Self.secondStepTitle,
                WebPage.message("This server does not offer two-factor sign-in.", link: ("/account", "Back")),
                status: 404)
        }
    }

    func activateTOTP(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        guard case .signedIn(let session, let account) = context.caller else { return .seeOther("/account/login") }
        if let refusal = try confirmPassword(fields["password"] ?? "", session, account, context) { return refusal }
        switch try service.twoFactor.activateTOTP(code: fields["code"] ?? "", session: session, account: account) {
        case .activated:
            guard case .done(let codes) = try service.twoFactor.recoveryCodes(session: session, account: account),
                let unused = codes.unusedCodes, !unused.isEmpty
            else {
                // The recovery codes were made, and shown, with a passkey before.
                return page(
                    "Two-factor sign-in is on",
                    WebPage.message(
                        "Your authenticator app now signs you in too. Your recovery codes are the ones shown when you added your first passkey.",
                        link: ("/account", "Done")))
            }
            return page("Two-factor sign-in is on", WebPage.recoveryCodes(unused))
        case .incorrect:
            return try totpPage(
                context, keepingOffer: true, errors: ["That code is not right. Enter the code the app shows now."],
                status: 400)
        case .rateLimited(let retryAfter): return tooMany(retryAfter)
        case .reauthenticationRequired:
            return try totpPage(context, keepingOffer: true, errors: ["Enter your password."], status: 400)
        case .unavailable: return try totpPage(context)
        }
    }

    func deactivateTOTP(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        guard case .signedIn(let session, let account) = context.caller else { return .seeOther("/account/login") }
        if let refusal = try confirmPassword(fields["password"] ?? "", session, account, context) { return refusal }
        switch try service.twoFactor.deactivateTOTP(session: session, account: account) {
        case .done, .none:
            // A passkey left is still a second factor.
            let passkeysLeft = try !service.passkeys.passkeys(userID: account.id).isEmpty
            return page(
                Self.secondStepTitle,
                WebPage.message(
                    passkeysLeft
                        ? "Your authenticator app no longer signs you in; your passkeys still do, as the second step too."
                        : "Two-factor sign-in is off.", link: ("/account", "Back")))
        case .reauthenticationRequired:
            return try totpPage(context, keepingOffer: true, errors: ["Enter your password."], status: 400)
        }
    }

    /// Confirms the password typed into a form (the app door's `auth/reauthenticate`); the page
    /// to answer instead when it is wrong or its tries are spent.
    private func confirmPassword(_ password: String, _ session: Session, _ account: Account, _ context: RequestContext)
        throws -> HTTPResponse?
    {
        switch try service.reauthenticate(password: password, session: session, account: account) {
        case .confirmed: return nil
        case .incorrect:
            return try totpPage(context, keepingOffer: true, errors: ["That is not your password."], status: 400)
        case .rateLimited(let retryAfter): return tooMany(retryAfter)
        }
    }
}
