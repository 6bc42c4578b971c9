import Foundation
import HomeportWire

/// The API prefix reads the session token from the header only: a cookie session is refused.
extension ConformanceRun {
    /// Runs ``ConformanceCheck/apiHeaderOnly``.
    func apiHeaderOnly() async throws -> ConformanceOutcome {
        guard let account else { return Self.noAccount }
        guard let token else { return Self.noSession }
        if olderServer { return Self.noPrefix }
        // The app's own token as the usual session cookies: on a Django server it is the session key.
        let asCookie = try await http.get(HomeportPath.appInfo, headers: ["Cookie": Conformance.sessionCookies(token)])
        if asCookie.status != 401 {
            return .fail(
                "the app session's token sent as a session cookie, without the header, gets \(asCookie.summary)")
        }
        let web: ConformanceWebSession
        do {
            web = try await webSignIn(account)
        } catch let failure as ProbeFailure {
            return .pass("a session cookie without the header gets 401 (\(failure.description))")
        }
        webSessions.append(web)
        let answer = try await http.get(HomeportPath.appInfo, headers: ["Cookie": web.cookieHeader])
        guard answer.status == 401 else {
            return .fail("a browser session signed in at /account/login gets \(answer.summary) from app-info, not 401")
        }
        return .pass("401 to a browser session from /account/login and to the app's token sent as a session cookie")
    }

    /// Signs in at Homeport's web door (`/account/login`: an HTML form with a CSRF token and a
    /// honeypot) and checks that the session it gives opens `/account`. Throws, saying why, when
    /// the server has no such door or it gave no working session.
    private func webSignIn(_ account: ConformanceAccount) async throws -> ConformanceWebSession {
        let form = try await http.get("/account/login")
        guard form.status == 200, form.isHTML, let csrf = Self.csrfField(form.body),
            let seed = form.cookies.first(where: { $0.name.contains("csrf") })
        else {
            throw ProbeFailure("no web door at /account/login: checked with the app's token as a session cookie")
        }
        let answer = try await http.send(
            "POST", "/account/login",
            headers: [
                "Content-Type": "application/x-www-form-urlencoded", "Cookie": "\(seed.name)=\(seed.value)",
                "Origin": http.origin,
            ],
            body: Conformance.formBody([
                ("csrf_token", csrf), ("email", account.email), ("password", account.password), ("website", ""),
            ]))
        let set = answer.cookies.filter { !$0.value.isEmpty }
        set.forEach { keep($0.value) }
        guard (300..<400).contains(answer.status), set.contains(where: { $0.name.contains("session") }) else {
            throw ProbeFailure(
                "the web door at /account/login gave no session (\(answer.summary)): checked with the app's token "
                    + "as a session cookie only")
        }
        let cookieHeader = set.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
        let home = try await http.get("/account", headers: ["Cookie": cookieHeader])
        guard home.status == 200 else {
            throw ProbeFailure(
                "the web door's session did not open /account (\(home.summary)): checked with the app's token as a "
                    + "session cookie only")
        }
        return ConformanceWebSession(cookieHeader: cookieHeader, csrfToken: Self.csrfField(home.body) ?? "")
    }

    /// Signs a browser session out at the web door (best effort).
    func webSignOut(_ session: ConformanceWebSession) async {
        _ = try? await http.send(
            "POST", "/account/logout",
            headers: [
                "Content-Type": "application/x-www-form-urlencoded", "Cookie": session.cookieHeader,
                "Origin": http.origin,
            ],
            body: Conformance.formBody([("csrf_token", session.csrfToken), ("website", "")]))
    }

    /// The value of the form's hidden `csrf_token` field.
    static func csrfField(_ page: Data) -> String? {
        let html = String(decoding: page.prefix(65536), as: UTF8.self)
        guard let expression = try? NSRegularExpression(pattern: #"name="csrf_token"\s+value="([^"]*)""#),
            let match = expression.firstMatch(in: html, range: NSRange(location: 0, length: (html as NSString).length))
        else { return nil }
        return (html as NSString).substring(with: match.range(at: 1))
    }
}

/// A browser session of Homeport's web door, signed in by the header-only check.
struct ConformanceWebSession: Sendable {
    /// The `Cookie` header that carries it.
    let cookieHeader: String
    /// The CSRF token of its forms (to sign out).
    let csrfToken: String
}
