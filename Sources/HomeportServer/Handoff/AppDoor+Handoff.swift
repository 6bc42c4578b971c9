import Foundation
import HomeportHTTP
import HomeportWire

extension RouterGroup where Context == RequestContext {
    /// The app door's handoff routes (Homeport's own extension): `auth/handoff` and
    /// `auth/handoff/token`. Added inside the app door's group.
    mutating func addHandoff(_ door: AppDoor) {
        post("/" + AllauthAppPath.handoff) { request, _ in try door.beginHandoff(request) }
        post("/" + AllauthAppPath.handoffToken) { try door.exchangeHandoff($0, $1.caller) }
    }
}

extension AppDoor {
    /// `POST auth/handoff`: 200 `{"data": {"url", "expires_in"}}`, the page to open in the
    /// system browser.
    func beginHandoff(_ request: HTTPRequest) throws -> HTTPResponse {
        let body: AuthRequest.Handoff
        switch decode(
            AuthRequest.Handoff.self, request,
            order: ["code_challenge", "code_challenge_method", "redirect_uri", "state", "device_name"])
        {
        case .success(let value): body = value
        case .failure(let problems): return invalid(problems.problems)
        }
        switch try service.handoffs.beginHandoff(
            codeChallenge: body.codeChallenge, method: body.codeChallengeMethod, redirectURI: body.redirectURI,
            state: body.state, deviceName: body.deviceName, address: request.remoteAddress)
        {
        case .started(let id):
            let base = service.publicBase(for: request)
            return answer([
                "status": 200,
                "data": ["url": base + WebDoor.handoffPrefix + "/" + id, "expires_in": HandoffService.handoffLifetime],
            ])
        case .invalid(let problems): return invalid(problems)
        case .rateLimited(let retryAfter): return tooMany(retryAfter)
        }
    }

    /// `POST auth/handoff/token`: the session of a confirmed handoff, in the sign-in envelope.
    func exchangeHandoff(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        let body: AuthRequest.HandoffToken
        switch decode(AuthRequest.HandoffToken.self, request, order: ["code", "code_verifier"]) {
        case .success(let value): body = value
        case .failure(let problems): return invalid(problems.problems)
        }
        switch try service.handoffs.exchangeHandoff(
            code: body.code, verifier: body.codeVerifier, address: request.remoteAddress)
        {
        case .signedIn(let token, let account, let session):
            return signInAnswer(
                .signedIn(token: token, account: account, session: session), caller: caller, methods: true)
        case .invalid:
            return invalid([
                FieldProblem(
                    code: AuthErrorCode.invalidHandoff, param: "code",
                    message: "This sign-in has expired or was used. Start again from the app.")
            ])
        case .tooManyFailed(let retryAfter):
            return signInAnswer(.tooManyFailedLogins(retryAfter: retryAfter), caller: caller, methods: true)
        case .rateLimited(let retryAfter): return tooMany(retryAfter)
        }
    }
}
