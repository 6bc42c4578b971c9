import Foundation
import HomeportClient
import HomeportWire

/// The checks that sign the test account in: login, the session, app-info, a second login, a
/// password change, logout and a wrong password.
extension ConformanceRun {
    /// `/_allauth/app/v1/auth/login`.
    static let loginPath = AllauthAppPath.path(AllauthAppPath.login)

    /// `POST auth/login` with the test account's address and `password`.
    func signIn(_ account: ConformanceAccount, password: String, headers: [String: String] = [:]) async throws
        -> ConformanceAnswer
    {
        try await http.post(Self.loginPath, json: ["email": account.email, "password": password], headers: headers)
    }

    /// The `meta.session_token` of an answer, kept as a secret.
    func issuedToken(_ answer: ConformanceAnswer) -> String? {
        guard let token = answer.json?["meta"]?["session_token"]?.string, !token.isEmpty else { return nil }
        return keep(token)
    }

    /// Runs ``ConformanceCheck/login``.
    func login() async throws -> ConformanceOutcome {
        guard let account else { return Self.noAccount }
        let answer = try await signIn(account, password: account.password)
        if answer.status == 401, let flows = answer.json?["data"]?["flows"]?.array {
            let pending = flows.compactMap { $0["id"]?.string }.filter { $0 != "login" && $0 != "signup" }
                .map { ServerText.clean($0, limit: 40) }
            let why = pending.isEmpty ? "" : " (pending: \(pending.joined(separator: ", ")))"
            return .fail(
                "401: not signed in\(why); the test account must exist, be approved and have a verified address")
        }
        token = issuedToken(answer)
        let json = try answer.envelope(expecting: 200)
        var problems: [String] = []
        if token == nil { problems.append("200 without meta.session_token") }
        if json["meta"]?["is_authenticated"] != .bool(true) { problems.append("meta.is_authenticated is not true") }
        if json["data"]?["user"]?.object == nil { problems.append("no data.user") }
        return .judge(
            problems, passing: "200 with a session token (\(token?.count ?? 0) characters), is_authenticated true")
    }

    /// Runs ``ConformanceCheck/sessionStatus``.
    func sessionStatus() async throws -> ConformanceOutcome {
        guard let account else { return Self.noAccount }
        guard let token else { return Self.noSession }
        let json = try await http.get(Self.sessionPath, token: token).envelope(expecting: 200)
        var problems: [String] = []
        if json["meta"]?["is_authenticated"] != .bool(true) { problems.append("meta.is_authenticated is not true") }
        let email = json["data"]?["user"]?["email"]?.string
        if email?.lowercased() != account.email.lowercased() {
            problems.append("data.user.email is \(json["data"]?["user"]?["email"]?.shown ?? "missing")")
        }
        return .judge(problems, passing: "200 with the account's data.user")
    }

    /// Runs ``ConformanceCheck/appInfoSignedIn``.
    func appInfoSignedIn() async throws -> ConformanceOutcome {
        guard account != nil else { return Self.noAccount }
        guard let token else { return Self.noSession }
        if olderServer { return Self.noPrefix }
        let json = try await http.get(HomeportPath.appInfo, token: token).object(expecting: 200)
        var problems: [String] = []
        let features = json["features"]?.array?.compactMap(\.string)
        if features == nil {
            problems.append("features is \(json["features"]?.shown ?? "missing"), not an array of strings")
        } else if features?.contains(Feature.serverConnectionIdentity) != true {
            problems.append("features lack \(Feature.serverConnectionIdentity)")
        }
        if json["protocolVersion"]?.integer != 1 {
            problems.append("protocolVersion is \(json["protocolVersion"]?.shown ?? "missing"), not 1")
        }
        if json["version"]?.string == nil { problems.append("version is \(json["version"]?.shown ?? "missing")") }
        if let identity, json["product"]?.string != identity.product {
            problems.append("product is \(json["product"]?.shown ?? "missing"), the identity route says another")
        }
        let id = json["instanceId"]?.string
        switch (id, identity?.instanceID) {
        case (let id?, let expected?) where id != expected:
            problems.append("instanceId \(ServerText.clean(id, limit: 40)) is not the identity route's")
        case (nil, _?): problems.append("no instanceId, although the identity route answers one")
        case (let id?, nil) where InstanceID(id) == nil || id != id.lowercased():
            problems.append("instanceId \(ServerText.clean(id, limit: 40)) is not a lowercase UUID")
        default: break
        }
        let shown = (features ?? []).map { ServerText.clean($0, limit: 40) }.joined(separator: ", ")
        return .judge(
            problems,
            passing: "200 with features [\(shown)] and "
                + (id == nil ? "no instanceId (the identity cannot be read now)" : "the identity route's instanceId"))
    }

    /// Runs ``ConformanceCheck/loginWhileSignedIn``.
    func loginWhileSignedIn() async throws -> ConformanceOutcome {
        guard let account else { return Self.noAccount }
        guard let token else { return Self.noSession }
        let answer = try await signIn(
            account, password: account.password, headers: [HomeportHeader.sessionToken: token])
        if let extra = issuedToken(answer) {
            otherTokens.append(extra)
            return .fail("\(answer.status) with a new session token: it signed in again instead of refusing (409)")
        }
        _ = try answer.envelope(expecting: 409)
        return .pass("409")
    }

    /// Runs ``ConformanceCheck/secondLogin``.
    func secondLogin() async throws -> ConformanceOutcome {
        guard let account else { return Self.noAccount }
        guard let first = token else { return Self.noSession }
        let answer = try await signIn(account, password: account.password)
        let second = issuedToken(answer)
        if let second { otherTokens.append(second) }
        _ = try answer.envelope(expecting: 200)
        guard let second else { return .fail("200 without meta.session_token") }
        guard second != first else { return .fail("the same token as the first login") }
        var problems: [String] = []
        for (label, token) in [("the first token", first), ("the second token", second)] {
            let answer = try await http.get(Self.sessionPath, token: token)
            if answer.status != 200 { problems.append("auth/session answers \(answer.summary) to \(label)") }
        }
        return .judge(problems, passing: "200 with a different token; auth/session answers 200 to both")
    }

    /// Runs ``ConformanceCheck/passwordChange``.
    func passwordChange() async throws -> ConformanceOutcome {
        guard let account else { return Self.noAccount }
        guard let temporary = account.temporaryPassword else {
            return .skipped("needs --change-password (the password is changed to a second one and back)")
        }
        guard let old = token else { return Self.noSession }
        let change: (token: String?, problems: [String])
        do {
            change = try await changePassword(from: account.password, to: temporary, token: old)
        } catch let failure as ProbeFailure where failure.unanswered {
            return .fail(
                "\(failure.description); if the server acted on it, the account's password is now the second line "
                    + "given on standard input")
        }
        var problems = change.problems
        let renewed = change.token.flatMap { $0 == old ? nil : $0 }
        if let renewed {
            token = renewed
            let oldAnswer = try await http.get(Self.sessionPath, token: old)
            if oldAnswer.status != 410 { problems.append("the old token gets \(oldAnswer.summary), not 410") }
            if let other = otherTokens.last {
                let answer = try await http.get(Self.sessionPath, token: other)
                if answer.status == 200 { problems.append("the second login's session still works") }
            }
            let newAnswer = try await http.get(Self.sessionPath, token: renewed)
            if newAnswer.status != 200 { problems.append("the new token gets \(newAnswer.summary)") }
            if !olderServer {
                let oldAPI = try await http.get(HomeportPath.appInfo, token: old)
                if oldAPI.status != 401 { problems.append("app-info answers \(oldAPI.summary) to the old token") }
                let newAPI = try await http.get(HomeportPath.appInfo, token: renewed)
                if newAPI.status != 200 { problems.append("app-info answers \(newAPI.summary) to the new token") }
            }
        }
        do {
            let back = try await changePassword(from: temporary, to: account.password, token: renewed ?? old)
            problems += back.problems.map { "changing back: " + $0 }
            token = back.token ?? token
        } catch {
            let state = (error as? ProbeFailure)?.unanswered == true ? "may still be" : "is now"
            problems.append(
                "changing the password back failed (\(error)): the account's password \(state) the second line "
                    + "given on standard input")
        }
        return .judge(
            problems,
            passing: "200 with a new token that works; the old one gets 410, the second login's session ended; "
                + "changed back")
    }

    /// Changes the password with `token`. Throws when the server did not change it (no 200);
    /// otherwise returns the token the answer carries and what was wrong with the answer.
    private func changePassword(from current: String, to new: String, token: String) async throws
        -> (token: String?, problems: [String])
    {
        let answer = try await http.post(
            AllauthAppPath.path(AllauthAppPath.passwordChange),
            json: ["current_password": current, "new_password": new],
            headers: [HomeportHeader.sessionToken: token])
        guard answer.status == 200 else {
            _ = try answer.envelope(expecting: 200)
            throw ProbeFailure(answer.summary)
        }
        var problems: [String] = []
        do {
            let json = try answer.envelope(expecting: 200)
            if json["meta"]?["is_authenticated"] != .bool(true) { problems.append("meta.is_authenticated is not true") }
        } catch {
            problems.append("\(error)")
        }
        let renewed = issuedToken(answer)
        if renewed == nil {
            problems.append("200 without a new meta.session_token")
        } else if renewed == token {
            problems.append("200 with the same token: it must rotate")
        }
        return (renewed, problems)
    }

    /// Runs ``ConformanceCheck/logout``.
    func logout() async throws -> ConformanceOutcome {
        guard account != nil else { return Self.noAccount }
        guard let token else { return Self.noSession }
        let answer = try await http.send("DELETE", Self.sessionPath, headers: [HomeportHeader.sessionToken: token])
        let signedOut = try notSignedIn(answer, passing: "401")
        guard signedOut.result == .pass else { return signedOut }
        self.token = nil
        var problems: [String] = []
        let door = try await http.get(Self.sessionPath, token: token)
        if door.status != 410 { problems.append("the token then gets \(door.summary) on auth/session, not 410") }
        if !olderServer {
            let api = try await http.get(HomeportPath.appInfo, token: token)
            if api.status != 401 { problems.append("the token then gets \(api.summary) on app-info, not 401") }
        }
        return .judge(
            problems,
            passing: "401 envelope; then the token gets 410 on the app door"
                + (olderServer ? "" : " and 401 on the API prefix"))
    }

    /// Runs ``ConformanceCheck/wrongPassword``.
    func wrongPassword() async throws -> ConformanceOutcome {
        guard let account else { return Self.noAccount }
        let answer = try await signIn(account, password: "wrong-" + Conformance.randomToken())
        if let extra = issuedToken(answer) {
            otherTokens.append(extra)
            return .fail("\(answer.status) with a session token for a wrong password")
        }
        let json = try answer.envelope(expecting: 400)
        let codes = (json["errors"]?.array ?? []).compactMap { $0["code"]?.string }
        if codes.contains(AuthErrorCode.emailPasswordMismatch) { return .pass("400 email_password_mismatch, no token") }
        if codes.contains(AuthErrorCode.tooManyLoginAttempts) {
            return .fail("400 too_many_login_attempts: the account's failed-login budget is spent; try again later")
        }
        let shown = codes.map { ServerText.clean($0, limit: 40) }.joined(separator: ", ")
        return .fail("400 with \(shown.isEmpty ? "no error code" : shown), not email_password_mismatch")
    }
}
