import Foundation
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

#if canImport(Glibc)
    import Glibc
#endif

@Suite(
    "Forward auth: a reverse proxy asks who a request is, and the one session reader answers",
    .tags(.process, .postgres))
struct ForwardAuthTests {
    private func forward(_ server: AccountsHarness, _ headers: [(String, String)]) throws -> RawResponse {
        try server.app("GET", HomeportPath.authForward, headers: headers)
    }

    @Test(
        "a signed-in token gets 200 with the account in X-Homeport-* and no token anywhere; no-store",
        arguments: Backend.allCases)
    func signedIn(backend: Backend) throws {
        try withAccounts(backend) { server in
            let token = try server.signIn("ada@example.com")
            let answer = try forward(server, [(HomeportHeader.sessionToken, token)])
            #expect(answer.status == 200)
            let account = try #require(try server.application.accounts.accounts().first)
            #expect(answer.header(HomeportHeader.accountID) == String(account.id))
            #expect(answer.header(HomeportHeader.accountEmail) == "ada@example.com")
            let handle = try #require(answer.header(HomeportHeader.sessionHandle))
            #expect(handle.count == 32 && !token.contains(handle))
            #expect(answer.header(HomeportHeader.accountEmailVerified) == "false")
            let body = try JSONDecoder().decode(ForwardAuthAnswer.self, from: answer.body)
            #expect(
                body
                    == ForwardAuthAnswer(
                        accountId: account.id, email: "ada@example.com", session: handle, emailVerified: false,
                        groups: []))
            // Written by hand for speed: the same bytes as every other answer's encoder.
            #expect(answer.body == (try HTTPResponse.encode(body)))
            #expect(answer.header("Cache-Control") == "no-store")
            #expect(!answer.text.contains(token) && !answer.headers.contains { $0.1.contains(token) })
            // HEAD (what the documented nginx site asks): the same fields, no body.
            let fd = try RawHTTP.connect(port: server.port)
            defer { close(fd) }
            RawHTTP.send(
                fd,
                "HEAD \(HomeportPath.authForward) HTTP/1.1\r\nHost: x\r\n\(HomeportHeader.sessionToken): \(token)\r\n"
                    + "Connection: close\r\n\r\n")
            let head = String(decoding: try RawHTTP.readToEnd(fd), as: UTF8.self)
            #expect(head.hasPrefix("HTTP/1.1 200"))
            #expect(head.contains("\(HomeportHeader.sessionHandle): \(handle)\r\n"))
            #expect(head.hasSuffix("\r\n\r\n"), "no body")
            // A proxy that names the original request (Caddy's, Traefik's X-Forwarded-Uri): the same
            // fields, no body, so that its HTTP client keeps the connection; then the body again.
            let asked = try forward(
                server, [(HomeportHeader.sessionToken, token), ("X-Forwarded-Uri", "/api/v1/journal")])
            #expect(asked.status == 200 && asked.body.isEmpty, "\(asked.text)")
            #expect(asked.header(HomeportHeader.sessionHandle) == handle)
            #expect(asked.header(HomeportHeader.accountEmail) == "ada@example.com")
            #expect(asked.header("Content-Length") == "0" && asked.header("Cache-Control") == "no-store")
            #expect(try forward(server, [(HomeportHeader.sessionToken, token)]).body == answer.body)
            // The same session, the same handle; another session, another one.
            #expect(
                try forward(server, [(HomeportHeader.sessionToken, token)]).header(HomeportHeader.sessionHandle)
                    == handle)
            let other = try server.app(
                "POST", "auth/login", json: ["email": "ada@example.com", "password": "correct horse battery"])
            let otherToken = try #require(other.sessionToken)
            #expect(
                try forward(server, [(HomeportHeader.sessionToken, otherToken)]).header(HomeportHeader.sessionHandle)
                    != handle)
        }
    }

    @Test(
        "X-Homeport-Account-Email-Verified says whether the address is verified, and changes when it is, within the session cache's window",
        arguments: Backend.allCases)
    func emailVerified(backend: Backend) throws {
        try withAccounts(backend) { server in
            let token = try server.signIn("ada@example.com")
            let before = try forward(server, [(HomeportHeader.sessionToken, token)])
            #expect(before.header(HomeportHeader.accountEmailVerified) == "false")
            #expect(try server.application.accounts.emailVerification.markEmailVerified(email: "ada@example.com"))
            var after = try forward(server, [(HomeportHeader.sessionToken, token)])
            try eventually(every: .milliseconds(50)) {
                after = try forward(server, [(HomeportHeader.sessionToken, token)])
                return after.header(HomeportHeader.accountEmailVerified) == "true"
            }
            #expect(after.header(HomeportHeader.accountEmailVerified) == "true")
            let body = try JSONDecoder().decode(ForwardAuthAnswer.self, from: after.body)
            #expect(body.emailVerified == true)
            #expect(after.body == (try HTTPResponse.encode(body)), "the hand-written body is the encoder's")
            // A client's own claim never passes: the answer is Homeport's, whatever was sent.
            let forged = try forward(
                server, [(HomeportHeader.sessionToken, token), (HomeportHeader.accountEmailVerified, "false")])
            #expect(forged.header(HomeportHeader.accountEmailVerified) == "true")
        }
    }

    @Test(
        "each session gets its own prepared answer: four accounts asking at once, many times, on kept connections",
        arguments: Backend.allCases)
    func preparedAnswersStayApart(backend: Backend) throws {
        try withAccounts(backend) { server in
            let emails = (1...4).map { "user\($0)@example.com" }
            let callers = try emails.map { email in
                let token = try server.signIn(email)
                return (email, token, try forward(server, [(HomeportHeader.sessionToken, token)]))
            }
            #expect(Set(callers.map { $0.2.header(HomeportHeader.sessionHandle) }).count == 4)
            let start = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            let wrong = LockedBox<[String]>([])
            for (email, token, first) in callers {
                done.enter()
                Thread.detachNewThread {
                    defer { done.leave() }
                    guard let fd = try? RawHTTP.connect(port: server.port) else {
                        wrong.mutate { $0.append("\(email): no connection") }
                        return
                    }
                    defer { close(fd) }
                    start.wait()
                    for _ in 0..<50 {
                        RawHTTP.send(
                            fd,
                            "GET \(HomeportPath.authForward) HTTP/1.1\r\nHost: x\r\n"
                                + "\(HomeportHeader.sessionToken): \(token)\r\n\r\n")
                        guard let answer = try? RawHTTP.readResponse(fd), answer.status == 200,
                            answer.header(HomeportHeader.accountEmail) == email,
                            answer.header(HomeportHeader.sessionHandle) == first.header(HomeportHeader.sessionHandle),
                            answer.body == first.body
                        else {
                            wrong.mutate { $0.append(email) }
                            return
                        }
                    }
                }
            }
            for _ in callers { start.signal() }
            #expect(done.wait(timeout: .now() + 60) == .success)
            #expect(wrong.value.isEmpty, "answers that were not the caller's own: \(wrong.value)")
        }
    }

    @Test("a prepared answer follows the account: a new address gets a new answer; a full store starts over")
    func preparedAnswersFollowTheAccount() throws {
        let answers = ForwardAnswers(capacity: 2)
        let session = { (key: String) in
            Session(keyHash: key, userID: 7, kind: .app, expiresAt: Int64.max, authenticatedAt: nil, standing: nil)
        }
        var account = Account(
            id: 7, email: "ada@example.com", passwordHash: "", approval: .approved, createdAt: Date())
        let first = try answers.response(session: session("a"), account: account)
        #expect(first.headers[HomeportHeader.accountEmail] == "ada@example.com")
        account.email = "ada@elsewhere.example"
        let moved = try answers.response(session: session("a"), account: account)
        #expect(moved.headers[HomeportHeader.accountEmail] == "ada@elsewhere.example")
        #expect(String(decoding: moved.body, as: UTF8.self).contains(#""email":"ada@elsewhere.example""#))
        #expect(moved.headers[HomeportHeader.sessionHandle] == first.headers[HomeportHeader.sessionHandle])
        account.id = 8
        #expect(try answers.response(session: session("a"), account: account).headers[HomeportHeader.accountID] == "8")
        _ = try answers.response(session: session("b"), account: account)
        #expect(answers.count == 2)
        let third = try answers.response(session: session("c"), account: account)
        #expect(answers.count == 1, "full: started over")
        #expect(third.headers[HomeportHeader.sessionHandle] != moved.headers[HomeportHeader.sessionHandle])
        let again = try answers.response(session: session("a"), account: account)
        #expect(again.headers[HomeportHeader.sessionHandle] == first.headers[HomeportHeader.sessionHandle])
        #expect(again.headers[HomeportHeader.accountID] == "8" && again.body != moved.body)
    }

    @Test(
        "the API's one 401 for no token, a cookie, a token sent twice, a made-up, pre-login, ended or held one",
        arguments: Backend.allCases)
    func refusals(backend: Backend) throws {
        try withAccounts(backend, signup: .approval) { server in
            let waiting = try #require(
                try server.app(
                    "POST", "auth/signup", json: ["email": "bob@example.com", "password": "correct horse battery"]
                )
                .sessionToken)
            _ = try server.app(
                "POST", "auth/signup", json: ["email": "ada@example.com", "password": "correct horse battery"])
            #expect(try server.application.accounts.setApproval(.approved, email: "ada@example.com"))
            let token = try server.signIn("ada@example.com")
            let ended = try server.signIn("ada@example.com")
            _ = try server.app("DELETE", "auth/session", token: ended)
            let cases: [(String, [(String, String)])] = [
                ("no token", []),
                ("a cookie", [("Cookie", "homeport_session=\(token); sessionid=\(token)")]),
                ("twice", [(HomeportHeader.sessionToken, token), (HomeportHeader.sessionToken, token)]),
                ("made up", [(HomeportHeader.sessionToken, String(repeating: "x", count: 43))]),
                ("pre-login", [(HomeportHeader.sessionToken, waiting)]),
                ("ended", [(HomeportHeader.sessionToken, ended)]),
            ]
            for (name, headers) in cases {
                let answer = try forward(server, headers)
                #expect(answer.status == 401, "\(name)")
                #expect(
                    (answer.jsonObject?["error"] as? [String: Any])?["code"] as? String
                        == APIErrorCode.notAuthenticated,
                    "\(name)")
                #expect(answer.header(HomeportHeader.accountID) == nil, "\(name)")
            }
            #expect(try forward(server, [(HomeportHeader.sessionToken, token)]).status == 200)
            #expect(try server.application.accounts.setApproval(.held, email: "ada@example.com"))
            #expect(try forward(server, [(HomeportHeader.sessionToken, token)]).status == 401, "held")
        }
    }

    @Test("a logout on one replica is refused by forward auth on another within a second, whatever its cache holds")
    func logoutOnEveryReplica() throws {
        let (url, cleanUp) = try Backend.postgres.makeDatabaseURL()
        defer { cleanUp() }
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        // Entries that would live half a minute: only the replicas' announcements can refuse in time.
        let replicas = try ServerProcess.replicas(
            2, database: url.rawText, outbox: scratch.file("outbox"), ["--session-cache-seconds", "30"])
        defer { replicas.forEach { _ = $0.stop() } }
        let signup = try RawHTTP.request(
            port: replicas[0].port, method: "POST", path: AllauthAppPath.base + "/" + AllauthAppPath.signup,
            headers: [("Content-Type", "application/json")],
            body: Data(#"{"email":"ada@example.com","password":"correct horse battery"}"#.utf8))
        let token = try #require(signup.sessionToken)
        let ask = { (port: Int) in
            try RawHTTP.request(
                port: port, path: HomeportPath.authForward, headers: [(HomeportHeader.sessionToken, token)]
            ).status
        }
        #expect(try ask(replicas[1].port) == 200, "the other replica knows the session, and caches it")
        let logout = try RawHTTP.request(
            port: replicas[0].port, method: "DELETE", path: AllauthAppPath.base + "/" + AllauthAppPath.session,
            headers: [(HomeportHeader.sessionToken, token)])
        #expect(logout.status == 401)
        let loggedOut = ContinuousClock.now
        while try ask(replicas[1].port) == 200 {
            guard ContinuousClock.now - loggedOut < .seconds(1) else {
                Issue.record(
                    "forward auth on the other replica still let the session through a second after the logout")
                return
            }
            usleep(5_000)
        }
    }
}
