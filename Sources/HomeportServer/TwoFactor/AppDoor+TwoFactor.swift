import Foundation
import HomeportHTTP
import HomeportWire

extension RouterGroup where Context == RequestContext {
    /// The app door's two-factor routes, in django-allauth's MFA shapes: `auth/reauthenticate`,
    /// `auth/2fa/authenticate`, `auth/2fa/reauthenticate`, `account/authenticators`,
    /// `account/authenticators/totp` (GET, POST, DELETE) and
    /// `account/authenticators/recovery-codes` (GET, POST). Added inside the app door's group.
    mutating func addTwoFactor(_ door: AppDoor) {
        post("/" + AllauthAppPath.reauthenticate, placement: .pool) { try door.reauthenticate($0, $1.caller) }
        post("/" + AllauthAppPath.twoFactorAuthenticate) { try door.authenticateSecondFactor($0, $1.caller) }
        post("/" + AllauthAppPath.twoFactorReauthenticate) { try door.reauthenticateSecondFactor($0, $1.caller) }
        get("/" + AllauthAppPath.authenticators) { _, context in try door.authenticators(context.caller) }
        get("/" + AllauthAppPath.totp) { _, context in try door.totp(context.caller) }
        post("/" + AllauthAppPath.totp) { try door.activateTOTP($0, $1.caller) }
        delete("/" + AllauthAppPath.totp) { _, context in try door.deactivateTOTP(context.caller) }
        get("/" + AllauthAppPath.recoveryCodes) { _, context in try door.recoveryCodes(context.caller) }
        post("/" + AllauthAppPath.recoveryCodes) { _, context in try door.regenerateRecoveryCodes(context.caller) }
    }
}

extension AppDoor {
    static let incorrectCodeOfFactor = FieldProblem(
        code: AuthErrorCode.incorrectCode, param: "code", message: "Incorrect code.")

    /// `POST auth/2fa/authenticate`: the second half of a sign-in to an account with TOTP.
    func authenticateSecondFactor(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        guard try service.pendingSecondFactor(caller) != nil else { return noSecondFactorWaiting() }
        let body: AuthRequest.SecondFactor
        switch decode(AuthRequest.SecondFactor.self, request, order: ["code"]) {
        case .success(let value): body = value
        case .failure(let problems): return invalid(problems.problems)
        }
        return factorAnswer(try service.completeSecondFactor(code: body.code, caller: caller))
    }

    /// `POST auth/2fa/reauthenticate`: confirms the second factor of a signed-in session.
    func reauthenticateSecondFactor(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(let session, let account) = caller else { return try notSignedIn(caller) }
        let body: AuthRequest.SecondFactor
        switch decode(AuthRequest.SecondFactor.self, request, order: ["code"]) {
        case .success(let value): body = value
        case .failure(let problems): return invalid(problems.problems)
        }
        return factorAnswer(
            try service.twoFactor.reauthenticateSecondFactor(code: body.code, session: session, account: account))
    }

    /// `POST auth/reauthenticate`: confirms the password of a signed-in session.
    func reauthenticate(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(let session, let account) = caller else { return try notSignedIn(caller) }
        let body: AuthRequest.Reauthentication
        switch decode(AuthRequest.Reauthentication.self, request, order: ["password"]) {
        case .success(let value): body = value
        case .failure(let problems): return invalid(problems.problems)
        }
        switch try service.reauthenticate(password: body.password, session: session, account: account) {
        case .confirmed:
            return answer(
                AuthEnvelope(status: 200, data: userData(account, session), meta: AuthMeta(isAuthenticated: true)))
        case .incorrect:
            return invalid([
                FieldProblem(code: AuthErrorCode.incorrectPassword, param: "password", message: "Incorrect password.")
            ])
        case .rateLimited(let retryAfter): return tooMany(retryAfter)
        }
    }

    /// `GET account/authenticators`.
    func authenticators(_ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(_, let account) = caller else { return try notSignedIn(caller) }
        let passkeys = try service.passkeys.passkeys(userID: account.id).map(Self.info)
        return answer(data: try service.twoFactor.authenticators(userID: account.id) + passkeys)
    }

    /// `GET account/authenticators/totp`: 200 when on; else 404 with a new secret and its URL.
    func totp(_ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(let session, let account) = caller else { return try notSignedIn(caller) }
        switch try service.twoFactor.totpState(session: session, account: account) {
        case .active(let info): return answer(data: info)
        case .offered(let secret, let url):
            return answer(["status": 404, "meta": ["secret": secret, "totp_url": url]], status: 404)
        case .unavailable: return answer(AuthEnvelope(status: 404))
        }
    }

    /// `POST account/authenticators/totp`: activates TOTP with a code of the secret offered.
    func activateTOTP(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(let session, let account) = caller else { return try notSignedIn(caller) }
        let body: AuthRequest.SecondFactor
        switch decode(AuthRequest.SecondFactor.self, request, order: ["code"]) {
        case .success(let value): body = value
        case .failure(let problems): return invalid(problems.problems)
        }
        switch try service.twoFactor.activateTOTP(code: body.code, session: session, account: account) {
        case .activated(let info): return answer(data: info)
        case .incorrect: return invalid([Self.incorrectCodeOfFactor])
        case .rateLimited(let retryAfter):
            return invalid(
                FieldProblem(
                    code: APIErrorCode.rateLimited, param: "code",
                    message: "Be patient, you are sending too many requests."), retryAfter: retryAfter)
        case .reauthenticationRequired: return try reauthenticationRequired(session, account)
        case .unavailable: return answer(AuthEnvelope(status: 404))
        }
    }

    /// `DELETE account/authenticators/totp`.
    func deactivateTOTP(_ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(let session, let account) = caller else { return try notSignedIn(caller) }
        switch try service.twoFactor.deactivateTOTP(session: session, account: account) {
        case .done, .none: return answer(AuthEnvelope(status: 200))
        case .reauthenticationRequired: return try reauthenticationRequired(session, account)
        }
    }

    /// `GET account/authenticators/recovery-codes`.
    func recoveryCodes(_ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(let session, let account) = caller else { return try notSignedIn(caller) }
        switch try service.twoFactor.recoveryCodes(session: session, account: account) {
        case .done(let info): return answer(data: info)
        case .none: return answer(AuthEnvelope(status: 404))
        case .reauthenticationRequired: return try reauthenticationRequired(session, account)
        }
    }

    /// `POST account/authenticators/recovery-codes`: new codes, shown this once.
    func regenerateRecoveryCodes(_ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(let session, let account) = caller else { return try notSignedIn(caller) }
        switch try service.twoFactor.regenerateRecoveryCodes(session: session, account: account) {
        case .done(let info): return answer(data: info)
        case .none:
            return invalid([
                FieldProblem(
                    code: AuthErrorCode.cannotGenerateRecoveryCodes, param: nil,
                    message: "You cannot generate recovery codes without having two-factor authentication enabled.")
            ])
        case .reauthenticationRequired: return try reauthenticationRequired(session, account)
        }
    }

    // MARK: Answers

    func factorAnswer(
        _ outcome: TwoFactorService.SecondFactorOutcome, incorrect: FieldProblem = Self.incorrectCodeOfFactor
    ) -> HTTPResponse {
        switch outcome {
        case .signedIn(let token, let account, let session):
            return answer(
                AuthEnvelope(
                    status: 200, data: userData(account, session),
                    meta: AuthMeta(isAuthenticated: true, sessionToken: token)))
        case .incorrect: return invalid([incorrect])
        case .tooManyAttempts(let retryAfter):
            return invalid(
                FieldProblem(
                    code: AuthErrorCode.tooManyLoginAttempts, param: incorrect.param,
                    message: "Too many failed login attempts. Try again later."), retryAfter: retryAfter)
        case .noneWaiting: return noSecondFactorWaiting()
        }
    }

    /// 401 when no sign-in waits for a second factor. allauth answers `is_authenticated: null`
    /// here, where its specification says a boolean: Homeport says `false`, as the specification
    /// does (docs/allauth-differences.md).
    func noSecondFactorWaiting() -> HTTPResponse {
        notSignedIn()
    }

    /// 401 for a signed-in session that must confirm the password (or its second factor) first:
    /// the user, how the session authenticated, and the ways to confirm.
    func reauthenticationRequired(_ session: Session, _ account: Account) throws -> HTTPResponse {
        var data = userData(account, session)
        var ways = [AuthFlow(id: "reauthenticate")]
        let types = try service.secondFactorTypes(userID: account.id)
        if types.contains("totp") || types.contains("webauthn") {
            ways.append(AuthFlow(id: "mfa_reauthenticate", types: types))
        }
        data.flows = ways
        return answer(AuthEnvelope(status: 401, data: data, meta: AuthMeta(isAuthenticated: true)))
    }

    /// `{"status": 200, "data": …}` for a value the envelope type does not describe.
    func answer(data: some Encodable) -> HTTPResponse {
        let encoded = (try? JSONSerialization.jsonObject(with: HTTPResponse.encode(data))) ?? [:]
        return answer(["status": 200, "data": encoded])
    }
}
