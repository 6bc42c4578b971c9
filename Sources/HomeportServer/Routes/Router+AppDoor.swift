import Foundation
import HomeportHTTP
import HomeportWire

/// The app door: django-allauth headless's app-client API under `/_allauth/app/v1/`.
extension Router {
    /// The base path of the app door.
    public static let appDoorBase = "/_allauth/app/v1"

    /// Adds `config`, `auth/signup`, `auth/login`, `auth/session` (GET, DELETE),
    /// `account/password/change`, `auth/password/request` and `auth/password/reset` (GET, POST).
    public mutating func addAppDoor(_ service: AccountService) {
        let door = AppDoor(service: service)
        let base = Self.appDoorBase
        get(base + "/config") { try door.config($0) }
        post(base + "/auth/signup") { try door.signup($0) }
        post(base + "/auth/login") { try door.login($0) }
        get(base + "/auth/session") { try door.session($0) }
        delete(base + "/auth/session") { try door.logout($0) }
        post(base + "/account/password/change") { try door.changePassword($0) }
        post(base + "/auth/password/request") { try door.requestReset($0) }
        get(base + "/auth/password/reset") { try door.checkResetKey($0) }
        post(base + "/auth/password/reset") { try door.reset($0) }
    }
}

/// Translates app-door requests into ``AccountService`` calls and answers into allauth envelopes.
struct AppDoor: Sendable {
    let service: AccountService

    /// What the request's `X-Session-Token` names.
    enum Token {
        case none
        case invalid
        case preLogin(Session, token: String)
        case signedIn(Session, Account)
    }

    func token(_ request: HTTPRequest) throws -> Token {
        guard let token = request.headers["X-Session-Token"] else { return .none }
        if let (session, account) = try service.authenticate(token: token, kind: .app) {
            return .signedIn(session, account)
        }
        if let session = try service.sessions.find(token: token, kind: .app, now: service.clock.unixSeconds),
            session.userID == nil
        {
            return .preLogin(session, token: token)
        }
        return .invalid
    }

    // MARK: Routes

    func config(_ request: HTTPRequest) throws -> HTTPResponse {
        if case .invalid = try token(request) { return gone() }
        let object: [String: Any] = [
            "status": 200,
            "data": [
                "account": [
                    "login_methods": ["email"], "is_open_for_signup": service.settings.signup != .closed,
                    "email_verification_by_code_enabled": false, "login_by_code_enabled": false,
                    "password_reset_by_code_enabled": false, "authentication_method": "email",
                ]
            ],
        ]
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return noStore(.json(bytes: body))
    }

    func signup(_ request: HTTPRequest) throws -> HTTPResponse {
        let current = try token(request)
        switch current {
        case .invalid: return gone()
        case .signedIn: return answer(AuthEnvelope(status: 409))
        case .none, .preLogin: break
        }
        let credentials: AuthRequest.Credentials
        switch decode(AuthRequest.Credentials.self, request) {
        case .success(let value): credentials = value
        case .failure(let problems): return invalid(problems.problems)
        }
        let outcome = try service.signup(
            email: credentials.email, password: credentials.password, address: request.remoteAddress, kind: .app)
        return signInAnswer(outcome, current: current, methods: false)
    }

    func login(_ request: HTTPRequest) throws -> HTTPResponse {
        let current = try token(request)
        var preLogin: Session?
        switch current {
        case .invalid: return gone()
        case .signedIn: return answer(AuthEnvelope(status: 409))
        case .preLogin(let session, _): preLogin = session
        case .none: break
        }
        let credentials: AuthRequest.Credentials
        switch decode(AuthRequest.Credentials.self, request) {
        case .success(let value): credentials = value
        case .failure(let problems): return invalid(problems.problems)
        }
        let outcome = try service.login(
            email: credentials.email, password: credentials.password, address: request.remoteAddress, kind: .app,
            preLogin: preLogin)
        return signInAnswer(outcome, current: current, methods: true)
    }

    func session(_ request: HTTPRequest) throws -> HTTPResponse {
        switch try token(request) {
        case .invalid: return gone()
        case .signedIn(let session, let account):
            return answer(
                AuthEnvelope(
                    status: 200, data: userData(account, session), meta: AuthMeta(isAuthenticated: true)))
        case .none, .preLogin: return notSignedIn()
        }
    }

    func logout(_ request: HTTPRequest) throws -> HTTPResponse {
        switch try token(request) {
        case .invalid: return gone()
        case .signedIn(let session, _), .preLogin(let session, _):
            try service.logout(session)
            return notSignedIn()
        case .none: return notSignedIn()
        }
    }

    func changePassword(_ request: HTTPRequest) throws -> HTTPResponse {
        let session: Session
        let account: Account
        switch try token(request) {
        case .invalid: return gone()
        case .none, .preLogin: return notSignedIn()
        case .signedIn(let current, let owner):
            session = current
            account = owner
        }
        let change: AuthRequest.PasswordChange
        switch decode(AuthRequest.PasswordChange.self, request) {
        case .success(let value): change = value
        case .failure(let problems): return invalid(problems.problems)
        }
        switch try service.changePassword(
            session: session, account: account, current: change.currentPassword, new: change.newPassword)
        {
        case .invalid(let problems): return invalid(problems)
        case .rateLimited(let retryAfter): return tooMany(retryAfter)
        case .changed(let token, let newSession):
            return answer(
                AuthEnvelope(
                    status: 200, data: userData(account, newSession),
                    meta: AuthMeta(isAuthenticated: true, sessionToken: token)))
        }
    }

    func requestReset(_ request: HTTPRequest) throws -> HTTPResponse {
        var preLogin: Session?
        switch try token(request) {
        case .invalid: return gone()
        case .preLogin(let session, _): preLogin = session
        case .none, .signedIn: break
        }
        let body: AuthRequest.PasswordResetRequest
        switch decode(AuthRequest.PasswordResetRequest.self, request) {
        case .success(let value): body = value
        case .failure(let problems): return invalid(problems.problems)
        }
        switch try service.requestPasswordReset(email: body.email, address: request.remoteAddress, preLogin: preLogin) {
        case .accepted: return answer(AuthEnvelope(status: 200))
        case .invalid(let problems): return invalid(problems)
        case .rateLimited(let retryAfter): return tooMany(retryAfter)
        }
    }

    func checkResetKey(_ request: HTTPRequest) throws -> HTTPResponse {
        if case .invalid = try token(request) { return gone() }
        guard let key = request.headers["X-Password-Reset-Key"], !key.isEmpty else {
            return invalid([FieldProblem(code: "required", param: "key", message: "This field is required.")])
        }
        guard let account = try service.account(forResetKey: key) else { return invalidResetKey() }
        return answer(AuthEnvelope(status: 200, data: AuthData(user: user(account))))
    }

    func reset(_ request: HTTPRequest) throws -> HTTPResponse {
        if case .invalid = try token(request) { return gone() }
        let body: AuthRequest.PasswordReset
        switch decode(AuthRequest.PasswordReset.self, request) {
        case .success(let value): body = value
        case .failure(let problems): return invalid(problems.problems)
        }
        switch try service.resetPassword(key: body.key, password: body.password) {
        case .reset: return notSignedIn()
        case .invalidKey: return invalidResetKey()
        case .invalid(let problems): return invalid(problems)
        }
    }

    // MARK: Answers

    private func signInAnswer(_ outcome: AccountService.SignInOutcome, current: Token, methods: Bool) -> HTTPResponse {
        switch outcome {
        case .signedIn(let token, let account, let session):
            return answer(
                AuthEnvelope(
                    status: 200, data: userData(account, methods ? session : nil),
                    meta: AuthMeta(isAuthenticated: true, sessionToken: token)))
        case .pending(let token, _):
            // An empty token means the request's own pre-login session now carries the standing.
            var issued: String? = token.isEmpty ? nil : token
            if issued == nil, case .preLogin(_, let existing) = current { issued = existing }
            return answer(
                AuthEnvelope(
                    status: 401, data: AuthData(flows: flows()),
                    meta: AuthMeta(isAuthenticated: false, sessionToken: issued)))
        case .invalid(let problems): return invalid(problems)
        case .rateLimited(let retryAfter): return tooMany(retryAfter)
        case .signupClosed: return answer(AuthEnvelope(status: 403))
        }
    }

    private func user(_ account: Account) -> AuthUser {
        AuthUser(
            id: Int(account.id), display: String(account.email.split(separator: "@").first ?? ""), email: account.email)
    }

    private func userData(_ account: Account, _ session: Session?) -> AuthData {
        let methods = session?.authenticatedAt.map { [AuthMethod(method: "password", at: $0, email: account.email)] }
        return AuthData(user: user(account), methods: methods ?? [])
    }

    private func flows() -> [AuthFlow] {
        service.settings.signup == .closed ? [AuthFlow(id: "login")] : [AuthFlow(id: "login"), AuthFlow(id: "signup")]
    }

    private func notSignedIn() -> HTTPResponse {
        answer(AuthEnvelope(status: 401, data: AuthData(flows: flows()), meta: AuthMeta(isAuthenticated: false)))
    }

    /// 410: the token is invalid; the client drops it and starts clean.
    private func gone() -> HTTPResponse {
        answer(AuthEnvelope(status: 410, data: AuthData(flows: flows()), meta: AuthMeta(isAuthenticated: nil)))
    }

    private func invalid(_ problems: [FieldProblem]) -> HTTPResponse {
        answer(
            AuthEnvelope(
                status: 400,
                errors: problems))
    }

    private func invalidResetKey() -> HTTPResponse {
        invalid([
            FieldProblem(code: "invalid_password_reset", param: "key", message: "The password reset token was invalid.")
        ])
    }

    private func tooMany(_ retryAfter: Int64) -> HTTPResponse {
        var response = answer(AuthEnvelope(status: 429))
        response.headers.set("Retry-After", String(retryAfter))
        return response
    }

    private func answer(_ envelope: AuthEnvelope) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? encoder.encode(envelope)) ?? Data(#"{"status":500}"#.utf8)
        return noStore(.json(bytes: body, status: envelope.status))
    }

    private func noStore(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    struct Problems: Error {
        var problems: [FieldProblem]
    }

    /// Decodes a JSON body; a missing field is `required` on that field, anything else `invalid`.
    private func decode<T: Decodable>(_ type: T.Type, _ request: HTTPRequest) -> Result<T, Problems> {
        do {
            return .success(try JSONDecoder().decode(type, from: request.body))
        } catch DecodingError.keyNotFound(let key, _) {
            return .failure(
                Problems(problems: [
                    FieldProblem(code: "required", param: key.stringValue, message: "This field is required.")
                ]))
        } catch DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context) {
            return .failure(
                Problems(problems: [
                    FieldProblem(
                        code: "invalid", param: context.codingPath.last?.stringValue,
                        message: "This value is not valid.")
                ]))
        } catch {
            return .failure(
                Problems(problems: [
                    FieldProblem(code: "invalid", param: nil, message: "The request body is not valid JSON.")
                ]))
        }
    }
}
