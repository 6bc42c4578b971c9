import Foundation
import HomeportHTTP
import HomeportWire

/// The web door's password pages: asking for a reset link, and setting a new password by it.
extension WebDoor {
    func requestReset(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        switch try service.passwords.requestPasswordReset(
            email: fields["email"] ?? "", address: request.remoteAddress, current: context.caller)
        {
        case .accepted:
            return page(
                "Check your mail",
                WebPage.message(
                    "If an account uses that address, we have sent it a link to set a new password.",
                    link: ("/account/login", "Back to sign in")))
        case .invalid(let problems):
            return page(
                "Reset your password",
                WebPage.resetRequestForm(csrf: context.csrfToken, errors: problems.map(\.message)), status: 400)
        case .rateLimited(let retryAfter):
            return tooMany(retryAfter)
        }
    }

    func resetForm(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let key = request.pathParameters["key"] ?? ""
        guard try service.passwords.account(forResetKey: key) != nil else { return invalidKeyPage() }
        return page("Set a new password", WebPage.resetForm(csrf: context.csrfToken, key: key))
    }

    func reset(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        let key = request.pathParameters["key"] ?? ""
        switch try service.passwords.resetPassword(key: key, password: fields["password"] ?? "") {
        case .reset:
            return page(
                "Password changed",
                WebPage.message(
                    "Your password is set, and every device that was signed in has been signed out.",
                    link: ("/account/login", "Sign in")))
        case .invalidKey:
            return invalidKeyPage()
        case .invalid(let problems):
            return page(
                "Set a new password",
                WebPage.resetForm(csrf: context.csrfToken, key: key, errors: problems.map(\.message)), status: 400)
        }
    }

    func invalidKeyPage() -> HTTPResponse {
        page(
            "Link not valid",
            WebPage.message(
                "This link is used up or has expired. Ask for a new one.",
                link: ("/account/password/reset", "Reset your password")), status: 400)
    }
}
