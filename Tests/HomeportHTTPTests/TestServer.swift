import Foundation
import HomeportHTTP
import HomeportLogging
import HomeportTestSupport

/// Runs an in-process HTTPServer on a free loopback port for the duration of `body`.
func withServer<T>(
    _ router: Router, configuration: HTTPServerConfiguration = HTTPServerConfiguration(port: 0, workerThreads: 2),
    log: MemoryLogSink = MemoryLogSink(), _ body: (HTTPServer) throws -> T
) throws -> T {
    var configuration = configuration
    configuration.port = 0
    let server = HTTPServer(
        configuration: configuration, router: router, logger: Logger(label: "test", sink: log))
    try server.start()
    defer { server.shutdown() }
    return try body(server)
}

/// A router with a few routes for exercising the HTTP layer.
func sampleRouter() -> Router {
    var router = Router()
    router.get("/hello") { _ in try .json(["greeting": "hello"]) }
    router.post("/echo") { request in try .json(["bytes": request.body.count]) }
    router.get("/users/:id") { request in try .json(["id": request.pathParameters["id"] ?? ""]) }
    router.get("/fail") { _ in throw SampleFailure() }
    router.get("/teapot") { _ in throw HTTPError(status: 418, code: "teapot", message: "I am a teapot.") }
    return router
}

struct SampleFailure: Error, CustomStringConvertible {
    var description: String { "sample failure with internal detail" }
}
