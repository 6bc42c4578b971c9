import Foundation
import HomeportHTTP
import HomeportWire

/// The web door's e-mail verification pages: the code's form, checking it, and sending another.
extension WebDoor {
    func verifyForm(_ context: RequestContext) throws -> HTTPResponse {
        guard try service.emailVerification.verificationPending(context.caller) else {
            return .seeOther("/account/login")
        }
        return page("Confirm your address", WebPage.verifyForm(csrf: context.csrfToken))
    }

    func verifyEmail(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        switch try service.emailVerification.verifyEmail(code: fields["code"] ?? "", caller: context.caller) {
        case .signedIn(let token, _, _): return signedIn(token)
        case .pending(let standing): return pendingPage(standing)
        case .secondFactorPending(let token, _): return secondStep(token)
        // Only the app door begins a sign-up with a passkey.
        case .passkeySignupPending: return noVerificationPage()
        case .incorrect:
            return page(
                "Confirm your address",
                WebPage.verifyForm(
                    csrf: context.csrfToken,
                    errors: ["That code is not the one we sent. Please check it and try again."]),
                status: 400)
        case .missingCode:
            return page(
                "Confirm your address",
                WebPage.verifyForm(csrf: context.csrfToken, errors: ["Enter the code we mailed you."]), status: 400)
        case .busy: return tooMany(1)
        case .noneWaiting: return noVerificationPage()
        }
    }

    func resendVerification(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        if let refusal = honeypot(request.formFields) { return refusal }
        switch try service.emailVerification.resendVerification(caller: context.caller) {
        case .sent:
            return page(
                "Confirm your address",
                WebPage.verifyForm(
                    csrf: context.csrfToken, note: "A new code is on its way; the old one no longer works."))
        case .rateLimited(let retryAfter): return tooMany(retryAfter)
        case .noneWaiting: return noVerificationPage()
        }
    }

    func noVerificationPage() -> HTTPResponse {
        page(
            "No code is waiting",
            WebPage.message(
                "No confirmation is waiting here: the code was used, expired or tried too often. Sign in again for a new one.",
                link: ("/account/login", "Sign in")), status: 409)
    }
}
