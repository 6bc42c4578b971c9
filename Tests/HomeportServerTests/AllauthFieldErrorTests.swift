import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

/// What an app-door answer says about its fields: the status and each error's code and param.
private func errors(port: Int, _ path: String, body: String?, token: String? = nil) throws -> (Int, [String]) {
    var headers = [("Content-Type", "application/json")]
    if let token { headers.append(("X-Session-Token", token)) }
    let response = try RawHTTP.request(
        port: port, method: "POST", path: AllauthAppPath.base + "/" + path, headers: headers,
        body: body.map { Data($0.utf8) } ?? Data())
    let list = (response.jsonObject?["errors"] as? [[String: Any]] ?? []).map {
        "\($0["code"] as? String ?? "?")/\($0["param"] as? String ?? "-")"
    }
    return (response.status, list)
}

@Suite("Field errors as django-allauth reports them, side by side with a stock peer", .tags(.process, .interop))
struct AllauthFieldErrorTests {
    @Test("every field's error at once, an empty body read as {}, and validation before 409")
    func fieldErrors() throws {
        let allauth = try AllauthPeer()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let homeport = try ServerProcess(serve: [
            "--database", "sqlite:" + directory.file("h.sqlite"), "--signup", "open", "--password-iterations", "1000",
            "--outbox", directory.file("outbox"),
        ])
        let cases: [(String, String?)] = [
            (AllauthAppPath.login, "{}"), (AllauthAppPath.login, ""), (AllauthAppPath.login, #"{"email":"bad"}"#),
            (AllauthAppPath.login, #"{"password":"correct horse battery"}"#), (AllauthAppPath.signup, "{}"),
            (AllauthAppPath.signup, #"{"email":"bad","password":"x"}"#), (AllauthAppPath.passwordResetRequest, "{}"),
            (AllauthAppPath.passwordResetRequest, ""), (AllauthAppPath.passwordReset, #"{"key":"x"}"#),
            (AllauthAppPath.passwordReset, "{}"),
        ]
        for (path, body) in cases {
            let theirs = try errors(port: allauth.port, path, body: body)
            let mine = try errors(port: homeport.port, path, body: body)
            #expect(mine.0 == theirs.0, "\(path) \(body ?? "nil"): \(mine.0), allauth \(theirs.0)")
            #expect(mine.1 == theirs.1, "\(path) \(body ?? "nil"): \(mine.1), allauth \(theirs.1)")
        }

        // An empty X-Session-Token (an app that always sends the header) is no token at all.
        for port in [allauth.port, homeport.port] {
            let signup = try errors(
                port: port, AllauthAppPath.signup,
                body: #"{"email":"empty@example.com","password":"correct horse battery"}"#,
                token: "")
            #expect(signup.0 == 200 && signup.1.isEmpty, "port \(port): \(signup)")
        }

        // With a live token the form is validated first; a valid one is then refused with 409.
        let credentials = #"{"email":"ada@example.com","password":"correct horse battery"}"#
        for port in [allauth.port, homeport.port] {
            let signup = try RawHTTP.request(
                port: port, method: "POST", path: AllauthAppPath.base + "/" + AllauthAppPath.signup,
                headers: [("Content-Type", "application/json")], body: Data(credentials.utf8))
            let token = try #require(signup.sessionToken, "port \(port)")
            let invalid = try errors(port: port, AllauthAppPath.login, body: "{}", token: token)
            #expect(
                invalid.0 == 400 && invalid.1 == ["required/email", "required/password"], "port \(port): \(invalid)")
            #expect(try errors(port: port, AllauthAppPath.login, body: credentials, token: token).0 == 409)
        }
        // The failed-login lockout (5 an account in 5 minutes on both) is a form error on both.
        let wrong = #"{"email":"lock@example.com","password":"not the password"}"#
        for port in [allauth.port, homeport.port] {
            _ = try errors(
                port: port, AllauthAppPath.signup,
                body: #"{"email":"lock@example.com","password":"correct horse battery"}"#)
        }
        for attempt in 1...7 {
            let theirs = try errors(port: allauth.port, AllauthAppPath.login, body: wrong)
            let mine = try errors(port: homeport.port, AllauthAppPath.login, body: wrong)
            #expect(mine.0 == theirs.0 && mine.1 == theirs.1, "attempt \(attempt): \(mine), allauth \(theirs)")
        }
        #expect(try errors(port: homeport.port, AllauthAppPath.login, body: wrong).1 == ["too_many_login_attempts/-"])
        #expect(homeport.stop() == 0)
    }
}
