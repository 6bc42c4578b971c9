import Foundation
import HomeportHTTP
import HomeportServer
import HomeportTestSupport
import HomeportWire
import Testing

@Suite(
    "Password hashing runs on its own threads: the server answers everyone else meanwhile", .tags(.postgres, .browser))
struct PasswordPoolTests {
    /// Sends `request` on another thread; its answer arrives through the returned box.
    private func inBackground(_ request: @escaping @Sendable () throws -> RawResponse) -> (
        DispatchSemaphore, LockedBox<Result<RawResponse, any Error>?>
    ) {
        let done = DispatchSemaphore(value: 0)
        let result = LockedBox<Result<RawResponse, any Error>?>(nil)
        Thread.detachNewThread {
            result.value = Result { try request() }
            done.signal()
        }
        return (done, result)
    }

    @Test(
        "with one worker thread, identity and app-info answer while each password route's hash is held",
        arguments: Backend.allCases)
    func everyPasswordRouteIsOffloaded(backend: Backend) throws {
        let hasher = GatedHasher()
        try withAccounts(backend, hasher: hasher, workerThreads: 1, poolThreads: 1) { server in
            let token = try server.signIn("ada@example.com")
            // A bystander's token: no route below touches this account.
            let bystander = try server.signIn("zed@example.com")
            let port = server.port
            let browser = Browser(port: port)
            _ = try browser.get("/account/signup")
            let formToken = browser.formToken ?? ""
            let cookies = browser.cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")

            func form(_ path: String, _ body: String) -> @Sendable () throws -> RawResponse {
                {
                    try RawHTTP.request(
                        port: port, method: "POST", path: path,
                        headers: [
                            ("Cookie", cookies), ("Origin", "http://127.0.0.1:\(port)"),
                            ("Content-Type", "application/x-www-form-urlencoded"),
                        ], body: Data((body + "&csrf_token=" + formToken).utf8))
                }
            }
            func json(_ path: String, _ fields: [String: String], token: String? = nil)
                -> @Sendable () throws
                -> RawResponse
            {
                let body = (try? JSONSerialization.data(withJSONObject: fields)) ?? Data()
                return {
                    try RawHTTP.request(
                        port: port, method: "POST", path: "/_allauth/app/v1/" + path,
                        headers: [("Content-Type", "application/json")]
                            + (token.map { [("X-Session-Token", $0)] } ?? []),
                        body: body)
                }
            }
            func whileHeld(_ name: String, _ send: @escaping @Sendable () throws -> RawResponse) throws -> Int {
                hasher.arm(hashes: true)
                let (done, result) = inBackground(send)
                let held = hasher.waitUntilHeld(timeout: 10)
                #expect(held, "\(name) reached the hash")
                // The one worker thread is free to answer others while the hash is held. (The
                // gate opens whatever they answer, so that a failure cannot hang the test.)
                let identity = Result { try RawHTTP.request(port: port, path: HomeportPath.serverIdentity, timeout: 3) }
                let appInfo = Result {
                    try RawHTTP.request(
                        port: port, path: HomeportPath.appInfo, headers: [("X-Session-Token", bystander)], timeout: 3)
                }
                if held { hasher.open() }
                #expect((try? identity.get().status) == 200, "identity during \(name)")
                #expect((try? appInfo.get().status) == 200, "app-info during \(name)")
                #expect(done.wait(timeout: .now() + 10) == .success, "\(name) finished")
                guard let answer = result.value else { throw RawHTTPError("\(name) left no answer") }
                return try answer.get().status
            }
            func resetKey() throws -> String {
                _ = try server.app("POST", "auth/password/request", json: ["email": "ada@example.com"])
                return try #require(server.mailer.resetKey(for: "ada@example.com"))
            }
            let good = "correct horse battery"
            let goodForm = "correct+horse+battery"
            #expect(
                try whileHeld("app signup", json("auth/signup", ["email": "bo@example.com", "password": good])) == 200)
            #expect(
                try whileHeld("app login", json("auth/login", ["email": "ada@example.com", "password": good])) == 200)
            let change = json(
                "account/password/change", ["current_password": good, "new_password": "another good password"],
                token: token)
            #expect(try whileHeld("app password change", change) == 200)
            #expect(
                try whileHeld(
                    "web signup", form("/account/signup", "email=cy%40example.com&password=\(goodForm)&website="))
                    == 303)
            #expect(
                try whileHeld("web login", form("/account/login", "email=bo%40example.com&password=\(goodForm)")) == 303
            )
            let webKey = try resetKey()
            #expect(
                try whileHeld("web reset", form("/account/password/reset/key/\(webKey)", "password=a+third+password"))
                    == 200)
            let appKey = try resetKey()
            let reset = try whileHeld(
                "app reset", json("auth/password/reset", ["key": appKey, "password": "a fourth password"]))
            #expect([200, 401].contains(reset))
        }
    }
}
