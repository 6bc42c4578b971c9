import Foundation
import HomeportHTTP
import HomeportWire

/// The app door's e-mail verification routes: `auth/email/verify` (GET, POST) and
/// `auth/email/verify/resend`.
extension AppDoor {
    /// `POST auth/email/verify`. As allauth: with verification by code on, a caller with no
    /// verification waiting gets 409 before the body is read; with it off, any key is one of
    /// allauth's link keys, and Homeport has none.
    func verifyEmail(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        let byCode = service.settings.emailVerification == .code
        if byCode, try !service.emailVerification.verificationPending(caller) {
            return answer(AuthEnvelope(status: 409))
        }
        let body: AuthRequest.EmailVerification
        switch decode(AuthRequest.EmailVerification.self, request, order: ["key"]) {
        case .success(let value): body = value
        case .failure(let problems): return invalid(problems.problems)
        }
        guard byCode else { return invalid([Self.invalidKeyProblem]) }
        switch try service.emailVerification.verifyEmail(code: body.key, caller: caller) {
        case .signedIn(let token, let account, let session):
            return answer(
                AuthEnvelope(
                    status: 200, data: userData(account, session),
                    meta: AuthMeta(isAuthenticated: true, sessionToken: token)))
        case .pending:
            // Verified, not approved: the same pre-login session carries the standing.
            var token: String?
            if case .preLogin(_, let existing) = caller { token = existing }
            return answer(
                AuthEnvelope(
                    status: 401, data: AuthData(flows: flows()),
                    meta: AuthMeta(isAuthenticated: false, sessionToken: token)
                ))
        case .secondFactorPending(let token, let types):
            return answer(
                AuthEnvelope(
                    status: 401, data: AuthData(flows: flows(secondFactor: types)),
                    meta: AuthMeta(isAuthenticated: false, sessionToken: token)))
        case .passkeySignupPending:
            // The same pre-login session waits for the passkey, as allauth's: no new token.
            return answer(
                AuthEnvelope(
                    status: 401, data: AuthData(flows: flows(passkeySignup: true)),
                    meta: AuthMeta(isAuthenticated: false)))
        case .incorrect: return invalid([Self.incorrectCodeProblem])
        case .missingCode: return invalid([Self.requiredKeyProblem])
        case .busy: return tooMany(1)
        case .noneWaiting: return answer(AuthEnvelope(status: 409))
        }
    }

    /// `GET auth/email/verify`: checks the code in `X-Email-Verification-Key` without using it.
    func checkVerification(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        let byCode = service.settings.emailVerification == .code
        if byCode, try !service.emailVerification.verificationPending(caller) {
            return answer(AuthEnvelope(status: 409))
        }
        let keys = request.headers.values(HomeportHeader.emailVerificationKey)
        // Two keys in one request would be two tries for the price of one, or an ambiguity.
        guard keys.count <= 1 else {
            return invalid([
                FieldProblem(code: AuthErrorCode.invalid, param: "key", message: "Send one verification key.")
            ])
        }
        guard let key = keys.first, !key.isEmpty else { return invalid([Self.requiredKeyProblem]) }
        guard byCode else { return invalid([Self.invalidKeyProblem]) }
        switch try service.emailVerification.checkVerificationCode(key, caller: caller) {
        case .valid(let account):
            let userObject =
                (try? JSONSerialization.jsonObject(with: HTTPResponse.encode(user(account)))) ?? [:]
            let object: [String: Any] = [
                "status": 200, "data": ["email": account.email, "user": userObject],
                "meta": ["is_authenticating": true],
            ]
            return answer(object)
        case .incorrect: return invalid([Self.incorrectCodeProblem])
        case .missingCode: return invalid([Self.requiredKeyProblem])
        case .busy: return tooMany(1)
        case .noneWaiting: return answer(AuthEnvelope(status: 409))
        }
    }

    /// `POST auth/email/verify/resend`.
    func resendVerification(_ caller: Caller) throws -> HTTPResponse {
        switch try service.emailVerification.resendVerification(caller: caller) {
        case .sent: return answer(AuthEnvelope(status: 200))
        case .noneWaiting: return answer(AuthEnvelope(status: 409))
        case .rateLimited(let retryAfter): return tooMany(retryAfter)
        }
    }

    static let requiredKeyProblem = FieldProblem(
        code: AuthErrorCode.required, param: "key", message: "This field is required.")

    static let incorrectCodeProblem = FieldProblem(
        code: AuthErrorCode.incorrectCode, param: "key", message: "Incorrect code.")

    static let invalidKeyProblem = FieldProblem(
        code: AuthErrorCode.invalidOrExpiredKey, param: "key", message: "Invalid or expired key.")
}
