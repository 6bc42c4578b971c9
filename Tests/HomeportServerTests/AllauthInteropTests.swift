import Foundation
import HomeportCrypto
import HomeportTestSupport
import Testing

/// Every app-client operation, run step by step against a real django-allauth headless server and
/// against homeport-server; both must answer each step with the same status and envelope, except
/// where docs/allauth-differences.md lists a deliberate difference, which the step then names.
@Suite("Interop with django-allauth headless", .tags(.process, .interop, .docs))
struct AllauthInteropTests {
    /// Envelope members that differ on purpose (see docs/allauth-differences.md): an `mfa`
    /// method's authenticator `id` (Homeport's authenticators have none to give).
    static let deliberateDifferences: Set<String> = ["data.methods[].id"]

    /// The first `[A-Z]{4}-[A-Z]{4}` verification code or reset key, read from the server's mail.
    enum Mailed {
        /// The last verification code mailed, as typed by someone in a hurry when `sloppy`
        /// (lower case, no dash, a space in front).
        case code(sloppy: Bool)
        /// The last password-reset key mailed.
        case resetKey
    }

    /// A status Homeport answers on purpose where allauth answers another, or with `member`, one
    /// envelope member whose value differs under the same status; and the text in
    /// docs/allauth-differences.md that says why.
    struct Difference {
        var homeportStatus: Int
        var documented: String
        /// The member (`meta.is_authenticated`) whose value differs, and Homeport's value as the
        /// shape writes it (`false` is `0`).
        var member: (path: String, homeport: String)?
    }

    struct Step {
        var name: String
        var method: String
        var path: String
        var token: Token = .none
        var json: [String: Any]?
        /// A raw body with its content type, instead of `json`.
        var raw: (type: String, body: String)?
        /// The mailed secret for `json["key"]` (POST) or the key header (GET).
        var mailed: Mailed?
        var header: (name: String, value: String)?
        var difference: Difference?
        /// Seconds to wait before the step, on both servers (allauth's reset key hashes the last
        /// login to the second).
        var pause: Double = 0
        /// A second-factor code for `json["code"]`, made from what earlier answers showed.
        var factor: Factor?
        /// An ID token for `json["token"]["id_token"]`, minted by the stand-in provider.
        var idToken: Minted?
        /// What the test's authenticator puts in `json["credential"]`, from the last options.
        var passkey: Passkey?
        /// Whether `json["id"]` (and `json["authenticators"]`) name the passkey added last.
        var passkeyID = false
    }

    /// A passkey's answer a step sends.
    enum Passkey {
        /// A registration for the last creation options.
        case register
        /// A sign-in for the last request options.
        case assert
        /// The sign-in sent last, again.
        case again
        /// Something that is no credential.
        case garbage
    }

    /// An ID token a step hands over.
    enum Minted {
        /// A new token of `subject` for the app's client, signed with the stand-in's `key`.
        case fresh(subject: String, email: String?, verified: Bool, key: String = "rsa")
        /// The token the last step handed over, again.
        case again
    }

    /// A second-factor code a step sends.
    enum Factor {
        /// The TOTP code of the current 30-second step plus `steps`, from the secret the last
        /// `GET account/authenticators/totp` offered.
        case totp(steps: Int64)
        /// The `index`th of the recovery codes last shown.
        case recovery(Int)
    }

    enum Token {
        case none, current, previous, bogus, empty
    }

    static let email = "interop@example.com"

    /// Without address verification: sign-up, sign-in, session, password change, logout, reset.
    static var accountSteps: [Step] {
        [
            Step(name: "config", method: "GET", path: "config"),
            Step(name: "session, anonymous", method: "GET", path: "auth/session"),
            Step(name: "session, empty token header", method: "GET", path: "auth/session", token: .empty),
            Step(name: "logout, anonymous", method: "DELETE", path: "auth/session"),
            Step(
                name: "signup", method: "POST", path: "auth/signup",
                json: ["email": email, "password": "first good password"]),
            Step(name: "session, signed in", method: "GET", path: "auth/session", token: .current),
            Step(
                name: "signup, address taken", method: "POST", path: "auth/signup",
                json: ["email": email, "password": "first good password"]),
            Step(
                name: "signup, short password", method: "POST", path: "auth/signup",
                json: ["email": "b@example.com", "password": "x"]),
            Step(
                name: "signup, not an address", method: "POST", path: "auth/signup",
                json: ["email": "nobody", "password": "first good password"]),
            Step(
                name: "signup, address taken and short password", method: "POST", path: "auth/signup",
                json: ["email": email, "password": "x"]),
            Step(name: "signup, empty body", method: "POST", path: "auth/signup", raw: ("application/json", "")),
            Step(
                name: "signup, text/plain", method: "POST", path: "auth/signup",
                raw: ("text/plain", #"{"email": "plain@example.com", "password": "first good password"}"#),
                difference: Difference(homeportStatus: 415, documented: "sent as `text/plain`")),
            Step(
                name: "login, wrong password", method: "POST", path: "auth/login",
                json: ["email": email, "password": "not the password"]),
            Step(
                name: "login, unknown address", method: "POST", path: "auth/login",
                json: ["email": "nobody@example.com", "password": "not the password"]),
            Step(name: "login, missing field", method: "POST", path: "auth/login", json: ["email": email]),
            Step(
                name: "login, empty strings", method: "POST", path: "auth/login", json: ["email": "", "password": ""]),
            Step(
                name: "login, blank address", method: "POST", path: "auth/login",
                json: ["email": "   ", "password": "not the password"]),
            Step(
                name: "login while signed in", method: "POST", path: "auth/login", token: .current,
                json: ["email": email, "password": "first good password"]),
            Step(
                name: "login while signed in, wrong password", method: "POST", path: "auth/login", token: .current,
                json: ["email": email, "password": "not the password"]),
            Step(
                name: "signup while signed in, not an address", method: "POST", path: "auth/signup", token: .current,
                json: ["email": "nobody", "password": "first good password"]),
            Step(
                name: "signup while signed in, address taken", method: "POST", path: "auth/signup", token: .current,
                json: ["email": email, "password": "first good password"]),
            Step(
                name: "login", method: "POST", path: "auth/login",
                json: ["email": email, "password": "first good password"]),
            Step(
                name: "password change, wrong current", method: "POST", path: "account/password/change",
                token: .current,
                json: ["current_password": "wrong current pw", "new_password": "second good password"]),
            Step(
                name: "password change, empty body", method: "POST", path: "account/password/change",
                token: .current, json: [:]),
            Step(
                name: "password change, empty strings", method: "POST", path: "account/password/change",
                token: .current, json: ["current_password": "", "new_password": ""]),
            Step(
                name: "password change, short new password", method: "POST", path: "account/password/change",
                token: .current, json: ["current_password": "first good password", "new_password": "x"]),
            Step(
                name: "password change", method: "POST", path: "account/password/change", token: .current,
                json: ["current_password": "first good password", "new_password": "second good password"]),
            Step(name: "session, rotated-out token", method: "GET", path: "auth/session", token: .previous),
            Step(name: "session, new token", method: "GET", path: "auth/session", token: .current),
            Step(name: "email addresses", method: "GET", path: "account/email", token: .current),
            Step(name: "email addresses, anonymous", method: "GET", path: "account/email"),
            Step(name: "email addresses, invalid token", method: "GET", path: "account/email", token: .bogus),
            Step(
                name: "add an address", method: "POST", path: "account/email", token: .current,
                json: ["email": "second@example.com"],
                difference: Difference(homeportStatus: 405, documented: "one address per account")),
            Step(
                name: "reauthenticate", method: "POST", path: "auth/reauthenticate", token: .current,
                json: ["password": "second good password"]),
            Step(
                name: "login by code", method: "POST", path: "auth/code/confirm", json: ["code": "123456"],
                difference: Difference(homeportStatus: 404, documented: "`auth/code/confirm`")),
            Step(
                name: "refresh a token", method: "POST", path: "tokens/refresh", json: ["refresh_token": "x"],
                difference: Difference(homeportStatus: 404, documented: "`tokens/refresh`")),
            Step(
                name: "verify, verification off", method: "POST", path: "auth/email/verify", token: .current,
                json: ["key": "BCDF-GHJK"]),
            Step(name: "verify check, no key", method: "GET", path: "auth/email/verify", token: .current),
            Step(name: "resend, verification off", method: "POST", path: "auth/email/verify/resend", token: .current),
            Step(name: "logout", method: "DELETE", path: "auth/session", token: .current),
            Step(name: "session, signed-out token", method: "GET", path: "auth/session", token: .current),
            Step(name: "logout, signed-out token", method: "DELETE", path: "auth/session", token: .current),
            Step(name: "session, invalid token", method: "GET", path: "auth/session", token: .bogus),
            Step(
                name: "password change, invalid token", method: "POST", path: "account/password/change",
                token: .bogus, json: [:]),
            Step(
                name: "password change, anonymous", method: "POST", path: "account/password/change",
                json: ["current_password": "a", "new_password": "second good password"]),
            Step(
                name: "reset request, unknown", method: "POST", path: "auth/password/request",
                json: ["email": "nobody@example.com"]),
            Step(
                name: "reset request, not an address", method: "POST", path: "auth/password/request",
                json: ["email": "nope"]),
            Step(name: "reset request, empty", method: "POST", path: "auth/password/request", json: ["email": ""]),
            Step(name: "reset request, known", method: "POST", path: "auth/password/request", json: ["email": email]),
            Step(name: "reset key check, no key", method: "GET", path: "auth/password/reset"),
            Step(
                name: "reset key check, invalid key", method: "GET", path: "auth/password/reset",
                header: ("X-Password-Reset-Key", "bogus")),
            Step(name: "reset key check, mailed key", method: "GET", path: "auth/password/reset", mailed: .resetKey),
            Step(
                name: "reset, invalid key", method: "POST", path: "auth/password/reset",
                json: ["key": "bogus", "password": "third good password"]),
            Step(
                name: "reset, short password", method: "POST", path: "auth/password/reset", json: ["password": "x"],
                mailed: .resetKey),
            Step(
                name: "reset", method: "POST", path: "auth/password/reset", json: ["password": "third good password"],
                mailed: .resetKey),
            Step(
                name: "reset, key used", method: "POST", path: "auth/password/reset",
                json: ["password": "fourth good password"], mailed: .resetKey),
            Step(
                name: "login, password before the reset", method: "POST", path: "auth/login",
                json: ["email": email, "password": "second good password"]),
            Step(
                name: "login, reset password", method: "POST", path: "auth/login",
                json: ["email": email, "password": "third good password"]),
            Step(name: "logout after the reset", method: "DELETE", path: "auth/session", token: .current),
            Step(
                name: "reset request, before a login", method: "POST", path: "auth/password/request",
                json: ["email": email]),
            Step(
                name: "login, after the reset request", method: "POST", path: "auth/login",
                json: ["email": email, "password": "third good password"], pause: 1.1),
            Step(
                name: "reset, key mailed before the login", method: "POST", path: "auth/password/reset",
                json: ["password": "fifth good password"], mailed: .resetKey),
            Step(
                name: "reset request, while signed in elsewhere", method: "POST", path: "auth/password/request",
                json: ["email": email]),
            Step(
                name: "reset, with the new key", method: "POST", path: "auth/password/reset",
                json: ["password": "sixth good password"], mailed: .resetKey),
            Step(
                name: "session, opened before the reset", method: "GET", path: "auth/session", token: .current,
                difference: Difference(homeportStatus: 410, documented: "after a password change or a password reset")),
        ]
    }

    static let second = "second@example.com"

    /// With verification by code: the code's steps, right and wrong, on both sides of sign-in.
    static var verificationSteps: [Step] {
        [
            Step(name: "config", method: "GET", path: "config"),
            Step(
                name: "signup", method: "POST", path: "auth/signup",
                json: ["email": email, "password": "first good password"]),
            Step(name: "session, verification pending", method: "GET", path: "auth/session", token: .current),
            Step(
                name: "login while verification pending", method: "POST", path: "auth/login", token: .current,
                json: ["email": email, "password": "first good password"]),
            Step(
                name: "session after login while pending", method: "GET", path: "auth/session", token: .current),
            Step(name: "resend at once", method: "POST", path: "auth/email/verify/resend", token: .current),
            Step(name: "verify check, no key", method: "GET", path: "auth/email/verify", token: .current),
            Step(
                name: "verify check, wrong code", method: "GET", path: "auth/email/verify", token: .current,
                header: ("X-Email-Verification-Key", "BCDF-GHJK")),
            Step(
                name: "verify check, mailed code", method: "GET", path: "auth/email/verify", token: .current,
                mailed: .code(sloppy: false)),
            Step(name: "verify, no token", method: "POST", path: "auth/email/verify", json: ["key": "BCDF-GHJK"]),
            Step(name: "resend, no token", method: "POST", path: "auth/email/verify/resend"),
            Step(
                name: "verify, mailed code typed sloppily", method: "POST", path: "auth/email/verify", token: .current,
                json: [:], mailed: .code(sloppy: true)),
            Step(name: "session, pre-login token", method: "GET", path: "auth/session", token: .previous),
            Step(name: "session, verified", method: "GET", path: "auth/session", token: .current),
            Step(name: "email addresses, verified", method: "GET", path: "account/email", token: .current),
            Step(
                name: "verify, signed in", method: "POST", path: "auth/email/verify", token: .current,
                json: ["key": "BCDF-GHJK"]),
            Step(name: "resend, signed in", method: "POST", path: "auth/email/verify/resend", token: .current),
            Step(name: "logout", method: "DELETE", path: "auth/session", token: .current),
            Step(
                name: "login, verified address", method: "POST", path: "auth/login",
                json: ["email": email, "password": "first good password"]),
            Step(name: "logout again", method: "DELETE", path: "auth/session", token: .current),
            Step(
                name: "signup, address taken, owner's code sent 3 minutes ago at most", method: "POST",
                path: "auth/signup", json: ["email": email, "password": "other good password"]),
            Step(
                name: "signup, second address", method: "POST", path: "auth/signup",
                json: ["email": second, "password": "first good password"]),
            Step(
                name: "verify, wrong code 1", method: "POST", path: "auth/email/verify", token: .current,
                json: ["key": "BCDF-GHJK"]),
            Step(
                name: "verify, wrong code 2", method: "POST", path: "auth/email/verify", token: .current,
                json: ["key": "BCDF-GHJL"]),
            Step(
                name: "verify, wrong code 3", method: "POST", path: "auth/email/verify", token: .current,
                json: ["key": "BCDF-GHJM"]),
            Step(name: "session, verification given up", method: "GET", path: "auth/session", token: .current),
            Step(
                name: "verify, mailed code after giving up", method: "POST", path: "auth/email/verify",
                token: .current, json: [:], mailed: .code(sloppy: false)),
            Step(
                name: "login, unverified, code mailed too recently", method: "POST", path: "auth/login",
                json: ["email": second, "password": "first good password"]),
            Step(
                name: "login, unverified, wrong password", method: "POST", path: "auth/login",
                json: ["email": second, "password": "not the password"]),
        ]
    }

    static let mfaEmail = "mfa@example.com"

    /// The page the test's authenticator says it ran on: Homeport's public address in the passkey
    /// comparison (allauth takes any origin there).
    static let passkeyOrigin = "http://localhost"

    /// Passkeys (allauth's WebAuthn, headless, passkey sign-in on): options after a
    /// confirmation, adding one (recovery codes made with it), listing and renaming it, signing
    /// in with it alone, a replay and garbage refused, a password sign-in that waits for it as
    /// its second factor, a confirmation with it, removal.
    static var passkeySteps: [Step] {
        let password = "first good password"
        return [
            Step(
                name: "signup", method: "POST", path: "auth/signup",
                json: ["email": "passkey@example.com", "password": password]),
            Step(name: "authenticators, none", method: "GET", path: "account/authenticators", token: .current),
            Step(
                name: "reauthenticate", method: "POST", path: "auth/reauthenticate", token: .current,
                json: ["password": password]),
            Step(
                name: "passkey options", method: "GET", path: "account/authenticators/webauthn?passwordless",
                token: .current),
            Step(
                name: "add a passkey", method: "POST", path: "account/authenticators/webauthn", token: .current,
                json: ["name": "Laptop"], passkey: .register),
            Step(name: "authenticators, the passkey", method: "GET", path: "account/authenticators", token: .current),
            Step(
                name: "rename the passkey", method: "PUT", path: "account/authenticators/webauthn", token: .current,
                json: ["name": "Old laptop"], passkeyID: true),
            Step(
                name: "rename, no name", method: "PUT", path: "account/authenticators/webauthn", token: .current,
                json: ["name": ""], passkeyID: true),
            Step(name: "logout", method: "DELETE", path: "auth/session", token: .current),
            Step(name: "passkey login options", method: "GET", path: "auth/webauthn/login"),
            Step(
                name: "passkey login, garbage", method: "POST", path: "auth/webauthn/login", token: .current,
                json: [:], passkey: .garbage),
            Step(name: "passkey login options again", method: "GET", path: "auth/webauthn/login", token: .current),
            Step(
                name: "passkey login, no credential", method: "POST", path: "auth/webauthn/login", token: .current,
                json: [:]),
            Step(name: "passkey login options, third", method: "GET", path: "auth/webauthn/login", token: .current),
            Step(
                name: "passkey login", method: "POST", path: "auth/webauthn/login", token: .current, json: [:],
                passkey: .assert),
            Step(name: "session after the passkey", method: "GET", path: "auth/session", token: .current),
            Step(name: "logout again", method: "DELETE", path: "auth/session", token: .current),
            Step(name: "passkey login options, fourth", method: "GET", path: "auth/webauthn/login"),
            Step(
                name: "passkey login, replayed", method: "POST", path: "auth/webauthn/login", token: .current,
                json: [:], passkey: .again),
            Step(
                name: "login with the password", method: "POST", path: "auth/login",
                json: ["email": "passkey@example.com", "password": password]),
            Step(
                name: "second factor options", method: "GET", path: "auth/webauthn/authenticate", token: .current),
            Step(
                name: "second factor, garbage", method: "POST", path: "auth/webauthn/authenticate", token: .current,
                json: [:], passkey: .garbage),
            Step(
                name: "second factor options again", method: "GET", path: "auth/webauthn/authenticate",
                token: .current),
            Step(
                name: "second factor, the passkey", method: "POST", path: "auth/webauthn/authenticate",
                token: .current, json: [:], passkey: .assert),
            Step(name: "session after the second factor", method: "GET", path: "auth/session", token: .current),
            Step(
                name: "confirmation options", method: "GET", path: "auth/webauthn/reauthenticate", token: .current),
            Step(
                name: "confirmation with the passkey", method: "POST", path: "auth/webauthn/reauthenticate",
                token: .current, json: [:], passkey: .assert),
            Step(
                name: "remove the passkey", method: "DELETE", path: "account/authenticators/webauthn", token: .current,
                json: [:], passkeyID: true),
            Step(name: "authenticators, none again", method: "GET", path: "account/authenticators", token: .current),
        ]
    }

    /// A sign-up with a passkey alone, under verification by code: the address, its code, then
    /// the passkey.
    static var passkeySignupSteps: [Step] {
        let path = "auth/webauthn/signup"
        return [
            Step(name: "passkey signup, no address", method: "POST", path: path, json: [:]),
            Step(name: "passkey signup", method: "POST", path: path, json: ["email": "passkey@example.com"]),
            Step(name: "session, code pending", method: "GET", path: "auth/session", token: .current),
            Step(name: "signup options before the code", method: "GET", path: path, token: .current),
            Step(
                name: "verify, mailed code", method: "POST", path: "auth/email/verify", token: .current, json: [:],
                mailed: .code(sloppy: false)),
            Step(name: "session, passkey pending", method: "GET", path: "auth/session", token: .current),
            Step(name: "signup options", method: "GET", path: path, token: .current),
            Step(
                name: "signup passkey, garbage", method: "PUT", path: path, token: .current, json: [:],
                passkey: .garbage),
            Step(name: "signup options again", method: "GET", path: path, token: .current),
            Step(
                name: "signup passkey", method: "PUT", path: path, token: .current, json: ["name": "Phone"],
                passkey: .register),
            Step(name: "session after the passkey signup", method: "GET", path: "auth/session", token: .current),
            Step(name: "signup options, signed in", method: "GET", path: path, token: .current),
        ]
    }

    /// allauth answers `is_authenticated: null` where its specification says a boolean.
    static let noSecondFactorWaiting = Difference(
        homeportStatus: 401, documented: "`auth/2fa/authenticate` when no sign-in waits for a second factor",
        member: ("meta.is_authenticated", "0"))

    /// Two-factor sign-in (allauth's MFA app, headless): set-up with its confirmation, recovery
    /// codes shown once and made again, sign-in waiting for a second factor and completed with a
    /// recovery code, confirmation by a code, turning TOTP off.
    static var mfaSteps: [Step] {
        [
            Step(name: "config", method: "GET", path: "config"),
            Step(
                name: "signup", method: "POST", path: "auth/signup",
                json: ["email": mfaEmail, "password": "first good password"]),
            Step(name: "authenticators, none", method: "GET", path: "account/authenticators", token: .current),
            Step(
                name: "recovery codes, none", method: "GET", path: "account/authenticators/recovery-codes",
                token: .current),
            Step(name: "totp, offered", method: "GET", path: "account/authenticators/totp", token: .current),
            Step(
                name: "totp on, wrong code", method: "POST", path: "account/authenticators/totp", token: .current,
                json: ["code": "000000"]),
            Step(
                name: "totp on, no code", method: "POST", path: "account/authenticators/totp", token: .current,
                json: [:]),
            Step(
                name: "totp on, right code, not confirmed", method: "POST", path: "account/authenticators/totp",
                token: .current, json: [:], factor: .totp(steps: 0)),
            Step(
                name: "reauthenticate, wrong password", method: "POST", path: "auth/reauthenticate", token: .current,
                json: ["password": "not the password"]),
            Step(
                name: "reauthenticate, no password", method: "POST", path: "auth/reauthenticate", token: .current,
                json: [:]),
            Step(
                name: "reauthenticate", method: "POST", path: "auth/reauthenticate", token: .current,
                json: ["password": "first good password"]),
            Step(
                name: "totp on", method: "POST", path: "account/authenticators/totp", token: .current, json: [:],
                factor: .totp(steps: 0)),
            Step(name: "totp, on", method: "GET", path: "account/authenticators/totp", token: .current),
            Step(name: "authenticators, both", method: "GET", path: "account/authenticators", token: .current),
            Step(
                name: "recovery codes, first view", method: "GET", path: "account/authenticators/recovery-codes",
                token: .current),
            Step(
                name: "recovery codes, second view", method: "GET", path: "account/authenticators/recovery-codes",
                token: .current),
            Step(
                name: "recovery codes made again", method: "POST", path: "account/authenticators/recovery-codes",
                token: .current),
            Step(name: "logout", method: "DELETE", path: "auth/session", token: .current),
            Step(
                name: "login, second factor pending", method: "POST", path: "auth/login",
                json: ["email": mfaEmail, "password": "first good password"]),
            Step(name: "session, second factor pending", method: "GET", path: "auth/session", token: .current),
            Step(
                name: "authenticators, second factor pending", method: "GET", path: "account/authenticators",
                token: .current),
            Step(
                name: "2fa, wrong code", method: "POST", path: "auth/2fa/authenticate", token: .current,
                json: ["code": "123456"]),
            Step(name: "2fa, no code", method: "POST", path: "auth/2fa/authenticate", token: .current, json: [:]),
            Step(
                name: "2fa, no token", method: "POST", path: "auth/2fa/authenticate", json: ["code": "123456"],
                difference: Self.noSecondFactorWaiting),
            Step(
                name: "2fa, recovery code", method: "POST", path: "auth/2fa/authenticate", token: .current,
                json: [:], factor: .recovery(2)),
            Step(name: "session, after the second factor", method: "GET", path: "auth/session", token: .current),
            Step(
                name: "2fa, signed in already", method: "POST", path: "auth/2fa/authenticate", token: .current,
                json: [:], difference: Self.noSecondFactorWaiting, factor: .recovery(3)),
            Step(
                name: "2fa reauthenticate, wrong code", method: "POST", path: "auth/2fa/reauthenticate",
                token: .current, json: ["code": "123456"]),
            Step(
                name: "2fa reauthenticate", method: "POST", path: "auth/2fa/reauthenticate", token: .current,
                json: [:], factor: .totp(steps: 1)),
            Step(
                name: "recovery codes, counted", method: "GET", path: "account/authenticators/recovery-codes",
                token: .current),
            Step(name: "totp off", method: "DELETE", path: "account/authenticators/totp", token: .current),
            Step(name: "authenticators, none again", method: "GET", path: "account/authenticators", token: .current),
            Step(
                name: "recovery codes without totp", method: "POST", path: "account/authenticators/recovery-codes",
                token: .current),
            Step(name: "logout again", method: "DELETE", path: "auth/session", token: .current),
            Step(
                name: "login, password alone again", method: "POST", path: "auth/login",
                json: ["email": mfaEmail, "password": "first good password"]),
        ]
    }

    /// The verification code or reset key last mailed, from a server's mail.
    static func secret(_ mailed: Mailed, in mail: String) -> String? {
        switch mailed {
        case .code(let sloppy):
            let codes = mail.matches(of: /\b[A-Z]{4}-[A-Z]{4}\b/).map { String($0.output) }
            guard let code = codes.last else { return nil }
            return sloppy ? " " + code.lowercased().replacingOccurrences(of: "-", with: "") : code
        case .resetKey:
            // Homeport's mail says `key: KEY`; allauth's links to `…/reset/KEY`.
            return mail.matches(of: /(?:key: |\/reset\/)([A-Za-z0-9_-]+)/).last.map { String($0.output.1) }
        }
    }

    static let providerToken = "auth/provider/token"

    /// The provider-token flow (allauth's socialaccount app with its OpenID Connect provider):
    /// the request's checks, a forged token, a new person, a token used twice, the links, a
    /// connection and a person linked elsewhere, and an address that has an account.
    static var providerSteps: [Step] {
        let login = { (name: String, minted: Minted, token: Token) in
            Step(
                name: name, method: "POST", path: providerToken, token: token,
                json: ["provider": "household", "process": "login"], idToken: minted)
        }
        let connect = { (name: String, minted: Minted) in
            Step(
                name: name, method: "POST", path: providerToken, token: .current,
                json: ["provider": "household", "process": "connect"], idToken: minted)
        }
        return [
            Step(name: "config with a provider", method: "GET", path: "config"),
            Step(name: "session, anonymous, with a provider", method: "GET", path: "auth/session"),
            Step(name: "provider token, empty body", method: "POST", path: providerToken, json: [:]),
            Step(
                name: "provider token, unknown process", method: "POST", path: providerToken,
                json: ["provider": "household", "process": "steal", "token": ["client_id": "homeport-app"]]),
            Step(
                name: "provider token, token not an object", method: "POST", path: providerToken,
                json: ["provider": "household", "process": "login", "token": "eyJ"]),
            Step(
                name: "provider token, no client_id", method: "POST", path: providerToken,
                json: ["provider": "household", "process": "login", "token": ["id_token": "eyJ"]]),
            Step(
                name: "provider token, no id_token", method: "POST", path: providerToken,
                json: ["provider": "household", "process": "login", "token": ["client_id": "homeport-app"]]),
            login(
                "provider token, forged",
                .fresh(subject: "ada-1", email: "ada@example.com", verified: true, key: "rogue"), .none),
            login(
                "provider token, a new person", .fresh(subject: "ada-1", email: "ada@example.com", verified: true),
                .none),
            Step(name: "session after a provider sign-in", method: "GET", path: "auth/session", token: .current),
            Step(name: "provider accounts", method: "GET", path: "account/providers", token: .current),
            Step(
                name: "unlink the only way in", method: "DELETE", path: "account/providers", token: .current,
                json: ["provider": "household", "account": "ada-1"]),
            Step(
                name: "unlink an unknown account", method: "DELETE", path: "account/providers", token: .current,
                json: ["provider": "household", "account": "nobody"]),
            Step(name: "logout after a provider sign-in", method: "DELETE", path: "auth/session", token: .current),
            login("provider token, used twice", .again, .none),
            login(
                "provider token, the same person again",
                .fresh(subject: "ada-1", email: "ada@example.com", verified: true), .none),
            Step(
                name: "signup for connecting", method: "POST", path: "auth/signup",
                json: ["email": "bob@example.com", "password": "a good long password"]),
            connect("connect a provider account", .fresh(subject: "bob-1", email: "bob@home.example", verified: true)),
            connect(
                "connect a person linked elsewhere", .fresh(subject: "ada-1", email: "ada@example.com", verified: true)),
            Step(name: "provider accounts after connecting", method: "GET", path: "account/providers", token: .current),
            Step(
                name: "unlink a connected account", method: "DELETE", path: "account/providers", token: .current,
                json: ["provider": "household", "account": "bob-1"]),
            Step(name: "logout after connecting", method: "DELETE", path: "auth/session", token: .current),
            login(
                "provider token, a taken address", .fresh(subject: "eve-1", email: "bob@example.com", verified: true),
                .none),
            Step(name: "provider signup form", method: "GET", path: "auth/provider/signup", token: .current),
            Step(
                name: "provider signup, taken address", method: "POST", path: "auth/provider/signup", token: .current,
                json: ["email": "bob@example.com"]),
            Step(
                name: "provider signup, another address", method: "POST", path: "auth/provider/signup",
                token: .current, json: ["email": "eve@example.com"]),
        ]
    }

    /// Runs `steps` against a server and returns, per step, the status and the envelope's shape.
    static func transcript(_ steps: [Step], port: Int, provider: OIDCStandIn? = nil, mail: () -> String) throws
        -> [(step: String, status: Int, shape: Set<String>)]
    {
        var lastIDToken = ""
        var current: String?
        var previous: String?
        var secret: [UInt8]?
        var recoveryCodes: [String] = []
        var result: [(String, Int, Set<String>)] = []
        // One authenticator per server: the same kind of key registered on each.
        let authenticator = try SoftAuthenticator()
        var lastOptions: [String: Any] = [:]
        var lastAssertion: [String: Any] = [:]
        var passkeyID: Int?
        // A TOTP step must not end in the middle of a run: the codes sent are the step's.
        if steps.contains(where: { $0.factor != nil }) {
            while Int(Date().timeIntervalSince1970) % 30 > 20 { usleep(200_000) }
        }
        for step in steps {
            if step.pause > 0 { usleep(UInt32(step.pause * 1_000_000)) }
            var headers: [(String, String)] = []
            let token: String? =
                switch step.token {
                case .none: nil
                case .current: current
                case .previous: previous
                case .bogus: "this-token-was-never-issued"
                case .empty: ""
                }
            if let token { headers.append(("X-Session-Token", token)) }
            if let header = step.header { headers.append(header) }
            var json = step.json
            if let mailed = step.mailed {
                let secret = try #require(Self.secret(mailed, in: mail()), "\(step.name): nothing mailed")
                if step.method == "GET" {
                    headers.append(
                        (step.path.contains("email") ? "X-Email-Verification-Key" : "X-Password-Reset-Key", secret))
                } else {
                    json?["key"] = secret
                }
            }
            switch step.factor {
            case .totp(let offset):
                let key = try #require(secret, "\(step.name): no secret offered yet")
                json?["code"] = OneTimeCode.code(
                    secret: key, step: OneTimeCode.step(at: Int64(Date().timeIntervalSince1970)) + offset)
            case .recovery(let index):
                json?["code"] = try #require(recoveryCodes.indices.contains(index) ? recoveryCodes[index] : nil)
            case nil: break
            }
            switch step.idToken {
            case .fresh(let subject, let email, let verified, let key):
                let standIn = try #require(provider, "\(step.name): no provider")
                lastIDToken = try standIn.mint(
                    standIn.claims(
                        subject: subject, audience: "homeport-app", now: Int64(Date().timeIntervalSince1970),
                        email: email, emailVerified: verified),
                    key: key)
                json?["token"] = ["client_id": "homeport-app", "id_token": lastIDToken]
            case .again: json?["token"] = ["client_id": "homeport-app", "id_token": lastIDToken]
            case nil: break
            }
            switch step.passkey {
            case .register: json?["credential"] = try authenticator.register(lastOptions, origin: passkeyOrigin)
            case .assert:
                lastAssertion = try authenticator.assert(lastOptions, origin: passkeyOrigin)
                json?["credential"] = lastAssertion
            case .again: json?["credential"] = lastAssertion
            case .garbage:
                // A user handle of nobody (allauth answers a 500 when there is no handle at all).
                json?["credential"] = [
                    "type": "public-key", "id": "AAAA", "rawId": "AAAA",
                    "response": [
                        "userHandle": "OTk5", "clientDataJSON": "e30", "authenticatorData": "AAAA", "signature": "AAAA",
                    ],
                ]
            case nil: break
            }
            if step.passkeyID {
                let id = try #require(passkeyID, "\(step.name): no passkey added yet")
                if json?["name"] != nil { json?["id"] = id } else { json?["authenticators"] = [id] }
            }
            var body: Data?
            if let raw = step.raw {
                headers.append(("Content-Type", raw.type))
                body = Data(raw.body.utf8)
            } else if let json {
                headers.append(("Content-Type", "application/json"))
                body = try JSONSerialization.data(withJSONObject: json)
            }
            let response = try RawHTTP.request(
                port: port, method: step.method, path: "/_allauth/app/v1/" + step.path, headers: headers, body: body)
            if let issued = response.sessionToken {
                previous = current
                current = issued
            }
            let object = try #require(
                try? JSONSerialization.jsonObject(with: response.body),
                "\(step.name): not JSON: \(String(decoding: response.body, as: UTF8.self))")
            if let offered = ((object as? [String: Any])?["meta"] as? [String: Any])?["secret"] as? String {
                secret = Base32.decode(offered)
            }
            let data = (object as? [String: Any])?["data"] as? [String: Any]
            if let shown = data?["unused_codes"] as? [String] {
                recoveryCodes = shown
            }
            if let options = (data?["creation_options"] ?? data?["request_options"]) as? [String: Any] {
                lastOptions = options
            }
            if data?["type"] as? String == "webauthn", let id = data?["id"] as? Int { passkeyID = id }
            result.append((step.name, response.status, shape(object).subtracting(deliberateDifferences)))
        }
        return result
    }

    /// Paths of an envelope, with the values that carry meaning (status, codes, params, flags, flow ids)
    /// and without the ones that cannot match (tokens, ids, timestamps, messages).
    static func shape(_ value: Any, _ path: String = "") -> Set<String> {
        var result: Set<String> = []
        if let object = value as? [String: Any] {
            for (key, member) in object {
                let here = path.isEmpty ? key : path + "." + key
                result.insert(here)
                result.formUnion(shape(member, here))
            }
        } else if let array = value as? [Any] {
            for element in array { result.formUnion(shape(element, path + "[]")) }
        } else {
            let meaningful = [
                "status", "errors[].code", "errors[].param", "data.flows[].id", "data.flows[].is_pending",
                "meta.is_authenticated", "meta.is_authenticating", "data.account.is_open_for_signup",
                "data.account.login_methods[]", "data.account.email_verification_by_code_enabled",
                "data.methods[].method", "data.methods[].type", "data.methods[].reauthenticated",
                "data.flows[].types[]", "data[].type", "data.type", "data.total_code_count", "data.unused_code_count",
                "data[].unused_code_count", "data.user.has_usable_password", "data[].verified", "data[].primary",
                "data.is_passwordless", "data[].is_passwordless", "meta.recovery_codes_generated",
                "data.creation_options.publicKey.authenticatorSelection.residentKey",
                "data.creation_options.publicKey.authenticatorSelection.requireResidentKey",
                "data.creation_options.publicKey.authenticatorSelection.userVerification",
                "data.request_options.publicKey.userVerification",
            ]
            if meaningful.contains(path) { result.insert("\(path)=\(value is NSNull ? "null" : "\(value)")") }
        }
        return result
    }

    /// Runs `steps` on both servers and compares every answer; a step with a ``Difference`` must
    /// differ exactly as documented.
    @discardableResult
    static func compare(
        _ steps: [Step], homeportArguments: [String], verifyByCode: Bool, provider: OIDCStandIn? = nil,
        webAuthn: Bool = false
    ) throws -> [String: Int] {
        let allauth = try AllauthPeer(verifyByCode: verifyByCode, webAuthn: webAuthn, oidcIssuer: provider?.issuer)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let outbox = directory.file("outbox")
        if let provider {
            let added = try ServerProcess.run([
                "oidc", "add", "household", "--issuer", provider.issuer, "--client-id", "homeport-web",
                "--app-client-id", "homeport-app", "--name", "Household household", "--database",
                "sqlite:" + directory.file("h.sqlite"),
            ])
            #expect(added.status == 0, "\(added.error)")
        }
        let homeport = try ServerProcess(
            serve: [
                "--database", "sqlite:" + directory.file("h.sqlite"), "--signup", "open", "--password-iterations",
                "1000", "--outbox", outbox,
            ] + homeportArguments)
        let reference = try transcript(steps, port: allauth.port, provider: provider) { allauth.mail }
        let ours = try transcript(steps, port: homeport.port, provider: provider) { mailText(in: outbox) }
        #expect(reference.count == steps.count && ours.count == steps.count)
        let documented = try String(contentsOfFile: repositoryFile("docs/allauth-differences.md"), encoding: .utf8)
        for (step, (theirs, mine)) in zip(steps, zip(reference, ours)) {
            if let difference = step.difference, let member = difference.member {
                let others = { (shape: Set<String>) in shape.filter { !$0.hasPrefix(member.path + "=") } }
                #expect(mine.status == difference.homeportStatus && theirs.status == difference.homeportStatus)
                #expect(others(mine.shape) == others(theirs.shape), "\(mine.step)")
                #expect(mine.shape.contains(member.path + "=" + member.homeport), "\(mine.step): \(mine.shape)")
                #expect(!theirs.shape.contains(member.path + "=" + member.homeport), "\(mine.step): allauth alike now")
                #expect(documented.contains(difference.documented), "\(mine.step): not in allauth-differences.md")
                continue
            }
            if let difference = step.difference {
                #expect(mine.status == difference.homeportStatus, "\(mine.step): status \(mine.status)")
                #expect(theirs.status != difference.homeportStatus, "\(mine.step): allauth answers alike now")
                #expect(documented.contains(difference.documented), "\(mine.step): not in allauth-differences.md")
                continue
            }
            #expect(mine.status == theirs.status, "\(mine.step): status \(mine.status), allauth \(theirs.status)")
            #expect(
                mine.shape == theirs.shape,
                "\(mine.step): only homeport \(mine.shape.subtracting(theirs.shape).sorted()), only allauth \(theirs.shape.subtracting(mine.shape).sorted())"
            )
        }
        #expect(homeport.stop() == 0)
        return Dictionary(ours.map { ($0.step, $0.status) }) { first, _ in first }
    }

    @Test("every app-client operation answers alike on django-allauth and on homeport-server")
    func sameAnswers() throws {
        try Self.compare(Self.accountSteps, homeportArguments: [], verifyByCode: false)
    }

    @Test("two-factor sign-in answers alike on django-allauth (its MFA app) and on homeport-server")
    func sameTwoFactorAnswers() throws {
        try Self.compare(Self.mfaSteps, homeportArguments: [], verifyByCode: false)
    }

    @Test(
        "sign-in with an identity provider's ID token answers alike on django-allauth (its openid_connect provider) and on homeport-server"
    )
    func sameProviderAnswers() throws {
        let statuses = try Self.compare(
            Self.providerSteps, homeportArguments: [], verifyByCode: false, provider: try OIDCStandIn())
        // Alike, and alike for the right reasons: the flow went where it should on both.
        #expect(statuses["provider token, a new person"] == 200)
        #expect(statuses["provider token, forged"] == 400 && statuses["provider token, used twice"] == 400)
        #expect(statuses["provider token, the same person again"] == 200)
        #expect(statuses["connect a provider account"] == 200)
        #expect(statuses["provider token, a taken address"] == 401)
        #expect(statuses["provider signup, another address"] == 200)
    }

    @Test(
        "passkeys answer alike on django-allauth (its WebAuthn, passkey sign-in on) and on homeport-server: added, listed, renamed, signed in with, removed"
    )
    func samePasskeyAnswers() throws {
        let statuses = try Self.compare(
            Self.passkeySteps, homeportArguments: ["--public-url", Self.passkeyOrigin], verifyByCode: false,
            webAuthn: true)
        #expect(statuses["add a passkey"] == 200 && statuses["passkey login"] == 200)
        #expect(statuses["passkey login, garbage"] == 400 && statuses["passkey login, replayed"] == 400)
    }

    @Test(
        "a sign-up with a passkey alone answers alike on django-allauth (passkey sign-up on, verification by code) and on homeport-server"
    )
    func samePasskeySignupAnswers() throws {
        let statuses = try Self.compare(
            Self.passkeySignupSteps,
            homeportArguments: ["--public-url", Self.passkeyOrigin, "--email-verification", "code"],
            verifyByCode: true, webAuthn: true)
        #expect(statuses["passkey signup"] == 401 && statuses["signup options before the code"] == 409)
        #expect(statuses["signup passkey, garbage"] == 400 && statuses["signup passkey"] == 200)
    }

    @Test("verification by code answers alike on django-allauth and on homeport-server")
    func sameVerificationAnswers() throws {
        try Self.compare(
            Self.verificationSteps, homeportArguments: ["--email-verification", "code"], verifyByCode: true)
    }
}
