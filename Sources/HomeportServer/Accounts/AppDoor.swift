import Foundation
import HomeportHTTP
import HomeportWire

/// The app door: django-allauth headless's app-client API under `/_allauth/app/v1/`.
extension Router where Context == RequestContext {
    /// Declares the app door's group and adds `config`, `auth/signup`, `auth/login`,
    /// `auth/session` (GET, DELETE), `account/password/change`, `account/email` (GET), `auth/password/request` and
    /// `auth/password/reset` (GET, POST), `auth/email/verify` (GET, POST) and
    /// `auth/email/verify/resend`.
    ///
    /// Every route passes through `no-store`, the session reader (header only) and
    /// ``AppDoorMiddleware`` (410 for an invalid token, 415 for a body that is not JSON).
    mutating func addAppDoor(_ service: AccountService, reader: SessionReader) {
        let door = AppDoor(service: service)
        let middleware: [any HTTPMiddleware<RequestContext>] = [
            NoStoreMiddleware(), SessionMiddleware(reader: reader, credential: .header),
            AppDoorMiddleware(door: door),
        ]
        group(AllauthAppPath.base, middleware: middleware) { app in
            app.get("/" + AllauthAppPath.config) { _, _ in door.config() }
            app.post("/" + AllauthAppPath.signup, placement: .pool) { try door.signup($0, $1.caller) }
            app.post("/" + AllauthAppPath.login, placement: .pool) { try door.login($0, $1.caller) }
            app.get("/" + AllauthAppPath.session) { _, context in try door.session(context.caller) }
            app.delete("/" + AllauthAppPath.session) { _, context in try door.logout(context.caller) }
            app.post("/" + AllauthAppPath.passwordChange, placement: .pool) { try door.changePassword($0, $1.caller) }
            app.get("/" + AllauthAppPath.emailAddresses) { _, context in try door.emailAddresses(context.caller) }
            app.post("/" + AllauthAppPath.accountDelete, placement: .pool) { try door.deleteAccount($0, $1.caller) }
            app.post("/" + AllauthAppPath.passwordResetRequest) { try door.requestReset($0, $1.caller) }
            app.get("/" + AllauthAppPath.passwordReset) { request, _ in try door.checkResetKey(request) }
            app.post("/" + AllauthAppPath.passwordReset, placement: .pool) { request, _ in try door.reset(request) }
            app.get("/" + AllauthAppPath.emailVerify) { try door.checkVerification($0, $1.caller) }
            app.post("/" + AllauthAppPath.emailVerify) { try door.verifyEmail($0, $1.caller) }
            app.post("/" + AllauthAppPath.emailVerifyResend) { _, context in try door.resendVerification(context.caller)
            }
            app.addTwoFactor(door)
            app.addProviders(door)
            app.addHandoff(door)
            app.addPasskeys(door)
        }
    }
}

/// Refuses, before any handler of the app door runs, an invalid token (410: the client drops it
/// and starts clean) and a body that is not `application/json` (415): another site can make a
/// browser send `text/plain` without asking first, and must not be able to spend an address's
/// budgets through it.
struct AppDoorMiddleware: HTTPMiddleware {
    let door: AppDoor

    func handle(
        _ request: HTTPRequest, context: RequestContext,
        next: (HTTPRequest, RequestContext) throws -> HTTPResponse
    ) throws -> HTTPResponse {
        if case .invalid = context.caller { return door.gone() }
        if !request.body.isEmpty && !Self.isJSON(request.headers.values("Content-Type")) {
            return door.answer(
                AuthEnvelope(
                    status: 415,
                    errors: [
                        FieldProblem(
                            code: AuthErrorCode.unsupportedMediaType, param: nil,
                            message: "Send the body as application/json.")
                    ]))
        }
        return try next(request, context)
    }

    /// Whether exactly one `Content-Type` came and it is `application/json` (parameters allowed).
    static func isJSON(_ values: [String]) -> Bool {
        guard values.count == 1, let value = values.first else { return false }
        let type = value.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        return type.trimmingCharacters(in: .whitespaces).lowercased() == "application/json"
    }
}

/// Translates app-door requests into ``AccountService`` calls and answers into allauth envelopes.
struct AppDoor: Sendable {
    let service: AccountService

    // MARK: Routes

    func config() -> HTTPResponse {
        var data: [String: Any] = [
            "account": [
                "login_methods": ["email"], "is_open_for_signup": service.settings.signup != .closed,
                "email_verification_by_code_enabled": service.settings.emailVerification == .code,
                "login_by_code_enabled": false,
                "password_reset_by_code_enabled": false, "authentication_method": "email",
            ]
        ]
        // As allauth with its socialaccount app: the providers an app can hand a token of.
        let providers = providers()
        if !providers.isEmpty {
            data["socialaccount"] = ["providers": providers.map { (try? asObject(describe($0))) ?? [:] }]
        }
        // As allauth with its MFA app: the second factors offered (none without a secrets key).
        let passkeys = service.passkeys.relyingParty != nil
        if service.twoFactor.settings != nil {
            data["mfa"] = [
                "supported_types": ["recovery_codes", "totp"] + (passkeys ? ["webauthn"] : []),
                "passkey_login_enabled": passkeys,
            ]
        } else if passkeys {
            data["mfa"] = ["supported_types": ["webauthn"], "passkey_login_enabled": true]
        }
        return answer(["status": 200, "data": data])
    }

    func signup(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        let credentials: AuthRequest.Credentials
        switch decode(AuthRequest.Credentials.self, request, order: ["email", "password"]) {
        case .success(let value): credentials = value
        case .failure(let problems): return invalid(problems.problems)
        }
        // Like allauth: the form is validated first (its address and password, and an address
        // taken), then a live session refuses.
        if caller.isSignedIn {
            let problems = try service.signupProblems(
                email: credentials.email, password: credentials.password, takenAlone: true)
            return problems.isEmpty ? answer(AuthEnvelope(status: 409)) : invalid(problems)
        }
        let outcome = try service.signup(
            email: credentials.email, password: credentials.password, address: request.remoteAddress, kind: .app,
            current: caller, invitation: credentials.invitation)
        return signInAnswer(outcome, caller: caller, methods: false)
    }

    func login(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        let credentials: AuthRequest.Credentials
        switch decode(AuthRequest.Credentials.self, request, order: ["email", "password"]) {
        case .success(let value): credentials = value
        case .failure(let problems): return invalid(problems.problems)
        }
        // Like allauth: the form, the password included, is checked first; then a live session refuses.
        if caller.isSignedIn {
            if let failure = try service.credentialProblem(
                email: credentials.email, password: credentials.password, address: request.remoteAddress)
            {
                return signInAnswer(failure, caller: caller, methods: true)
            }
            return answer(AuthEnvelope(status: 409))
        }
        let outcome = try service.login(
            email: credentials.email, password: credentials.password, address: request.remoteAddress, kind: .app,
            current: caller)
        return signInAnswer(outcome, caller: caller, methods: true)
    }

    func session(_ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(let session, let account) = caller else { return try notSignedIn(caller) }
        return answer(
            AuthEnvelope(status: 200, data: userData(account, session), meta: AuthMeta(isAuthenticated: true)))
    }

    func logout(_ caller: Caller) throws -> HTTPResponse {
        if let session = caller.session { try service.logout(session) }
        return notSignedIn()
    }

    /// `POST account/delete`: 200 with `is_authenticated: false` once the account is gone (the
    /// token with it); 400 naming `password`; 401 without a signed-in session.
    func deleteAccount(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(let session, let account) = caller else { return notSignedIn() }
        let body: AuthRequest.AccountDeletion
        switch decode(AuthRequest.AccountDeletion.self, request, order: ["password"]) {
        case .success(let value): body = value
        case .failure(let problems): return invalid(problems.problems)
        }
        switch try service.deleteAccount(session: session, account: account, password: body.password) {
        case .deleted: return answer(AuthEnvelope(status: 200, meta: AuthMeta(isAuthenticated: false)))
        case .invalid(let problems): return invalid(problems)
        case .rateLimited(let retryAfter): return tooMany(retryAfter)
        case .sessionEnded: return gone()
        }
    }

    /// `GET account/email`: the account's one address, primary, and whether it is verified.
    /// Adding, changing or removing addresses is not offered (405 from the router).
    func emailAddresses(_ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(_, let account) = caller else { return try notSignedIn(caller) }
        let object: [String: Any] = [
            "status": 200,
            "data": [
                [
                    "email": account.email, "primary": true,
                    "verified": try service.emailVerification.isEmailVerified(account),
                ]
            ],
        ]
        return answer(object)
    }

    // MARK: Answers

    func signInAnswer(_ outcome: AccountService.SignInOutcome, caller: Caller, methods: Bool) -> HTTPResponse {
        switch outcome {
        case .signedIn(let token, let account, let session):
            return answer(
                AuthEnvelope(
                    status: 200, data: userData(account, methods ? session : nil),
                    meta: AuthMeta(isAuthenticated: true, sessionToken: token)))
        case .pending(_, let token):
            // No new token: the caller's own pre-login session now carries the standing.
            var issued = token
            if issued == nil, case .preLogin(_, let existing) = caller { issued = existing }
            return answer(
                AuthEnvelope(
                    status: 401, data: AuthData(flows: flows()),
                    meta: AuthMeta(isAuthenticated: false, sessionToken: issued)))
        case .invalid(let problems): return invalid(problems)
        case .rateLimited(let retryAfter): return tooMany(retryAfter)
        case .tooManyFailedLogins(let retryAfter):
            // As allauth: a form error, so that a client showing form errors has one to show.
            return invalid(
                FieldProblem(
                    code: AuthErrorCode.tooManyLoginAttempts, param: nil,
                    message: "Too many failed login attempts. Try again later."), retryAfter: retryAfter)
        case .signupClosed: return answer(AuthEnvelope(status: 403))
        case .verificationPending(let token):
            return answer(
                AuthEnvelope(
                    status: 401, data: AuthData(flows: flows(verifying: true)),
                    meta: AuthMeta(isAuthenticated: false, sessionToken: token)))
        case .secondFactorPending(let token, let types):
            return answer(
                AuthEnvelope(
                    status: 401, data: AuthData(flows: flows(secondFactor: types)),
                    meta: AuthMeta(isAuthenticated: false, sessionToken: token)))
        }
    }

    func user(_ account: Account) -> AuthUser {
        AuthUser(
            id: Int(account.id), display: String(account.email.split(separator: "@").first ?? ""), email: account.email,
            hasUsablePassword: account.hasUsablePassword, username: account.email)
    }

    /// The user and the ways the session authenticated (none for a sign-up, as allauth).
    func userData(_ account: Account, _ session: Session?) -> AuthData {
        guard let session else { return AuthData(user: user(account), methods: []) }
        let fallback = session.authenticatedAt.map { [AuthMethod(method: "password", at: $0, email: account.email)] }
        let methods = (try? service.authenticationMethods(session, account: account)) ?? fallback
        return AuthData(user: user(account), methods: methods ?? [])
    }

    /// What a signed-out client can do; `verifying` adds the verification its session waits on,
    /// `secondFactor` the second factor it waits for (`mfa_authenticate`, with the factors' types),
    /// `passkeySignup` the passkey a sign-up waits for (`mfa_signup_webauthn`).
    func flows(verifying: Bool = false, secondFactor: [String]? = nil, passkeySignup: Bool = false) -> [AuthFlow] {
        var flows = [AuthFlow(id: "login")]
        if service.settings.signup != .closed { flows.append(AuthFlow(id: "signup")) }
        let providers = providers()
        if !providers.isEmpty { flows.append(AuthFlow(id: "provider_token", providers: providers.map(\.id))) }
        // As allauth with passkey sign-in on.
        if service.passkeys.relyingParty != nil { flows.append(AuthFlow(id: "mfa_login_webauthn")) }
        if verifying { flows.append(AuthFlow(id: "verify_email", isPending: true)) }
        if let secondFactor { flows.append(AuthFlow(id: "mfa_authenticate", isPending: true, types: secondFactor)) }
        if passkeySignup { flows.append(AuthFlow(id: "mfa_signup_webauthn", isPending: true)) }
        return flows
    }

    func notSignedIn(verifying: Bool = false) -> HTTPResponse {
        answer(
            AuthEnvelope(
                status: 401, data: AuthData(flows: flows(verifying: verifying)), meta: AuthMeta(isAuthenticated: false))
        )
    }

    /// 401 for a caller who is not signed in, with the flow its pre-login session waits on.
    func notSignedIn(_ caller: Caller) throws -> HTTPResponse {
        let verifying = try service.emailVerification.verificationPending(caller)
        let secondFactor = try service.pendingSecondFactor(caller)
        var flows = flows(
            verifying: verifying, secondFactor: secondFactor,
            passkeySignup: try service.passkeys.pendingSignup(caller) != nil)
        if let (provider, _) = try service.providerSignIn.pendingSignup(caller) {
            flows.append(AuthFlow(id: "provider_signup", isPending: true, provider: describe(provider)))
        }
        return answer(AuthEnvelope(status: 401, data: AuthData(flows: flows), meta: AuthMeta(isAuthenticated: false)))
    }

    /// 410: the token is invalid; the client drops it and starts clean.
    func gone() -> HTTPResponse {
        answer(AuthEnvelope(status: 410, data: AuthData(flows: flows()), meta: AuthMeta(isAuthenticated: nil)))
    }

    func invalid(_ problems: [FieldProblem]) -> HTTPResponse {
        answer(AuthEnvelope(status: 400, errors: problems))
    }

    /// A spent budget answered as allauth answers it, a form error, with when to try again.
    func invalid(_ problem: FieldProblem, retryAfter: Int64) -> HTTPResponse {
        var response = invalid([problem])
        response.headers.set("Retry-After", String(retryAfter))
        return response
    }

    func tooMany(_ retryAfter: Int64) -> HTTPResponse {
        var response = answer(AuthEnvelope(status: 429))
        response.headers.set("Retry-After", String(retryAfter))
        return response
    }

    /// An answer of the door built from a JSON object rather than an ``AuthEnvelope`` (the
    /// shapes the envelope type does not describe), with status 200 unless told.
    func answer(_ object: [String: Any], status: Int = 200) -> HTTPResponse {
        // Built of strings, numbers and the objects of `asObject`, each of which is JSON; what is
        // not would be the server's fault, and is answered as one.
        guard let bytes = try? HTTPResponse.encode(untyped: object) else {
            return .json(bytes: Data(#"{"status":500}"#.utf8), status: 500)
        }
        return .json(bytes: bytes, status: status)
    }

    /// An encodable value as a JSON object, to place inside an answer built from objects.
    func asObject(_ value: some Encodable) throws -> Any {
        try JSONSerialization.jsonObject(with: HTTPResponse.encode(value))
    }

    /// The envelope as the answer, its status repeated in the body.
    func answer(_ envelope: AuthEnvelope) -> HTTPResponse {
        let body = (try? HTTPResponse.encode(envelope)) ?? Data(#"{"status":500}"#.utf8)
        return .json(bytes: body, status: envelope.status)
    }

    struct Problems: Error {
        var problems: [FieldProblem]
    }

    /// Decodes a JSON body as allauth's forms read one: an empty body is `{}`, every missing
    /// field is `required` and every field of the wrong type `invalid`, all of them at once, in
    /// `order` (the form's field order); with `email` among the fields, a malformed address is
    /// reported beside the others. A body that is not a JSON object is one `invalid` problem.
    func decode<T: Decodable>(_ type: T.Type, _ request: HTTPRequest, order: [String]) -> Result<T, Problems> {
        let notJSON = Problems(problems: [
            FieldProblem(
                code: AuthErrorCode.invalid, param: nil,
                message: "The request body is not valid JSON, or names a key twice in an object.")
        ])
        let body = request.body.isEmpty ? Data("{}".utf8) : request.body
        // A key named twice is refused, not read as one of the two (parsers disagree on which).
        guard StrictJSON.isValidWithoutRepeatedKeys(Array(body)),
            var object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
        else {
            return .failure(notJSON)
        }
        // As Django's forms: an empty field is a missing one (`required`); an address is trimmed
        // first, a password is not.
        for key in order {
            if let text = object[key] as? String,
                (key == "email" ? text.trimmingCharacters(in: .whitespacesAndNewlines) : text).isEmpty
            {
                object[key] = nil
            }
        }
        var problems: [FieldProblem] = []
        while true {
            let key: String
            let problem: FieldProblem
            do {
                let value = try JSONDecoder().decode(type, from: try HTTPResponse.encode(untyped: object))
                guard !problems.isEmpty else { return .success(value) }
                break
            } catch DecodingError.keyNotFound(let missing, _) {
                key = missing.stringValue
                problem = FieldProblem(code: AuthErrorCode.required, param: key, message: "This field is required.")
            } catch DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context) {
                guard let field = context.codingPath.first?.stringValue else { return .failure(notJSON) }
                key = field
                problem = FieldProblem(code: AuthErrorCode.invalid, param: key, message: "This value is not valid.")
            } catch {
                return .failure(notJSON)
            }
            // A field already reported that still does not decode: give up on the body.
            guard !problems.contains(where: { $0.param == key }) else { return .failure(notJSON) }
            problems.append(problem)
            object[key] = ""
        }
        if order.contains("email"), let email = object["email"] as? String, !email.isEmpty,
            !problems.contains(where: { $0.param == "email" }), Credentials.normalizedEmail(email) == nil
        {
            problems.append(AccountService.invalidEmail)
        }
        let rank = { (problem: FieldProblem) in order.firstIndex(of: problem.param ?? "") ?? order.count }
        return .failure(Problems(problems: problems.sorted { rank($0) < rank($1) }))
    }
}
