import Foundation
import HomeportHTTP
import HomeportLogging
import HomeportTestSupport

/// Runs an in-process HTTPServer on a free loopback port for the duration of `body`.
func withServer<T>(
    _ router: TestRouter, configuration: HTTPServerConfiguration = HTTPServerConfiguration(port: 0, workerThreads: 2),
    log: MemoryLogSink = MemoryLogSink(), _ body: (HTTPServer) throws -> T
) throws -> T {
    var configuration = configuration
    configuration.port = 0
    let server = HTTPServer(
        configuration: configuration, responder: router, logger: Logger(label: "test", sink: log))
    try server.start()
    defer { server.shutdown() }
    return try body(server)
}

/// The router of the HTTP layer's tests: handlers need no context.
typealias TestRouter = Router<EmptyRequestContext>

/// A router with a few routes for exercising the HTTP layer.
func sampleRouter() -> TestRouter {
    var router = TestRouter()
    router.get("/hello") { _, _ in try .json(["greeting": "hello"]) }
    router.post("/echo") { request, _ in try .json(["bytes": request.body.count]) }
    router.get("/users/:id") { request, _ in try .json(["id": request.pathParameters["id"] ?? ""]) }
    router.get("/fail") { _, _ in throw SampleFailure() }
    router.get("/teapot") { _, _ in throw HTTPError(status: 418, code: "teapot", message: "I am a teapot.") }
    return router
}

struct SampleFailure: Error, CustomStringConvertible {
    var description: String { "sample failure with internal detail" }
}
