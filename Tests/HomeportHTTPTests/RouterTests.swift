import HomeportHTTP
import Testing

@Suite("Router")
struct RouterTests {
    @Test("exact paths, parameters, 404 and 405 with the allowed methods")
    func resolution() throws {
        let router = sampleRouter()
        guard case .handler(_, let parameters) = router.resolve(.get, "/users/42") else {
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

    @Test("everything under a secret prefix is logged masked, whatever the outcome or the spelling")
    func secretPrefixesAreMasked() {
        var router = TestRouter()
        router.get("/reset/key/:key") { _, _ in HTTPResponse(status: 200) }
        router.get("/users/:id") { _, _ in HTTPResponse(status: 200) }
        router.logsSecrets(under: "/reset/key")
        for path in [
            "/reset/key/s3cr3t", "/reset/key/s3cr3t/", "/reset/key//s3cr3t", "/reset//key/s3cr3t",
            "/Reset/KEY/s3cr3t", "/reset/./key/s3cr3t", "/reset/key/s3cr3t/more",
        ] {
            #expect(router.respond(to: HTTPRequest(method: .get, path: path)).loggedPath == "/reset/key/***", "\(path)")
            #expect(router.respond(to: HTTPRequest(method: .put, path: path)).loggedPath == "/reset/key/***", "\(path)")
        }
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/users/7")).loggedPath == "/users/7")
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/nowhere")).loggedPath == "/nowhere")
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/reset/keys")).loggedPath == "/reset/keys")
    }

    /// Marks every answer of its group with a header, or refuses without `X-Key: open`.
    struct Stamp: HTTPMiddleware {
        let name: String
        var requiresKey = false

        func handle(
            _ request: HTTPRequest, context: EmptyRequestContext,
            next: (HTTPRequest, EmptyRequestContext) throws -> HTTPResponse
        ) throws -> HTTPResponse {
            if requiresKey && request.headers["X-Key"] != "open" {
                throw HTTPError(status: 401, code: "locked", message: "Locked.")
            }
            var response = try next(request, context)
            response.headers.add("X-Stamp", name)
            return response
        }
    }

    @Test("a group's middleware covers every route under its prefix, however the route is added")
    func groupsCoverTheirPrefix() {
        var router = TestRouter()
        router.group("/api", middleware: [Stamp(name: "api", requiresKey: true)]) { api in
            api.get("/declared") { _, _ in HTTPResponse(status: 200) }
        }
        router.group("/api/public", middleware: [Stamp(name: "public")])
        // Added later, straight on the router, without a word about the group: still inside it.
        router.get("/api/forgotten/:id") { _, _ in HTTPResponse(status: 200) }
        router.get("/api/public") { _, _ in HTTPResponse(status: 200) }
        router.get("/apis") { _, _ in HTTPResponse(status: 200) }
        let locked = { (path: String) in router.respond(to: HTTPRequest(method: .get, path: path)).response }
        let opened = { (path: String) in
            router.respond(to: HTTPRequest(method: .get, path: path, headers: ["X-Key": "open"])).response
        }
        for path in ["/api/declared", "/api/forgotten/7"] {
            #expect(locked(path).status == 401, "\(path)")
            #expect(opened(path).status == 200 && opened(path).headers.values("X-Stamp") == ["api"], "\(path)")
        }
        #expect(locked("/api/public").status == 200, "the longer prefix wins, with only its own middleware")
        #expect(locked("/api/public").headers.values("X-Stamp") == ["public"])
        #expect(locked("/apis").headers.values("X-Stamp").isEmpty, "a prefix matches whole segments")
    }

    @Test("declaring a group after routes it would cover is a programming error that stops at start")
    func lateGroupTraps() async {
        await #expect(processExitsWith: .failure) {
            var router = Router<EmptyRequestContext>()
            router.get("/api/early") { _, _ in HTTPResponse(status: 200) }
            router.group("/api", middleware: [])
        }
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
