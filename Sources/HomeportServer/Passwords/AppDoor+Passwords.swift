import Foundation
import HomeportHTTP
import HomeportWire

/// The app door's password routes: `account/password/change`, `auth/password/request` and
/// `auth/password/reset` (GET, POST).
extension AppDoor {
    func changePassword(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(let session, let account) = caller else { return notSignedIn() }
        let change: AuthRequest.PasswordChange
        switch decode(AuthRequest.PasswordChange.self, request, order: ["current_password", "new_password"]) {
        case .success(let value): change = value
        case .failure(let problems): return invalid(problems.problems)
        }
        switch try service.passwords.changePassword(
            session: session, account: account, current: change.currentPassword, new: change.newPassword)
        {
        case .invalid(let problems): return invalid(problems)
        case .rateLimited(let retryAfter): return tooMany(retryAfter)
        case .sessionEnded: return gone()
        case .changed(let token, let newSession):
            return answer(
                AuthEnvelope(
                    status: 200, data: userData(account, newSession),
                    meta: AuthMeta(isAuthenticated: true, sessionToken: token)))
        }
    }

    func requestReset(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        let body: AuthRequest.PasswordResetRequest
        switch decode(AuthRequest.PasswordResetRequest.self, request, order: ["email"]) {
        case .success(let value): body = value
        case .failure(let problems): return invalid(problems.problems)
        }
        switch try service.passwords.requestPasswordReset(
            email: body.email, address: request.remoteAddress, current: caller)
        {
        case .accepted: return answer(AuthEnvelope(status: 200))
        case .invalid(let problems): return invalid(problems)
        case .rateLimited(let retryAfter): return tooMany(retryAfter)
        }
    }

    func checkResetKey(_ request: HTTPRequest) throws -> HTTPResponse {
        guard let key = request.headers[HomeportHeader.passwordResetKey], !key.isEmpty else {
            return invalid([
                FieldProblem(code: AuthErrorCode.required, param: "key", message: "This field is required.")
            ])
        }
        guard let account = try service.passwords.account(forResetKey: key) else { return invalidResetKey() }
        return answer(AuthEnvelope(status: 200, data: AuthData(user: user(account))))
    }

    func reset(_ request: HTTPRequest) throws -> HTTPResponse {
        let body: AuthRequest.PasswordReset
        switch decode(AuthRequest.PasswordReset.self, request, order: ["key", "password"]) {
        case .success(let value): body = value
        case .failure(let problems):
            // As allauth: a key that opens nothing is reported beside the other fields' errors.
            var all = problems.problems
            let sent = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any]
            if !all.contains(where: { $0.param == "key" }), let key = sent?["key"] as? String,
                try service.passwords.account(forResetKey: key) == nil
            {
                all.insert(Self.invalidResetKeyProblem, at: 0)
            }
            return invalid(all)
        }
        switch try service.passwords.resetPassword(key: body.key, password: body.password) {
        case .reset: return notSignedIn()
        case .invalidKey: return invalidResetKey()
        case .invalid(let problems): return invalid(problems)
        }
    }

    static let invalidResetKeyProblem = FieldProblem(
        code: AuthErrorCode.invalidPasswordReset, param: "key", message: "The password reset token was invalid.")

    func invalidResetKey() -> HTTPResponse {
        invalid([Self.invalidResetKeyProblem])
    }
}
