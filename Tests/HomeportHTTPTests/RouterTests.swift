import HomeportHTTP
import Testing

@Suite("Router")
struct RouterTests {
    @Test("exact paths, parameters, 404 and 405 with the allowed methods")
    func resolution() throws {
        let router = sampleRouter()
        guard case .handler(_, let parameters, _) = router.resolve(.get, "/users/42") else {
            Issue.record("/users/42 did not resolve")
            return
        }
        #expect(parameters == ["id": "42"])
        guard case .notFound = router.resolve(.get, "/users/42/extra") else {
            Issue.record("a longer path must not match")
            return
        }
        guard case .notFound = router.resolve(.get, "/users/") else {
            Issue.record("an empty parameter must not match")
            return
        }
        guard case .methodNotAllowed(let allowed) = router.resolve(.delete, "/hello") else {
            Issue.record("DELETE /hello must be 405")
            return
        }
        #expect(allowed == [.get, .head])
        guard case .handler = router.resolve(.head, "/hello") else {
            Issue.record("HEAD must use the GET handler")
            return
        }
        guard case .notFound = router.resolve(.get, "/hello/") else {
            Issue.record("a trailing slash is another path")
            return
        }
    }

    @Test("a failing handler answers 500 without its detail; HTTPError keeps its status")
    func errorsBecomeJSON() throws {
        let router = sampleRouter()
        let answer = router.respond(to: HTTPRequest(method: .get, path: "/fail"))
        let failed = answer.response
        #expect(failed.status == 500)
        #expect(answer.failure != nil)
        #expect(!String(decoding: failed.body, as: UTF8.self).contains("internal detail"))
        let teapot = router.respond(to: HTTPRequest(method: .get, path: "/teapot")).response
        #expect(teapot.status == 418)
        #expect(
            String(decoding: teapot.body, as: UTF8.self) == #"{"error":{"code":"teapot","message":"I am a teapot."}}"#)
    }

    @Test("a route with secret parameters is logged by its pattern, others by their path")
    func secretParametersAreNotLogged() {
        var router = Router()
        router.get("/reset/:key", secretParameters: true) { _ in HTTPResponse(status: 200) }
        router.get("/users/:id") { _ in HTTPResponse(status: 200) }
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/reset/s3cr3t")).loggedPath == "/reset/:key")
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/users/7")).loggedPath == "/users/7")
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/nowhere")).loggedPath == "/nowhere")
    }

    @Test("listen addresses parse HOST:PORT and bracketed IPv6, and refuse the rest")
    func listenAddresses() throws {
        #expect(try ListenAddress(parsing: "127.0.0.1:8080") == ListenAddress(host: "127.0.0.1", port: 8080))
        #expect(try ListenAddress(parsing: "[::1]:0") == ListenAddress(host: "::1", port: 0))
        #expect(try ListenAddress(parsing: "localhost:9") == ListenAddress(host: "localhost", port: 9))
        for bad in ["8080", "::1:80", "[::1]", "host:", ":80", "host:70000", "host:-1", "[::1]80", "host:http"] {
            #expect(throws: ListenAddressError.self, "\(bad)") { try ListenAddress(parsing: bad) }
        }
    }
}
