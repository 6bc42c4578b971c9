import Foundation
import HomeportTestSupport
import Testing

/// One client-side flow, run step by step against a real django-allauth headless server and
/// against homeport-server; both must answer each step with the same status and envelope.
@Suite("Interop with django-allauth headless")
struct AllauthInteropTests {
    /// Envelope members that differ on purpose (see docs/allauth-differences.md).
    static let deliberateDifferences: Set<String> = ["data.user.username"]

    struct Step {
        var name: String
        var method: String
        var path: String
        var token: Token = .none
        var json: [String: Any]?
    }

    enum Token {
        case none, current, previous, bogus
    }

    static let email = "interop@example.com"
    static var steps: [Step] {
        [
            Step(name: "config", method: "GET", path: "config"),
            Step(name: "session, anonymous", method: "GET", path: "auth/session"),
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
                name: "login, wrong password", method: "POST", path: "auth/login",
                json: ["email": email, "password": "not the password"]),
            Step(name: "login, missing field", method: "POST", path: "auth/login", json: ["email": email]),
            Step(
                name: "login while signed in", method: "POST", path: "auth/login", token: .current,
                json: ["email": email, "password": "first good password"]),
            Step(
                name: "login", method: "POST", path: "auth/login",
                json: ["email": email, "password": "first good password"]),
            Step(
                name: "password change, wrong current", method: "POST", path: "account/password/change",
                token: .current,
                json: ["current_password": "wrong current pw", "new_password": "second good password"]),
            Step(
                name: "password change", method: "POST", path: "account/password/change", token: .current,
                json: ["current_password": "first good password", "new_password": "second good password"]),
            Step(name: "session, rotated-out token", method: "GET", path: "auth/session", token: .previous),
            Step(name: "session, new token", method: "GET", path: "auth/session", token: .current),
            Step(name: "logout", method: "DELETE", path: "auth/session", token: .current),
            Step(name: "session, signed-out token", method: "GET", path: "auth/session", token: .current),
            Step(name: "session, invalid token", method: "GET", path: "auth/session", token: .bogus),
            Step(
                name: "password change, anonymous", method: "POST", path: "account/password/change",
                json: ["current_password": "a", "new_password": "second good password"]),
            Step(name: "reset request, known", method: "POST", path: "auth/password/request", json: ["email": email]),
            Step(
                name: "reset request, unknown", method: "POST", path: "auth/password/request",
                json: ["email": "nobody@example.com"]),
            Step(
                name: "reset request, not an address", method: "POST", path: "auth/password/request",
                json: ["email": "nope"]),
            Step(
                name: "reset key, invalid", method: "POST", path: "auth/password/reset",
                json: ["key": "bogus", "password": "third good password"]),
        ]
    }

    /// Runs the flow against a server and returns, per step, the status and the envelope's shape.
    static func transcript(port: Int) throws -> [(step: String, status: Int, shape: Set<String>)] {
        var current: String?
        var previous: String?
        var result: [(String, Int, Set<String>)] = []
        for step in steps {
            var headers: [(String, String)] = []
            let token: String? =
                switch step.token {
                case .none: nil
                case .current: current
                case .previous: previous
                case .bogus: "this-token-was-never-issued"
                }
            if let token { headers.append(("X-Session-Token", token)) }
            var body: Data?
            if let json = step.json {
                headers.append(("Content-Type", "application/json"))
                body = try JSONSerialization.data(withJSONObject: json)
            }
            let response = try RawHTTP.request(
                port: port, method: step.method, path: "/_allauth/app/v1/" + step.path, headers: headers, body: body)
            if let issued = response.sessionToken {
                previous = current
                current = issued
            }
            let object = try JSONSerialization.jsonObject(with: response.body)
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
                "status", "errors[].code", "errors[].param", "data.flows[].id", "meta.is_authenticated",
                "data.account.is_open_for_signup", "data.account.login_methods[]", "data.methods[].method",
            ]
            if meaningful.contains(path) { result.insert("\(path)=\(value is NSNull ? "null" : "\(value)")") }
        }
        return result
    }

    @Test("the app-client flow answers alike on django-allauth and on homeport-server")
    func sameAnswers() throws {
        let allauth = try AllauthPeer()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let homeport = try ServerProcess(serve: [
            "--database", "sqlite:" + directory.file("h.sqlite"), "--signup", "open", "--password-iterations", "1000",
            "--outbox", directory.file("outbox"),
        ])
        let reference = try Self.transcript(port: allauth.port)
        let ours = try Self.transcript(port: homeport.port)
        #expect(reference.count == Self.steps.count && ours.count == Self.steps.count)
        for (theirs, mine) in zip(reference, ours) {
            #expect(mine.status == theirs.status, "\(mine.step): status \(mine.status), allauth \(theirs.status)")
            #expect(
                mine.shape == theirs.shape,
                "\(mine.step): only homeport \(mine.shape.subtracting(theirs.shape).sorted()), only allauth \(theirs.shape.subtracting(mine.shape).sorted())"
            )
        }
        #expect(homeport.stop() == 0)
    }
}
