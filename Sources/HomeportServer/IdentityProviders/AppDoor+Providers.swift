import Foundation
import HomeportHTTP
import HomeportWire

extension RouterGroup where Context == RequestContext {
    /// The app door's identity-provider routes, in django-allauth's shapes: `auth/provider/token`,
    /// `auth/provider/signup` (GET, POST) and `account/providers` (GET, DELETE). Added inside the
    /// app door's group.
    mutating func addProviders(_ door: AppDoor) {
        post("/" + AllauthAppPath.providerToken, placement: .pool) { try door.providerToken($0, $1.caller) }
        get("/" + AllauthAppPath.providerSignup) { _, context in try door.providerSignupForm(context.caller) }
        post("/" + AllauthAppPath.providerSignup, placement: .pool) { try door.providerSignup($0, $1.caller) }
        get("/" + AllauthAppPath.providerAccounts) { _, context in try door.providerAccounts(context.caller) }
        delete("/" + AllauthAppPath.providerAccounts) { try door.unlinkProvider($0, $1.caller) }
    }
}

extension AppDoor {
    static let invalidTokenProblem = FieldProblem(
        code: AuthErrorCode.invalidToken, param: "token", message: "Invalid token.")

    /// A provider as `config`, the flows and `account/providers` describe it.
    func describe(_ provider: OIDCProvider) -> AuthProvider {
        AuthProvider(
            id: provider.id, name: provider.name, flows: ["provider_token"], clientID: provider.appClientID,
            openIDConfigurationURL: provider.discoveryURL)
    }

    /// The providers an app can sign in with (none when they cannot be read).
    func providers() -> [OIDCProvider] {
        (try? service.providerSignIn.providers()) ?? []
    }

    /// `POST auth/provider/token`: `provider`, `process` (`login` or `connect`) and `token`
    /// (`client_id`, `id_token`), checked as allauth's form checks them, every field at once.
    func providerToken(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        let body = request.body.isEmpty ? Data("{}".utf8) : request.body
        guard StrictJSON.isValidWithoutRepeatedKeys(Array(body)),
            let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
        else {
            return invalid([
                FieldProblem(
                    code: AuthErrorCode.invalid, param: nil,
                    message: "The request body is not valid JSON, or names a key twice in an object.")
            ])
        }
        var problems: [FieldProblem] = []
        let providerID = (object["provider"] as? String).flatMap { $0.isEmpty ? nil : $0 }
        if providerID == nil {
            let missing = object["provider"] == nil || (object["provider"] as? String) != nil
            problems.append(
                missing
                    ? FieldProblem(code: AuthErrorCode.required, param: "provider", message: "This field is required.")
                    : FieldProblem(code: AuthErrorCode.invalid, param: "provider", message: "This value is not valid."))
        }
        let process = object["process"] as? String
        if process == nil || process?.isEmpty == true {
            problems.append(
                FieldProblem(code: AuthErrorCode.required, param: "process", message: "This field is required."))
        } else if let process, !["login", "connect"].contains(process) {
            problems.append(
                FieldProblem(
                    code: AuthErrorCode.invalidChoice, param: "process",
                    message: "Select a valid choice. \(process) is not one of the available choices."))
        }
        var clientID: String?
        var idToken: String?
        if let token = object["token"] as? [String: Any] {
            clientID = token["client_id"] as? String
            if clientID == nil {
                problems.append(
                    FieldProblem(code: AuthErrorCode.clientIDRequired, param: "token", message: "`client_id` required.")
                )
            } else if let providerID, let clientID,
                !providers().contains(where: { $0.id == providerID && $0.audiences.contains(clientID) })
            {
                problems.append(Self.invalidTokenProblem)
            } else {
                idToken = (token["id_token"] as? String).flatMap { $0.isEmpty ? nil : $0 }
                if idToken == nil {
                    problems.append(
                        FieldProblem(
                            code: AuthErrorCode.tokenRequired, param: "token",
                            message: "`id_token` and/or `access_token` required."))
                }
            }
        } else {
            problems.append(Self.invalidTokenProblem)
        }
        guard problems.isEmpty, let providerID, let process, let clientID, let idToken else { return invalid(problems) }
        if process == "connect" {
            guard case .signedIn(let session, let account) = caller else { return try notSignedIn(caller) }
            return providerAnswer(
                try service.providerSignIn.connect(
                    providerID: providerID, clientID: clientID, idToken: idToken, address: request.remoteAddress,
                    account: account), caller: caller, connected: (account, session))
        }
        // As at `auth/login`: a signed-in caller is refused once the form is right.
        if caller.isSignedIn { return answer(AuthEnvelope(status: 409)) }
        return providerAnswer(
            try service.providerSignIn.login(
                providerID: providerID, clientID: clientID, idToken: idToken, address: request.remoteAddress,
                kind: .app, current: caller), caller: caller)
    }

    /// `GET auth/provider/signup`: who the provider says the waiting person is.
    func providerSignupForm(_ caller: Caller) throws -> HTTPResponse {
        guard let (provider, identity) = try service.providerSignIn.pendingSignup(caller) else {
            return noProviderSignup()
        }
        let email = identity.email ?? ""
        var data: [String: Any] = [
            "user": [
                "display": identity.name ?? email.split(separator: "@").first.map(String.init) ?? identity.subject,
                "has_usable_password": false,
            ],
            "account": [
                "uid": identity.subject, "display": identity.name ?? (email.isEmpty ? identity.subject : email),
                "provider": try asObject(describe(provider)),
            ],
        ]
        data["email"] =
            identity.email.map { [["email": $0, "verified": identity.emailVerified, "primary": true]] } ?? []
        return answer(["status": 200, "data": data])
    }

    /// `POST auth/provider/signup` {`email`}: the account for a waiting provider sign-in.
    func providerSignup(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        guard try service.providerSignIn.pendingSignup(caller) != nil else { return noProviderSignup() }
        let body: AuthRequest.ProviderSignup
        switch decode(AuthRequest.ProviderSignup.self, request, order: ["email"]) {
        case .success(let value): body = value
        case .failure(let problems): return invalid(problems.problems)
        }
        return providerAnswer(
            try service.providerSignIn.signup(
                email: body.email, address: request.remoteAddress, kind: .app, current: caller),
            caller: caller)
    }

    /// `GET account/providers`: the provider accounts linked to the caller's account.
    func providerAccounts(_ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(_, let account) = caller else { return try notSignedIn(caller) }
        return answer(data: linkedAccounts(try service.providerSignIn.links(account)))
    }

    /// `DELETE account/providers` {`provider`, `account`}: unlinks one, never the last way in.
    func unlinkProvider(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(_, let account) = caller else { return try notSignedIn(caller) }
        let body: AuthRequest.ProviderAccount
        switch decode(AuthRequest.ProviderAccount.self, request, order: ["provider", "account"]) {
        case .success(let value): body = value
        case .failure(let problems): return invalid(problems.problems)
        }
        switch try service.providerSignIn.unlink(providerID: body.provider, subject: body.account, account: account) {
        case .success(let left): return answer(data: linkedAccounts(left))
        case .failure(.notFound):
            return invalid([FieldProblem(code: AuthErrorCode.accountNotFound, param: nil, message: "Unknown account.")])
        case .failure(.noPassword):
            return invalid([
                FieldProblem(
                    code: AuthErrorCode.noPassword, param: nil, message: "Your account has no password set up.")
            ])
        case .failure(.noVerifiedEmail):
            return invalid([
                FieldProblem(
                    code: AuthErrorCode.noVerifiedEmail, param: nil,
                    message: "Your account has no verified email address.")
            ])
        }
    }

    // MARK: Answers

    private func linkedAccounts(_ links: [ProviderLink]) -> [AuthProviderAccount] {
        let configured = providers()
        return links.map { link in
            let provider =
                configured.first { $0.id == link.providerID }.map(describe)
                ?? AuthProvider(id: link.providerID, name: link.providerID, flows: [])
            return AuthProviderAccount(uid: link.subject, display: link.email ?? link.subject, provider: provider)
        }
    }

    private func noProviderSignup() -> HTTPResponse {
        answer(AuthEnvelope(status: 409))
    }

    private func providerAnswer(
        _ outcome: ProviderSignIn.Outcome, caller: Caller, connected: (Account, Session)? = nil
    ) -> HTTPResponse {
        switch outcome {
        case .signIn(let outcome): return signInAnswer(outcome, caller: caller, methods: true)
        case .invalidToken: return invalid([Self.invalidTokenProblem])
        case .signupPending(let token, let provider):
            var flows = flows()
            flows.append(AuthFlow(id: "provider_signup", isPending: true, provider: describe(provider)))
            return answer(
                AuthEnvelope(
                    status: 401, data: AuthData(flows: flows),
                    meta: AuthMeta(isAuthenticated: false, sessionToken: token)))
        case .connected:
            guard let (account, _) = connected else { return answer(AuthEnvelope(status: 409)) }
            return answer(
                AuthEnvelope(
                    status: 200, data: AuthData(user: user(account), methods: []), meta: AuthMeta(isAuthenticated: true)
                ))
        case .connectedOther:
            return invalid([
                FieldProblem(
                    code: AuthErrorCode.connectedOther, param: nil,
                    message: "The third-party account is already connected to a different account.")
            ])
        case .noPendingSignup: return noProviderSignup()
        case .emailTaken(let provider):
            return invalid([
                FieldProblem(
                    code: AuthErrorCode.emailTaken, param: "email",
                    message:
                        "An account already exists with this email address. Please sign in to that account first, then connect your \(provider.name) account."
                )
            ])
        case .invalid(let problems): return invalid(problems)
        }
    }
}
