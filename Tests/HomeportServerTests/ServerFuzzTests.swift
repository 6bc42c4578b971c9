import Foundation
import HomeportTestSupport
import HomeportWire
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A real `homeport-server` on SQLite with two accounts: one whose token the fuzzed requests
/// carry, one the health checks sign in with.
private final class FuzzTarget: @unchecked Sendable {
    let directory: TemporaryDirectory
    let server: ServerProcess
    let token: String
    /// The token the session route's requests carry: a mutation into `DELETE` signs it out,
    /// and only it.
    let sessionToken: String
    let failures = LockedList<String>()
    /// Answers seen, by status: a run that saw few answers tested little.
    let statuses = Mutex<[Int: Int]>([:])

    init() throws {
        directory = try TemporaryDirectory()
        server = try ServerProcess(serve: [
            "--database", "sqlite:" + directory.file("fuzz.sqlite"), "--signup", "open", "--password-iterations",
            "1000",
            "--outbox", directory.file("outbox"), "--log-level", "error", "--workers", "2",
            "--rate-limits",
            "login-per-address=1000000/60,failed-login-per-address=1000000/60,signup-per-address=1000000/60,"
                + "failed-login-per-account=1000000/60,reset-per-address=1000000/60,reset-per-email=1000000/60,"
                + "failed-password-change-per-session=1000000/60,password-change-per-account=1000000/60,"
                + "push-test-per-account=1000000/60,push-changes-per-account=1000000/60",
        ])
        token = try Self.signIn(server.port, "fuzz@example.com")
        sessionToken = try Self.signIn(server.port, "session@example.com")
        _ = try Self.signIn(server.port, "health@example.com")
    }

    deinit { directory.remove() }

    static func signIn(_ port: Int, _ email: String) throws -> String {
        let body = Data(#"{"email":"\#(email)","password":"correct horse battery"}"#.utf8)
        for path in ["auth/signup", "auth/login"] {
            let response = try RawHTTP.request(
                port: port, method: "POST", path: AllauthAppPath.base + "/" + path,
                headers: [("Content-Type", "application/json")], body: body, timeout: 2)
            if let token = (response.jsonObject?["meta"] as? [String: Any])?["session_token"] as? String {
                return token
            }
        }
        throw RawHTTPError("could not sign in \(email)")
    }

    /// A valid identity request and a sign-in → app-info flow, each answered within 2 s.
    func healthCheck(_ when: String) {
        guard server.isRunning else {
            failures.append("the server died \(when); stderr: \(server.standardError.suffix(2000))")
            return
        }
        do {
            let identity = try RawHTTP.request(port: server.port, path: HomeportPath.serverIdentity, timeout: 2)
            if identity.status != 200 { failures.append("identity answered \(identity.status) \(when)") }
            let token = try Self.signIn(server.port, "health@example.com")
            let info = try RawHTTP.request(
                port: server.port, path: HomeportPath.appInfo, headers: [("X-Session-Token", token)], timeout: 2)
            if info.status != 200 { failures.append("app-info answered \(info.status) \(when)") }
        } catch {
            failures.append("a valid request was not answered within 2 s \(when): \(error)")
        }
    }

    /// Sends `bytes` on a new connection from `source`; a 5xx that is not 501 or 505 is a failure.
    func send(_ bytes: [UInt8], from source: String, describing: () -> String) -> RawResponse? {
        guard let fd = try? RawHTTP.connect(port: server.port, source: source, timeout: 0.1) else { return nil }
        defer { close(fd) }
        RawHTTP.send(fd, bytes)
        guard let response = try? RawHTTP.readResponse(fd) else { return nil }
        statuses.withLock { $0[response.status, default: 0] += 1 }
        // 501 (a transfer coding not read) and 505 (an HTTP version not served) are answers, not failures.
        if response.status >= 500 && ![501, 505].contains(response.status) {
            failures.append("\(response.status) for \(describing())")
        }
        return response
    }
}

/// The bytes of a request as printable text, shortened.
private func printable(_ bytes: [UInt8]) -> String {
    String(String(decoding: bytes.prefix(300), as: UTF8.self).debugDescription.prefix(400))
}

@Suite("Fuzzing a real server: no crash, no 5xx, valid requests always answered", .serialized, .tags(.process))
struct ServerFuzzTests {
    /// Every route, well formed, as the fuzzer's starting points.
    private static func templates(token: String, sessionToken: String) -> [RequestTemplate] {
        let json = [(name: "Content-Type", value: "application/json")]
        let auth = [(name: "X-Session-Token", value: token)]
        let form = [(name: "Content-Type", value: "application/x-www-form-urlencoded")]
        let app = AllauthAppPath.base + "/"
        let credentials = Array(#"{"email":"fuzz@example.com","password":"correct horse battery"}"#.utf8)
        return [
            RequestTemplate("GET", HomeportPath.serverIdentity),
            RequestTemplate("GET", "/healthz"),
            RequestTemplate("GET", HomeportPath.appInfo, headers: auth),
            RequestTemplate("GET", HomeportPath.authStanding, headers: auth),
            RequestTemplate("GET", app + AllauthAppPath.config),
            RequestTemplate("POST", app + AllauthAppPath.signup, headers: json, body: credentials),
            RequestTemplate("POST", app + AllauthAppPath.login, headers: json, body: credentials),
            RequestTemplate("GET", app + AllauthAppPath.session, headers: [("X-Session-Token", sessionToken)]),
            RequestTemplate(
                "POST", app + AllauthAppPath.passwordChange, headers: json + auth,
                body: Array(#"{"current_password":"x","new_password":"correct horse battery"}"#.utf8)),
            RequestTemplate(
                "POST", app + AllauthAppPath.passwordResetRequest, headers: json,
                body: Array(#"{"email":"fuzz@example.com"}"#.utf8)),
            RequestTemplate(
                "GET", app + AllauthAppPath.passwordReset, headers: [("X-Password-Reset-Key", "abc")]),
            RequestTemplate(
                "POST", app + AllauthAppPath.passwordReset, headers: json,
                body: Array(#"{"key":"abc","password":"correct horse battery"}"#.utf8)),
            RequestTemplate(
                "POST", HomeportPath.pushDevices, headers: json + auth,
                body: Array(#"{"token":"\#(String(repeating: "ab", count: 32))","environment":"sandbox"}"#.utf8)),
            RequestTemplate(
                "DELETE", HomeportPath.pushDevices + "/" + String(repeating: "ab", count: 32), headers: auth),
            RequestTemplate("POST", HomeportPath.pushTest, headers: auth),
            RequestTemplate("GET", HomeportPath.notificationsCatalogue, headers: auth),
            RequestTemplate("GET", HomeportPath.notificationsMutes, headers: auth),
            RequestTemplate("PUT", HomeportPath.notificationsMutes + "/thread-1", headers: auth),
            RequestTemplate("DELETE", HomeportPath.notificationsMutes + "/thread-1", headers: auth),
            RequestTemplate("GET", "/account"),
            RequestTemplate("GET", "/account/login"),
            RequestTemplate(
                "POST", "/account/login", headers: form + [("Cookie", "homeport_csrf=abc"), ("Origin", "http://fuzz")],
                body: Array("email=fuzz%40example.com&password=correct+horse+battery&csrf_token=abc".utf8)),
            RequestTemplate(
                "POST", "/account/signup", headers: form, body: Array("email=a%40b.c&password=x&website=".utf8)),
            RequestTemplate("POST", "/account/logout", headers: form),
            RequestTemplate("GET", "/account/password/reset/key/abc"),
            RequestTemplate("POST", "/account/password/reset", headers: form, body: Array("email=a%40b.c".utf8)),
        ]
    }

    @Test("mutated requests to every route: request line, headers, lengths, chunking, bytes")
    func mutatedRequests() throws {
        let seed = FuzzRun.seed
        let total = FuzzRun.requests(default: 3000)
        let target = try FuzzTarget()
        let templates = Self.templates(token: target.token, sessionToken: target.sessionToken)
        let lanes = 32
        let batch = 400
        var sent = 0
        while sent < total {
            let count = min(batch, total - sent)
            let first = sent
            DispatchQueue.concurrentPerform(iterations: lanes) { lane in
                var fuzzer = RequestFuzzer(seed: seed &+ UInt64(first) &+ UInt64(lane))
                for index in stride(from: lane, to: count, by: lanes) {
                    let template = templates[(first + index) % templates.count]
                    let bytes = fuzzer.mutate(template)
                    _ = target.send(bytes, from: "127.0.0.\(2 + lane)") { printable(bytes) }
                }
            }
            sent += count
            target.healthCheck("after \(sent) requests")
        }
        #expect(
            target.failures.all.isEmpty,
            "seed \(seed) (HOMEPORT_FUZZ_SEED replays it): \(target.failures.all.prefix(10))")
        let statuses = target.statuses.withLock { $0 }
        let answered = statuses.values.reduce(0, +)
        #expect(answered * 3 > total, "only \(answered) of \(total) requests were answered (seed \(seed)): \(statuses)")
        #expect(Set(statuses.keys).isSuperset(of: [200, 400, 401]), "statuses seen (seed \(seed)): \(statuses)")
        #expect(target.server.stop() == 0, "exits cleanly after \(total) requests (seed \(seed))")
    }

    @Test("structure-aware JSON bodies to every JSON endpoint: types, fields, sizes, nesting")
    func jsonBodies() throws {
        let seed = FuzzRun.seed
        let total = FuzzRun.requests(default: 1500)
        let target = try FuzzTarget()
        let app = AllauthAppPath.base + "/"
        let email = #""fuzz@example.com""#
        let password = #""correct horse battery""#
        let endpoints: [(method: String, path: String, token: Bool, fields: [(name: String, json: String)])] = [
            ("POST", app + AllauthAppPath.signup, false, [("email", email), ("password", password)]),
            ("POST", app + AllauthAppPath.login, false, [("email", email), ("password", password)]),
            (
                "POST", app + AllauthAppPath.passwordChange, true,
                [("current_password", password), ("new_password", password)]
            ),
            ("POST", app + AllauthAppPath.passwordResetRequest, false, [("email", email)]),
            ("POST", app + AllauthAppPath.passwordReset, false, [("key", #""abc""#), ("password", password)]),
            (
                "POST", HomeportPath.pushDevices, true,
                [("token", "\"" + String(repeating: "ab", count: 32) + "\""), ("environment", #""sandbox""#)]
            ),
            ("POST", HomeportPath.pushTest, true, []),
            ("PUT", HomeportPath.notificationsMutes + "/thread-1", true, []),
        ]
        let lanes = 8
        let perEndpoint = max(1, total / endpoints.count)
        for (number, endpoint) in endpoints.enumerated() {
            // Each endpoint's own account: a password change that succeeds ends its session, and the
            // endpoints after it would otherwise see only 401s.
            let token = try FuzzTarget.signIn(target.server.port, "fuzz-\(number)@example.com")
            let signedIn = Mutex(0)
            DispatchQueue.concurrentPerform(iterations: lanes) { lane in
                var fuzzer = JSONFuzzer(seed: seed &+ UInt64(number * lanes + lane))
                for _ in stride(from: lane, to: perEndpoint, by: lanes) {
                    let body = fuzzer.body(from: endpoint.fields)
                    var head = "\(endpoint.method) \(endpoint.path) HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n"
                    head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n"
                    if endpoint.token { head += "X-Session-Token: \(token)\r\n" }
                    let request = Array((head + "\r\n").utf8) + body
                    guard
                        let response = target.send(
                            request, from: "127.0.0.\(20 + lane)", describing: { printable(request) })
                    else { continue }
                    if ![401, 410].contains(response.status) { signedIn.withLock { $0 += 1 } }
                    // A 204 (a mute set) has no body to be JSON; every other answer is JSON.
                    if response.status == 204 {
                        if !response.body.isEmpty || response.header("Content-Type") != nil {
                            target.failures.append("204 with a body for \(printable(request))")
                        }
                    } else if !(response.header("Content-Type") ?? "").contains("json") {
                        target.failures.append("\(response.status) without JSON for \(printable(request))")
                    }
                }
            }
            target.healthCheck("after \(endpoint.path)")
            if endpoint.token {
                #expect(
                    signedIn.withLock { $0 } > 0, "\(endpoint.path) never answered a signed-in request (seed \(seed))")
            }
        }
        #expect(
            target.failures.all.isEmpty,
            "seed \(seed) (HOMEPORT_FUZZ_SEED replays it): \(target.failures.all.prefix(10))")
        #expect(target.server.stop() == 0, "exits cleanly (seed \(seed))")
    }
}
