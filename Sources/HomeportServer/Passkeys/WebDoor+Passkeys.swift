import Foundation
import HomeportCrypto
import HomeportHTTP
import HomeportWire

/// Passkeys at the web door: "Sign in with a passkey" on the sign-in page, and the account's
/// passkeys page (add one, rename, remove). The pages' script runs the browser's WebAuthn
/// ceremony and hands its answer back in an ordinary form, so that the server answers as it does
/// any sign-in: a redirect, with the session cookie.
extension WebDoor {
    /// The passkeys page.
    static let passkeysPath = base + "/passkeys"
    /// The pages' script.
    static let passkeysScriptPath = base + "/passkeys.js"

    /// The policy of the pages that run the ceremony: the default one, with this origin's script
    /// and fetches.
    static let passkeyPolicy =
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; script-src 'self'; connect-src 'self'"

    /// Whether this server offers passkeys (its public address is HTTPS on a name).
    var offersPasskeys: Bool { service.passkeys.relyingParty != nil }

    /// The sign-in page, with "Sign in with a passkey" when the server offers them.
    func loginPage(_ context: RequestContext, email: String = "", errors: [String] = [], status: Int = 200)
        -> HTTPResponse
    {
        var body = WebPage.loginForm(
            csrf: context.csrfToken, email: email, errors: errors, providers: providerButtons(),
            passkeys: offersPasskeys)
        guard offersPasskeys else { return page("Sign in", body, status: status) }
        body += WebPage.passkeyLoginSection(csrf: context.csrfToken)
        var response = page("Sign in", body, status: status)
        response.headers.set("Content-Security-Policy", Self.passkeyPolicy)
        return response
    }

    /// `POST /account/passkey/options`: a sign-in's options as JSON, its challenge bound to this
    /// browser by a cookie that lives as long as the challenge.
    func passkeyLoginOptions(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        if let refusal = honeypot(request.formFields) { return refusal }
        guard offersPasskeys else {
            throw HTTPError(status: 404, code: APIErrorCode.notFound, message: "This server offers no passkeys.")
        }
        if let retryAfter = try service.passkeys.chargeOptions(address: request.remoteAddress) {
            throw HTTPError(
                status: 429, code: APIErrorCode.rateLimited, message: "Too many sign-in attempts; wait a minute.",
                headers: ["Retry-After": String(retryAfter)])
        }
        let handle = try SecretToken.generate()
        guard let options = try service.passkeys.requestOptions(owner: Self.ceremonyOwner(handle)) else {
            throw HTTPError(status: 404, code: APIErrorCode.notFound, message: "This server offers no passkeys.")
        }
        var response = try Self.ceremonyOptions(options)
        response.headers.add(
            "Set-Cookie", cookies.setting(cookies.passkeyCeremony, handle, maxAge: PasskeyService.challengeLifetime))
        return response
    }

    /// `POST /account/passkey/login` (`credential`): signs in with the browser's answer, as
    /// the password's form does.
    func passkeyLogin(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        let refused = { loginPage(context, errors: ["That passkey could not sign you in. Try again."], status: 400) }
        guard let handle = request.cookies[cookies.passkeyCeremony], SecretToken.isWellFormed(handle),
            let text = fields["credential"], let credential = try? JSONSerialization.jsonObject(with: Data(text.utf8))
        else { return refused() }
        let outcome = try service.passkeys.signIn(
            credential: credential, owner: Self.ceremonyOwner(handle), address: request.remoteAddress, kind: .web,
            current: context.caller)
        var response =
            if case .invalid = outcome { refused() } else {
                signInAnswer(outcome, title: "Sign in") {
                    WebPage.loginForm(csrf: context.csrfToken, errors: $0, providers: providerButtons())
                }
            }
        response.headers.add("Set-Cookie", cookies.setting(cookies.passkeyCeremony, "", maxAge: 0))
        return response
    }

    /// A ceremony's options, as the pages' script fetches them: JSON, never stored.
    static func ceremonyOptions(_ options: [String: Any]) throws -> HTTPResponse {
        var response = HTTPResponse.json(bytes: try HTTPResponse.encode(untyped: options), status: 200)
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    /// Confirms the password typed into a passkeys-page form; the page again, with the reason,
    /// when it is not the password.
    private func confirmPassword(_ password: String, _ session: Session, _ account: Account, _ context: RequestContext)
        throws -> HTTPResponse?
    {
        switch try service.reauthenticate(password: password, session: session, account: account) {
        case .confirmed: return nil
        case .incorrect: return try passkeysPage(context, errors: ["That is not your password."], status: 400)
        case .rateLimited(let retryAfter): return tooMany(retryAfter)
        }
    }

    /// A browser's ceremony, by the hash of its cookie's handle.
    static func ceremonyOwner(_ handle: String) -> String { "browser:" + Digest.sha256Hex(handle) }

    // MARK: The account's passkeys

    /// `GET /account/passkeys`.
    func passkeysPage(_ context: RequestContext, notice: String? = nil, errors: [String] = [], status: Int = 200)
        throws -> HTTPResponse
    {
        guard case .signedIn(_, let account) = context.caller else { return .seeOther("/account/login") }
        guard offersPasskeys else {
            return page(
                "Passkeys", WebPage.message("This server offers no passkeys: its address is not HTTPS."), status: 404)
        }
        let passkeys = try service.passkeys.passkeys(userID: account.id)
        var response = page(
            "Passkeys",
            WebPage.passkeysSection(
                csrf: context.csrfToken, passkeys: passkeys, notice: notice, errors: errors,
                hasPassword: account.hasUsablePassword), status: status)
        response.headers.set("Content-Security-Policy", Self.passkeyPolicy)
        return response
    }

    /// `POST /account/passkeys/options` (`password`): the password confirmed, options to create
    /// a passkey with, as JSON; 400 JSON with a sentence otherwise.
    func passkeyCreationOptions(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        guard case .signedIn(let session, let account) = context.caller else { throw RequireSignedIn.refusal }
        switch try service.reauthenticate(password: fields["password"] ?? "", session: session, account: account) {
        case .confirmed: break
        case .incorrect: throw HTTPError.invalidField("password", "That is not your password.")
        case .rateLimited(let retryAfter):
            throw HTTPError(
                status: 429, code: APIErrorCode.rateLimited, message: "Too many tries; wait a few minutes.",
                headers: ["Retry-After": String(retryAfter)])
        }
        guard
            let options = try service.passkeys.creationOptions(session: session, account: account, passwordless: true)
        else { throw HTTPError(status: 404, code: APIErrorCode.notFound, message: "This server offers no passkeys.") }
        return try Self.ceremonyOptions(options)
    }

    /// `POST /account/passkeys/add` (`name`, `credential`): adds the passkey the browser made.
    func addPasskey(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        guard case .signedIn(let session, let account) = context.caller else { return .seeOther("/account/login") }
        guard let text = fields["credential"], let credential = try? JSONSerialization.jsonObject(with: Data(text.utf8))
        else { return try passkeysPage(context, errors: ["The browser made no passkey."], status: 400) }
        switch try service.passkeys.add(
            name: fields["name"], credential: credential, session: session, account: account)
        {
        case .added(let passkey, let recoveryCodes):
            // Its first second factor: the recovery codes made with it, shown this once.
            if recoveryCodes,
                case .done(let codes) = try service.twoFactor.recoveryCodes(session: session, account: account)
            {
                return page("The passkey was added", WebPage.recoveryCodes(codes.unusedCodes ?? []))
            }
            return .seeOther(Self.passkeysPath + "?added=\(passkey.id)")
        case .incorrect: return try passkeysPage(context, errors: ["That passkey could not be added."], status: 400)
        case .reauthenticationRequired: return try passkeysPage(context, errors: ["Enter your password."], status: 400)
        case .tooMany:
            return try passkeysPage(
                context, errors: ["An account holds at most \(PasskeyService.maximumPerAccount) passkeys."], status: 400
            )
        case .unavailable: return try passkeysPage(context)
        }
    }

    /// `POST /account/passkeys/rename` (`id`, `name`, `password`).
    func renamePasskey(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        guard case .signedIn(let session, let account) = context.caller else { return .seeOther("/account/login") }
        if let refusal = try confirmPassword(fields["password"] ?? "", session, account, context) { return refusal }
        let name = (fields["name"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard let id = fields["id"].flatMap({ Int64($0) }), !name.isEmpty,
            name.count <= PasskeyService.maximumNameLength,
            !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }),
            try service.passkeys.rename(id: id, to: name, account: account)
        else {
            return try passkeysPage(context, errors: ["Give the passkey a name of 1 to 100 characters."], status: 400)
        }
        return .seeOther(Self.passkeysPath)
    }

    /// `POST /account/passkeys/remove` (`id`, `password`).
    func removePasskey(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        guard case .signedIn(let session, let account) = context.caller else { return .seeOther("/account/login") }
        guard let id = fields["id"].flatMap({ Int64($0) }),
            try service.passkeys.passkeys(userID: account.id).contains(where: { $0.id == id })
        else { return try passkeysPage(context, errors: ["No passkey of yours has this id."], status: 400) }
        if let refusal = try confirmPassword(fields["password"] ?? "", session, account, context) { return refusal }
        _ = try service.passkeys.remove(ids: [id], session: session, account: account)
        return .seeOther(Self.passkeysPath)
    }
}

extension WebPage {
    /// "Sign in with a passkey": a button the script runs the ceremony from, and the form it
    /// hands the answer back in.
    static func passkeyLoginSection(csrf: String) -> String {
        """
        <form id="passkey-login" method="post" action="/account/passkey/login" data-options="/account/passkey/options">
        \(guardFields(csrf: csrf))
        <input type="hidden" name="credential">
        <button type="button" id="passkey-signin">Sign in with a passkey</button>
        <p id="passkey-status" class="note" role="status"></p>
        </form>
        <script src="\(WebDoor.passkeysScriptPath)"></script>
        """
    }

    /// "Use a passkey" on a sign-in's second step.
    static func passkeyFactorSection(csrf: String) -> String {
        """
        <form id="passkey-factor" method="post" action="/account/2fa/webauthn" data-options="/account/2fa/webauthn/options">
        \(guardFields(csrf: csrf))
        <input type="hidden" name="credential">
        <button type="button" id="passkey-use">Use a passkey</button>
        <p id="passkey-status" class="note" role="status"></p>
        </form>
        <script src="\(WebDoor.passkeysScriptPath)"></script>
        """
    }

    /// The account's passkeys: each with its name, rename and remove; and "Add a passkey".
    static func passkeysSection(
        csrf: String, passkeys: [Passkey], notice: String?, errors: [String], hasPassword: Bool
    ) -> String {
        let rows = passkeys.map { passkey in
            let used = passkey.lastUsedAt.map { "last used " + date($0) } ?? "never used"
            return """
                <li><strong>\(htmlEscaped(passkey.name))</strong> <span class="note">added \(date(passkey.createdAt)), \(used)</span>
                <form method="post" action="/account/passkeys/rename">\(guardFields(csrf: csrf))
                <input type="hidden" name="id" value="\(passkey.id)">
                <label>New name <input type="text" name="name" maxlength="100" required></label>
                <label>Password <input type="password" name="password" autocomplete="current-password" required></label>
                <button type="submit">Rename</button></form>
                <form method="post" action="/account/passkeys/remove">\(guardFields(csrf: csrf))
                <input type="hidden" name="id" value="\(passkey.id)">
                <label>Password <input type="password" name="password" autocomplete="current-password" required></label>
                <button type="submit">Remove</button></form></li>
                """
        }
        let list =
            passkeys.isEmpty ? "<p class=\"note\">No passkeys yet.</p>" : "<ul id=\"passkeys\">\(rows.joined())</ul>"
        let add =
            hasPassword
            ? """
            <form id="passkey-add" method="post" action="/account/passkeys/add" data-options="/account/passkeys/options">
            \(guardFields(csrf: csrf))
            <input type="hidden" name="credential">
            <label for="passkey-name">Name</label>
            <input id="passkey-name" type="text" name="name" maxlength="100" placeholder="This phone">
            <label for="passkey-password">Password</label>
            <input id="passkey-password" type="password" name="password" autocomplete="current-password" required>
            <button type="button" id="passkey-create">Add a passkey</button>
            <p id="passkey-status" class="note" role="status"></p>
            </form>
            """
            : "<p class=\"note\">Set a password first (Forgot password?): adding a passkey asks for it.</p>"
        return """
            \(Self.errors(errors))
            \(notice.map { "<p class=\"note\">\(htmlEscaped($0))</p>" } ?? "")
            <p class="note">A passkey signs you in without a password: your phone or computer unlocks it with your face, fingerprint or PIN.</p>
            \(list)
            \(add)
            <nav><a href="/account">Back to your account</a></nav>
            <script src="\(WebDoor.passkeysScriptPath)"></script>
            """
    }

    private static func date(_ seconds: Double) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: seconds)).prefix(10).description
    }
}
