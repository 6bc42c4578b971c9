import Foundation
import HomeportHTTP
import HomeportWire

extension RouterGroup where Context == RequestContext {
    /// The app door's passkey routes, in django-allauth's MFA shapes:
    /// `account/authenticators/webauthn` (GET options, POST add, PUT rename, DELETE remove) and
    /// `auth/webauthn/login` (GET options, POST sign in). Added inside the app door's group.
    mutating func addPasskeys(_ door: AppDoor) {
        get("/" + AllauthAppPath.webAuthn) { try door.passkeyCreationOptions($0, $1.caller) }
        post("/" + AllauthAppPath.webAuthn) { try door.addPasskey($0, $1.caller) }
        put("/" + AllauthAppPath.webAuthn) { try door.renamePasskey($0, $1.caller) }
        delete("/" + AllauthAppPath.webAuthn) { try door.removePasskeys($0, $1.caller) }
        get("/" + AllauthAppPath.webAuthnLogin) { try door.passkeyRequestOptions($0, $1.caller) }
        post("/" + AllauthAppPath.webAuthnLogin) { try door.passkeyLogin($0, $1.caller) }
        get("/" + AllauthAppPath.webAuthnAuthenticate) { _, context in try door.passkeyFactorOptions(context.caller) }
        post("/" + AllauthAppPath.webAuthnAuthenticate) { try door.passkeyFactor($0, $1.caller) }
        get("/" + AllauthAppPath.webAuthnReauthenticate) { _, context in
            try door.passkeyConfirmationOptions(context.caller)
        }
        post("/" + AllauthAppPath.webAuthnReauthenticate) { try door.passkeyConfirmation($0, $1.caller) }
        post("/" + AllauthAppPath.webAuthnSignup) { try door.passkeySignup($0, $1.caller) }
        get("/" + AllauthAppPath.webAuthnSignup) { _, context in try door.passkeySignupOptions(context.caller) }
        put("/" + AllauthAppPath.webAuthnSignup) { try door.completePasskeySignup($0, $1.caller) }
    }
}

extension AppDoor {
    /// A stored passkey as `account/authenticators` lists it.
    static func info(_ passkey: Passkey) -> AuthenticatorInfo {
        var info = AuthenticatorInfo(type: "webauthn", createdAt: passkey.createdAt, lastUsedAt: passkey.lastUsedAt)
        (info.id, info.name, info.isPasswordless) = (passkey.id, passkey.name, passkey.passwordless)
        return info
    }

    /// `GET account/authenticators/webauthn[?passwordless]`: options to create a passkey with.
    func passkeyCreationOptions(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(let session, let account) = caller else { return try notSignedIn(caller) }
        let passwordless = request.query["passwordless"] != nil
        guard service.passkeys.relyingParty != nil else { return answer(AuthEnvelope(status: 404)) }
        // As allauth: beginning a registration needs a confirmation within five minutes.
        guard try service.twoFactor.recentlyReauthenticated(session) else {
            return try reauthenticationRequired(session, account)
        }
        return ceremony(
            "creation_options",
            try service.passkeys.creationOptions(session: session, account: account, passwordless: passwordless))
    }

    /// `POST account/authenticators/webauthn` `{name?, credential}`: adds the passkey.
    func addPasskey(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(let session, let account) = caller else { return try notSignedIn(caller) }
        guard let body = passkeyBody(request) else { return invalid([Self.invalidField("credential")]) }
        guard let credential = body["credential"] else { return invalid([Self.required("credential")]) }
        if let name = body["name"], !(name is String || name is NSNull) { return invalid([Self.invalidField("name")]) }
        switch try service.passkeys.add(
            name: body["name"] as? String, credential: credential, session: session, account: account)
        {
        case .added(let passkey, let recoveryCodes):
            return answer([
                "status": 200, "data": try asObject(Self.info(passkey)),
                "meta": ["recovery_codes_generated": recoveryCodes],
            ])
        case .incorrect:
            return invalid([FieldProblem(code: AuthErrorCode.incorrectCode, param: nil, message: "Incorrect code.")])
        case .reauthenticationRequired: return try reauthenticationRequired(session, account)
        case .tooMany:
            return invalid([
                FieldProblem(
                    code: AuthErrorCode.invalid, param: nil,
                    message: "An account holds at most \(PasskeyService.maximumPerAccount) passkeys.")
            ])
        case .unavailable: return answer(AuthEnvelope(status: 404))
        }
    }

    /// `PUT account/authenticators/webauthn` `{id, name}`: renames one of the account's passkeys.
    func renamePasskey(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(let session, let account) = caller else { return try notSignedIn(caller) }
        guard let body = passkeyBody(request) else { return invalid([Self.invalidField("id")]) }
        var problems: [FieldProblem] = []
        let id = Self.integer(body["id"])
        if body["id"] == nil {
            problems.append(Self.required("id"))
        } else if id == nil {
            problems.append(Self.invalidField("id"))
        }
        let name = (body["name"] as? String)?.trimmingCharacters(in: .whitespacesAndNewlines)
        if body["name"] == nil || name?.isEmpty == true {
            problems.append(Self.required("name"))
        } else if name == nil || name!.count > PasskeyService.maximumNameLength
            || name!.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        {
            problems.append(Self.invalidField("name"))
        }
        guard problems.isEmpty, let id, let name else { return invalid(problems) }
        // As allauth: renaming needs a confirmation within five minutes.
        guard try service.twoFactor.recentlyReauthenticated(session) else {
            return try reauthenticationRequired(session, account)
        }
        guard try service.passkeys.rename(id: id, to: name, account: account),
            let passkey = try service.passkeys.passkeys(userID: account.id).first(where: { $0.id == id })
        else { return invalid([Self.invalidChoice("id")]) }
        return answer(["status": 200, "data": try asObject(Self.info(passkey))])
    }

    /// `DELETE account/authenticators/webauthn` `{authenticators: [id…]}`: removes passkeys.
    func removePasskeys(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(let session, let account) = caller else { return try notSignedIn(caller) }
        guard let body = passkeyBody(request) else { return invalid([Self.invalidField("authenticators")]) }
        guard let list = body["authenticators"] as? [Any], !list.isEmpty, list.count <= 100 else {
            return invalid([
                body["authenticators"] == nil ? Self.required("authenticators") : Self.invalidField("authenticators")
            ])
        }
        let ids = list.compactMap(Self.integer)
        let mine = Set(try service.passkeys.passkeys(userID: account.id).map(\.id))
        guard ids.count == list.count, ids.allSatisfy(mine.contains) else {
            return invalid([Self.invalidChoice("authenticators")])
        }
        switch try service.passkeys.remove(ids: ids, session: session, account: account) {
        case .removed: return answer(AuthEnvelope(status: 200))
        case .reauthenticationRequired: return try reauthenticationRequired(session, account)
        }
    }

    /// `GET auth/webauthn/login`: options to sign in with a passkey, the challenge kept on the
    /// caller's pre-login session (a new one, whose token `meta.session_token` carries, when the
    /// app sent none).
    func passkeyRequestOptions(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        if caller.isSignedIn { return answer(AuthEnvelope(status: 409)) }
        guard service.passkeys.relyingParty != nil else { return answer(AuthEnvelope(status: 404)) }
        if let retryAfter = try service.passkeys.chargeOptions(address: request.remoteAddress) {
            return tooMany(retryAfter)
        }
        let (owner, token) = try service.passkeys.appOwner(caller)
        guard let options = try service.passkeys.requestOptions(owner: owner) else {
            return answer(AuthEnvelope(status: 404))
        }
        var object: [String: Any] = ["status": 200, "data": ["request_options": options]]
        if let token { object["meta"] = ["session_token": token] }
        return answer(object)
    }

    /// `POST auth/webauthn/login` `{credential}`: signs in with a passkey, answered as a
    /// password's sign-in is.
    func passkeyLogin(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        if caller.isSignedIn { return answer(AuthEnvelope(status: 409)) }
        guard let body = passkeyBody(request) else { return invalid([Self.invalidField("credential")]) }
        guard let credential = body["credential"] else { return invalid([Self.required("credential")]) }
        guard case .preLogin(let session, _) = caller, session.kind == .app else {
            return invalid([PasskeyService.incorrect])
        }
        let outcome = try service.passkeys.signIn(
            credential: credential, owner: PasskeyService.owner(session), address: request.remoteAddress, kind: .app,
            current: caller)
        return signInAnswer(outcome, caller: caller, methods: true)
    }

    /// `GET auth/webauthn/authenticate`: options for the passkey a sign-in waits for as its
    /// second factor (the account's passkeys allowed), kept on its pre-login session.
    func passkeyFactorOptions(_ caller: Caller) throws -> HTTPResponse {
        guard case .preLogin(let session, _) = caller,
            let pending = try SessionFactorStore(service.database).pending(keyHash: session.keyHash)
        else { return noSecondFactorWaiting() }
        return ceremony(
            "request_options",
            try service.passkeys.requestOptions(
                owner: PasskeyService.owner(session), purpose: "authenticate", userID: pending.userID))
    }

    /// `POST auth/webauthn/authenticate` `{credential}`: the second half of the sign-in.
    func passkeyFactor(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        guard try service.pendingSecondFactor(caller) != nil else { return noSecondFactorWaiting() }
        guard let body = passkeyBody(request) else { return invalid([Self.invalidField("credential")]) }
        guard let credential = body["credential"] else { return invalid([Self.required("credential")]) }
        return factorAnswer(
            try service.completeSecondFactor(passkey: credential, caller: caller), incorrect: PasskeyService.incorrect)
    }

    /// `GET auth/webauthn/reauthenticate`: options for a signed-in session to confirm itself
    /// with one of the account's passkeys.
    func passkeyConfirmationOptions(_ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(let session, let account) = caller else { return try notSignedIn(caller) }
        return ceremony(
            "request_options",
            try service.passkeys.requestOptions(
                owner: PasskeyService.owner(session), purpose: "reauthenticate", userID: account.id))
    }

    /// `POST auth/webauthn/reauthenticate` `{credential}`: confirms the session for five minutes.
    func passkeyConfirmation(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        guard case .signedIn(let session, let account) = caller else { return try notSignedIn(caller) }
        guard let body = passkeyBody(request) else { return invalid([Self.invalidField("credential")]) }
        guard let credential = body["credential"] else { return invalid([Self.required("credential")]) }
        return factorAnswer(
            try service.reauthenticate(passkey: credential, session: session, account: account),
            incorrect: PasskeyService.incorrect)
    }

    /// `auth/webauthn/signup`'s form: the address, and an invitation's code (Homeport's own).
    private struct PasskeySignupForm: Decodable {
        var email: String
        var invitation: String?
    }

    /// `POST auth/webauthn/signup` `{email, invitation?}`: an account with no password, whose
    /// pre-login session waits for the address's code (`verify_email`), then for its passkey
    /// (`mfa_signup_webauthn`). Offered where addresses are verified by code.
    func passkeySignup(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        guard service.passkeys.signupAvailable else { return answer(AuthEnvelope(status: 404)) }
        if caller.isSignedIn { return answer(AuthEnvelope(status: 409)) }
        let form: PasskeySignupForm
        switch decode(PasskeySignupForm.self, request, order: ["email"]) {
        case .success(let value): form = value
        case .failure(let problems): return invalid(problems.problems)
        }
        let outcome = try service.signup(
            email: form.email, password: nil, address: request.remoteAddress, kind: .app, current: caller,
            invitation: form.invitation)
        return signInAnswer(outcome, caller: caller, methods: false)
    }

    /// `GET auth/webauthn/signup`: options to create the passkey a sign-up waits for.
    func passkeySignupOptions(_ caller: Caller) throws -> HTTPResponse {
        guard service.passkeys.signupAvailable else { return answer(AuthEnvelope(status: 404)) }
        guard let options = try service.passkeys.signupOptions(caller) else { return answer(AuthEnvelope(status: 409)) }
        return ceremony("creation_options", options)
    }

    /// `PUT auth/webauthn/signup` `{name?, credential}`: the sign-up's passkey, which signs in (or,
    /// for an account waiting for approval, says so).
    func completePasskeySignup(_ request: HTTPRequest, _ caller: Caller) throws -> HTTPResponse {
        guard service.passkeys.signupAvailable else { return answer(AuthEnvelope(status: 404)) }
        guard try service.passkeys.pendingSignup(caller) != nil else { return answer(AuthEnvelope(status: 409)) }
        guard let body = passkeyBody(request) else { return invalid([Self.invalidField("credential")]) }
        guard let credential = body["credential"] else { return invalid([Self.required("credential")]) }
        if let name = body["name"], !(name is String || name is NSNull) { return invalid([Self.invalidField("name")]) }
        switch try service.passkeys.completeSignup(
            name: body["name"] as? String, credential: credential, caller: caller, address: request.remoteAddress)
        {
        // As allauth: a sign-up records no authentication method, and its refusal names no field.
        case .done(let outcome): return signInAnswer(outcome, caller: caller, methods: false)
        case .incorrect:
            return invalid([FieldProblem(code: AuthErrorCode.incorrectCode, param: nil, message: "Incorrect code.")])
        case .noneWaiting: return answer(AuthEnvelope(status: 409))
        }
    }

    /// A ceremony's options in allauth's answer (`data.creation_options` or
    /// `data.request_options`); 404 without them (no relying party).
    private func ceremony(_ key: String, _ options: [String: Any]?) -> HTTPResponse {
        guard let options else { return answer(AuthEnvelope(status: 404)) }
        return answer(["status": 200, "data": [key: options]])
    }

    /// The body as a JSON object (an empty body is `{}`); `nil` for anything else.
    private func passkeyBody(_ request: HTTPRequest) -> [String: Any]? {
        if request.body.isEmpty { return [:] }
        guard request.body.count <= 64 * 1024, StrictJSON.isValidWithoutRepeatedKeys(Array(request.body)) else {
            return nil
        }
        return (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any]
    }

    static func required(_ field: String) -> FieldProblem {
        FieldProblem(code: AuthErrorCode.required, param: field, message: "This field is required.")
    }

    static func invalidField(_ field: String) -> FieldProblem {
        FieldProblem(code: AuthErrorCode.invalid, param: field, message: "Enter a valid value.")
    }

    static func invalidChoice(_ field: String) -> FieldProblem {
        FieldProblem(
            code: AuthErrorCode.invalidChoice, param: field,
            message: "Select a valid choice. That choice is not one of the available choices.")
    }

    /// A JSON number that is a whole id (not `true`, not `1.5`), read as JSON reads it.
    static func integer(_ value: Any?) -> Int64? {
        guard let value, let bytes = try? HTTPResponse.encode(untyped: value)
        else { return nil }
        return try? JSONDecoder().decode(Int64.self, from: bytes)
    }
}
