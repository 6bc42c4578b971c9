/// The web door's cookie names and attributes.
///
/// When the public address is HTTPS the names carry the `__Host-` prefix, so a browser accepts
/// them only with `Secure`, `Path=/` and no `Domain`: a sibling subdomain or a plain-HTTP page
/// cannot plant its own session or CSRF seed.
struct WebCookies: Sendable {
    /// Whether the cookies are `Secure` and `__Host-` named.
    let secure: Bool
    /// The session cookie's lifetime, in seconds.
    let sessionLifetime: Int64

    /// The session cookie's name.
    var session: String { secure ? "__Host-homeport_session" : "homeport_session" }
    /// The CSRF seed cookie's name.
    var csrf: String { secure ? "__Host-homeport_csrf" : "homeport_csrf" }
    /// The name of the cookie that remembers a handoff while its person signs in.
    var handoff: String { secure ? "__Host-homeport_handoff" : "homeport_handoff" }
    /// The name of the cookie that binds a sign-in at a provider's pages to this browser.
    var providerFlow: String { secure ? "__Host-homeport_oidc" : "homeport_oidc" }
    /// The name of the cookie that binds a passkey sign-in's challenge to this browser.
    var passkeyCeremony: String { secure ? "__Host-homeport_webauthn" : "homeport_webauthn" }

    /// A `Set-Cookie` value: `HttpOnly`, `SameSite=Lax`, `Path=/`, and `Secure` on HTTPS.
    /// Without `maxAge` the cookie lasts as long as the browser session.
    func setting(_ name: String, _ value: String, maxAge: Int64?) -> String {
        var text = "\(name)=\(value); Path=/; HttpOnly; SameSite=Lax"
        if let maxAge { text += "; Max-Age=\(maxAge)" }
        if secure { text += "; Secure" }
        return text
    }

    /// Sets the session cookie.
    func settingSession(_ token: String) -> String { setting(session, token, maxAge: sessionLifetime) }
    /// Sets the session cookie to a pre-login session (one waiting for a verification code),
    /// which lives a day.
    func settingPreLoginSession(_ token: String) -> String {
        setting(session, token, maxAge: AccountService.preLoginLifetime)
    }
    /// Clears the session cookie.
    var clearingSession: String { setting(session, "", maxAge: 0) }
    /// Sets a CSRF seed.
    func settingCSRF(_ seed: String) -> String { setting(csrf, seed, maxAge: nil) }
}
